// Naming devices, and choosing the implementation a DeviceSpec names.
#include <string>

#include "copy/device.h"

namespace stoke {
namespace internal {

StatusOr<std::unique_ptr<Device>> MakeDevice(const DeviceSpec& spec) {
  if (spec.kind == DeviceKind::kCpu) return MakeHostDevice();
  return MakeCudaDevice(spec.index);
}

}  // namespace internal

StatusOr<DeviceSpec> ParseDevice(std::string_view text) {
  if (text == "cpu") return DeviceSpec{};
  if (text == "cuda") return DeviceSpec{DeviceKind::kCuda, 0};
  if (text.starts_with("cuda:") && text.size() > 5 && text.size() <= 9) {
    int index = 0;
    for (char c : text.substr(5)) {
      if (c < '0' || c > '9') index = -1;
      if (index < 0) break;
      index = index * 10 + (c - '0');
    }
    if (index >= 0) return DeviceSpec{DeviceKind::kCuda, index};
  }
  return InvalidArgumentError("device '" + std::string(text) +
                              "' is not one of cpu, cuda, cuda:N (N a device ordinal)");
}

std::string DeviceName(const DeviceSpec& device) {
  if (device.kind == DeviceKind::kCpu) return "cpu";
  return "cuda:" + std::to_string(device.index);
}

}  // namespace stoke

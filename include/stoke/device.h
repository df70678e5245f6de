// stoke/device.h: where a loader's batches are delivered.
//
// A DeviceSpec names a device as PyTorch does: "cpu" (the host: batches stay in
// the loader's ring slots) or "cuda" / "cuda:N" (batches are copied to GPU N on
// a copy stream of the loader's own; see LoaderOptions::device). Parsing needs no
// GPU; whether the device exists is checked by Loader::Open.
//
// cudaStream_t is CUstream_st*; it is declared here so that this header needs no
// CUDA header and a program without CUDA can include it.
//
//   auto device = stoke::ParseDevice("cuda:1");   // {kCuda, 1}
#ifndef STOKE_DEVICE_H_
#define STOKE_DEVICE_H_

#include <string>
#include <string_view>

#include "stoke/status.h"

struct CUstream_st;

namespace stoke {

enum class DeviceKind { kCpu, kCuda };

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;  // kCuda: the CUDA device ordinal
  friend bool operator==(const DeviceSpec& a, const DeviceSpec& b) {
    return a.kind == b.kind && a.index == b.index;
  }
  friend bool operator!=(const DeviceSpec& a, const DeviceSpec& b) { return !(a == b); }
};

// "cpu", "cuda" (device 0) or "cuda:N". InvalidArgument naming `text` otherwise.
StatusOr<DeviceSpec> ParseDevice(std::string_view text);
// "cpu" or "cuda:N".
std::string DeviceName(const DeviceSpec& device);

// CUDA devices visible to this process: 0 without a GPU, or in a build without
// CUDA. Never fails.
int CudaDeviceCount();

}  // namespace stoke

#endif  // STOKE_DEVICE_H_

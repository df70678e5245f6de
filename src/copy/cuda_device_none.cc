// A build without CUDA: no CUDA device exists.
#include "copy/device.h"

namespace stoke::internal {

StatusOr<std::unique_ptr<Device>> MakeCudaDevice(int index) {
  return UnavailableError("CUDA device " + std::to_string(index) +
                          ": stoke was built without CUDA (STOKE_WITH_CUDA=OFF)");
}

}  // namespace stoke::internal

namespace stoke {

int CudaDeviceCount() { return 0; }

}  // namespace stoke

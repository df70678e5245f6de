// With CUDA: cudaHostAlloc. Compiled only when STOKE_WITH_CUDA is on.
#include "cuda/pinned_memory.h"

#include <cuda_runtime_api.h>

#include <string>

#include "cuda/cuda_status.h"

namespace stoke::internal {
namespace {

class CudaPinnedMemory final : public HostMemory {
 public:
  StatusOr<std::byte*> Allocate(size_t bytes) override {
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (e != cudaSuccess) {
      return CudaError(("cudaHostAlloc(" + std::to_string(bytes) + " bytes)").c_str(), e, __FILE__,
                       __LINE__);
    }
    return static_cast<std::byte*>(p);
  }
  void Free(std::byte* p, size_t) override { cudaFreeHost(p); }
};

}  // namespace

StatusOr<HostMemory*> PinnedHostMemory() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || devices == 0) {
    // No GPU, or no driver: said as every other path says it (the native
    // error stays in the message, for whoever has a GPU and sees this).
    return UnavailableError(
        "pinned memory needs a visible CUDA device, and no CUDA device is visible "
        "(CUDA_VISIBLE_DEVICES, driver, or no GPU)" +
        (e == cudaSuccess ? std::string()
                          : std::string("; cudaGetDeviceCount: ") + cudaGetErrorName(e)));
  }
  if (e != cudaSuccess) {
    return UnavailableError("pinned memory needs a visible CUDA device: " +
                            CudaError("cudaGetDeviceCount", e, __FILE__, __LINE__).message());
  }
  // Never destroyed: a loader destroyed during static destruction (a global,
  // an atexit path) still frees its slots through it (as AlignedHostMemory).
  static CudaPinnedMemory* const memory = new CudaPinnedMemory;
  return static_cast<HostMemory*>(memory);
}

bool IsPinned(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

}  // namespace stoke::internal

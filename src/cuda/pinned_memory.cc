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
  if (e != cudaSuccess) {
    return UnavailableError("pinned memory needs a visible CUDA device: " +
                            CudaError("cudaGetDeviceCount", e, __FILE__, __LINE__).message());
  }
  if (devices == 0)
    return UnavailableError("pinned memory needs a visible CUDA device: none found");
  static CudaPinnedMemory memory;
  return static_cast<HostMemory*>(&memory);
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

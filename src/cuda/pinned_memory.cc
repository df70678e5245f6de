// With CUDA: cudaHostAlloc. Compiled only when STOKE_WITH_CUDA is on.
#include "cuda/pinned_memory.h"

#include <cuda_runtime_api.h>

#include <string>

namespace stoke::internal {
namespace {

std::string CudaMessage(const char* call, cudaError_t e, const char* file, int line) {
  return std::string(call) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") at " +
         file + ":" + std::to_string(line);
}

#define STOKE_CUDA_MESSAGE(call, e) CudaMessage(call, e, __FILE__, __LINE__)

class CudaPinnedMemory final : public HostMemory {
 public:
  StatusOr<std::byte*> Allocate(size_t bytes) override {
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear it: it is reported here
      return ResourceExhaustedError(
          STOKE_CUDA_MESSAGE(("cudaHostAlloc(" + std::to_string(bytes) + " bytes)").c_str(), e));
    }
    return static_cast<std::byte*>(p);
  }
  void Free(std::byte* p, size_t) override { cudaFreeHost(p); }
};

}  // namespace

StatusOr<HostMemory*> PinnedHostMemory() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    if (e != cudaSuccess) cudaGetLastError();
    return UnavailableError("pinned memory needs a visible CUDA device: " +
                            (e != cudaSuccess ? STOKE_CUDA_MESSAGE("cudaGetDeviceCount", e)
                                              : std::string("none found")));
  }
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

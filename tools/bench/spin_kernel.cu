#include "spin_kernel.h"

namespace {

__device__ inline uint64_t GlobalNanos() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void SpinStep(const uint8_t* batch, size_t bytes, int64_t nanoseconds,
                         unsigned long long* sink) {
  const uint64_t start = GlobalNanos();
  unsigned long long local = 0;
  const size_t stride = 4096;
  for (size_t i = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * stride; i < bytes;
       i += static_cast<size_t>(gridDim.x) * blockDim.x * stride) {
    local += batch[i];
  }
  while (GlobalNanos() - start < static_cast<uint64_t>(nanoseconds)) {
  }
  if (local == 0xffffffffffffull) atomicAdd(sink, local);  // keeps the reads
}

}  // namespace

cudaError_t LaunchSpinStep(const uint8_t* batch, size_t bytes, int64_t nanoseconds,
                           unsigned long long* sink, int blocks, cudaStream_t stream) {
  SpinStep<<<blocks, 128, 0, stream>>>(batch, bytes, nanoseconds, sink);
  return cudaGetLastError();
}

#include "cuda/test_kernels.h"

namespace stoke::testing {
namespace {

__global__ void SleepKernel(int64_t nanoseconds) {
  for (int64_t slept = 0; slept < nanoseconds; slept += 1000) __nanosleep(1000);
}

__global__ void ChecksumKernel(const uint8_t* bytes, size_t count, unsigned long long* sum) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    local += static_cast<unsigned long long>(bytes[i]) * (i % 251 + 1);
  }
  atomicAdd(sum, local);
}

}  // namespace

cudaError_t LaunchSleep(cudaStream_t stream, int64_t nanoseconds) {
  SleepKernel<<<1, 1, 0, stream>>>(nanoseconds);
  return cudaGetLastError();
}

cudaError_t LaunchChecksum(const uint8_t* bytes, size_t count, unsigned long long* sum,
                           cudaStream_t stream) {
  ChecksumKernel<<<64, 256, 0, stream>>>(bytes, count, sum);
  return cudaGetLastError();
}

}  // namespace stoke::testing

// With CUDA. Any failure gives 0: the ceiling is then "not measured".
#include "cuda/h2d_peak.h"

#include <cuda_runtime_api.h>

#include <algorithm>

namespace stoke::internal {

double MeasurePinnedH2D(int device, size_t bytes) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || device >= count || bytes == 0) {
    cudaGetLastError();
    return 0;
  }
  void* host = nullptr;
  void* dev = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, end = nullptr;
  double best = 0;
  if (cudaSetDevice(device) == cudaSuccess &&
      cudaHostAlloc(&host, bytes, cudaHostAllocPortable) == cudaSuccess &&
      cudaMalloc(&dev, bytes) == cudaSuccess &&
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
      cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&end) == cudaSuccess) {
    for (int round = 0; round < 4; ++round) {  // the first warms up
      constexpr int kCopies = 10;
      cudaEventRecord(start, stream);
      for (int i = 0; i < kCopies; ++i) {
        cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream);
      }
      cudaEventRecord(end, stream);
      float ms = 0;
      if (cudaEventSynchronize(end) != cudaSuccess ||
          cudaEventElapsedTime(&ms, start, end) != cudaSuccess || ms <= 0) {
        best = 0;
        break;
      }
      if (round > 0) best = std::max(best, kCopies * static_cast<double>(bytes) / (ms * 1e-3));
    }
  }
  if (start) cudaEventDestroy(start);
  if (end) cudaEventDestroy(end);
  if (stream) cudaStreamDestroy(stream);
  if (dev) cudaFree(dev);
  if (host) cudaFreeHost(host);
  cudaGetLastError();
  return best;
}

}  // namespace stoke::internal

#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/convert_kernel.h"

namespace stoke::internal {
namespace {

__device__ inline void Store(float* out, float v) { *out = v; }
__device__ inline void Store(__half* out, float v) { *out = __float2half_rn(v); }

// One thread per pixel of one sample: it reads the pixel's channels and writes
// one element of each output plane, so the writes of a warp are contiguous.
template <typename T>
__global__ void ConvertKernel(KernelConvertArgs args, const uint8_t* __restrict__ in,
                              int64_t total_pixels, T* __restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total_pixels;
       i += stride) {
    const int64_t n = i / args.pixels;
    const int64_t p = i - n * args.pixels;
    const uint8_t* src = in + n * static_cast<int64_t>(args.in_sample_bytes);
    T* dst = out + n * args.channels * args.pixels + p;
    for (int c = 0; c < args.channels; ++c) {
      const uint8_t x = args.channels_last ? src[p * args.channels + c] : src[c * args.pixels + p];
      const float v = __fadd_rn(__fmul_rn(static_cast<float>(x), args.scale[c]), args.bias[c]);
      Store(dst + c * args.pixels, v);
    }
  }
}

}  // namespace

cudaError_t LaunchConvert(const KernelConvertArgs& args, const uint8_t* in, int64_t samples,
                          void* out, cudaStream_t stream) {
  const int64_t total = samples * args.pixels;
  if (total == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const auto blocks =
      static_cast<unsigned>(std::min<int64_t>((total + kThreads - 1) / kThreads, int64_t{8192}));
  if (args.half) {
    ConvertKernel<<<blocks, kThreads, 0, stream>>>(args, in, total, static_cast<__half*>(out));
  } else {
    ConvertKernel<<<blocks, kThreads, 0, stream>>>(args, in, total, static_cast<float*>(out));
  }
  return cudaGetLastError();
}

}  // namespace stoke::internal

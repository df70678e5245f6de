#include <cuda_fp16.h>

#include <algorithm>

#include "copy/convert_kernel.h"

namespace stoke::internal {
namespace {

// Each thread of the vector kernels converts kGroup consecutive pixels of one
// sample: it loads their bytes with 8-byte loads and stores each output plane's
// kGroup elements with 16-byte stores, so every byte is read once and written
// once, in wide coalesced accesses.
constexpr int kGroup = 8;

__device__ inline float Scaled(uint32_t x, float scale, float bias) {
  return __fadd_rn(__fmul_rn(static_cast<float>(x), scale), bias);
}

// Channel c's scale and bias, selected with constant indices so that the
// arguments stay in the parameter bank instead of a copy in local memory.
__device__ inline void ChannelAffine(const KernelConvertArgs& args, int c, float* scale,
                                     float* bias) {
  *scale = args.scale[0];
  *bias = args.bias[0];
#pragma unroll
  for (int k = 1; k < KernelConvertArgs::kMaxChannels; ++k) {
    if (c == k) {
      *scale = args.scale[k];
      *bias = args.bias[k];
    }
  }
}

// Eight values to one output plane: 16 bytes of half, or 32 of float.
__device__ inline void StoreGroup(__half* out, const float (&v)[kGroup]) {
  uint4 packed;
  __half2 h[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) h[k] = __floats2half2_rn(v[2 * k], v[2 * k + 1]);
  static_assert(sizeof h == sizeof packed);
  memcpy(&packed, h, sizeof packed);
  *reinterpret_cast<uint4*>(out) = packed;
}
__device__ inline void StoreGroup(float* out, const float (&v)[kGroup]) {
  reinterpret_cast<float4*>(out)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4*>(out)[1] = make_float4(v[4], v[5], v[6], v[7]);
}

// Interleaved input (HWC) with C channels known at compile time: a group's
// bytes are C 8-byte words; byte k * C + c of the group is pixel k, channel c.
template <int C, typename T>
__global__ void InterleavedKernel(KernelConvertArgs args, const uint8_t* __restrict__ in,
                                  int64_t groups, T* __restrict__ out) {
  const int64_t per_sample = args.pixels / kGroup;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += stride) {
    const int64_t n = g / per_sample;
    const int64_t p = (g - n * per_sample) * kGroup;
    const auto* src = reinterpret_cast<const uint2*>(in + n * args.in_sample_bytes + p * C);
    uint32_t words[2 * C];
#pragma unroll
    for (int w = 0; w < C; ++w) {
      const uint2 x = __ldg(src + w);
      words[2 * w] = x.x;
      words[2 * w + 1] = x.y;
    }
    T* dst = out + n * C * args.pixels + p;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      float v[kGroup];
#pragma unroll
      for (int k = 0; k < kGroup; ++k) {
        const int byte = k * C + c;
        v[k] = Scaled((words[byte / 4] >> (8 * (byte % 4))) & 0xffu, args.scale[c], args.bias[c]);
      }
      StoreGroup(dst + c * args.pixels, v);
    }
  }
}

// Planar input (CHW): the output is the input's elements in the same order, so
// a group is eight consecutive elements of one plane.
template <typename T>
__global__ void PlanarKernel(KernelConvertArgs args, const uint8_t* __restrict__ in, int64_t groups,
                             T* __restrict__ out) {
  const int64_t per_plane = args.pixels / kGroup;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += stride) {
    const int64_t plane = g / per_plane;  // over all samples' planes
    const int64_t p = (g - plane * per_plane) * kGroup;
    const int64_t n = plane / args.channels;
    const int c = static_cast<int>(plane - n * args.channels);
    const uint2 x =
        __ldg(reinterpret_cast<const uint2*>(in + n * args.in_sample_bytes + c * args.pixels + p));
    float scale, bias;
    ChannelAffine(args, c, &scale, &bias);
    float v[kGroup];
#pragma unroll
    for (int k = 0; k < kGroup; ++k) {
      const uint32_t word = k < 4 ? x.x : x.y;
      v[k] = Scaled((word >> (8 * (k % 4))) & 0xffu, scale, bias);
    }
    StoreGroup(out + plane * args.pixels + p, v);
  }
}

__device__ inline void Store(float* out, float v) { *out = v; }
__device__ inline void Store(__half* out, float v) { *out = __float2half_rn(v); }

// Any shape: one thread per pixel of one sample; it reads the pixel's channels
// and writes one element of each output plane.
template <typename T>
__global__ void ScalarKernel(KernelConvertArgs args, const uint8_t* __restrict__ in,
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
      float scale, bias;
      ChannelAffine(args, c, &scale, &bias);
      Store(dst + c * args.pixels, Scaled(x, scale, bias));
    }
  }
}

constexpr int kThreads = 256;

unsigned Blocks(int64_t work) {
  // A grid-stride loop: enough blocks to fill any current GPU several times.
  return static_cast<unsigned>(std::min<int64_t>((work + kThreads - 1) / kThreads, int64_t{8192}));
}

template <typename T>
cudaError_t Launch(const KernelConvertArgs& args, const uint8_t* in, int64_t samples, T* out,
                   cudaStream_t stream) {
  const int64_t groups = samples * args.channels * (args.pixels / kGroup);
  if (VectorConvertApplies(args, in, out)) {
    if (!args.channels_last || args.channels == 1) {
      PlanarKernel<<<Blocks(groups), kThreads, 0, stream>>>(args, in, groups, out);
      return cudaGetLastError();
    }
    const int64_t pixel_groups = samples * (args.pixels / kGroup);
    switch (args.channels) {
      case 3:
        InterleavedKernel<3>
            <<<Blocks(pixel_groups), kThreads, 0, stream>>>(args, in, pixel_groups, out);
        return cudaGetLastError();
      case 4:
        InterleavedKernel<4>
            <<<Blocks(pixel_groups), kThreads, 0, stream>>>(args, in, pixel_groups, out);
        return cudaGetLastError();
      case 2:
        InterleavedKernel<2>
            <<<Blocks(pixel_groups), kThreads, 0, stream>>>(args, in, pixel_groups, out);
        return cudaGetLastError();
      default:
        break;  // other interleaved channel counts take the scalar kernel
    }
  }
  const int64_t total = samples * args.pixels;
  ScalarKernel<<<Blocks(total), kThreads, 0, stream>>>(args, in, total, out);
  return cudaGetLastError();
}

}  // namespace

bool VectorConvertApplies(const KernelConvertArgs& args, const void* in, const void* out) {
  const auto aligned = [](const void* p, size_t to) {
    return reinterpret_cast<uintptr_t>(p) % to == 0;
  };
  return args.pixels % kGroup == 0 &&
         args.in_sample_bytes == static_cast<size_t>(args.channels * args.pixels) &&
         args.in_sample_bytes % 8 == 0 && aligned(in, 8) && aligned(out, 16) &&
         (!args.channels_last || args.channels <= 4);
}

cudaError_t LaunchConvert(const KernelConvertArgs& args, const uint8_t* in, int64_t samples,
                          void* out, cudaStream_t stream) {
  if (samples * args.pixels == 0) return cudaSuccess;
  if (args.half) return Launch(args, in, samples, static_cast<__half*>(out), stream);
  return Launch(args, in, samples, static_cast<float*>(out), stream);
}

}  // namespace stoke::internal

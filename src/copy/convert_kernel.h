// The conversion kernel of copy/convert.h on the GPU: uint8 samples (HWC or
// channels first) to float32 or float16 channels-first planes, out = x * scale[c]
// + bias[c] computed without a fused multiply-add, exactly as ConvertOnCpu.
// Plain types only, so that nvcc sees no stoke header.
#ifndef STOKE_SRC_COPY_CONVERT_KERNEL_H_
#define STOKE_SRC_COPY_CONVERT_KERNEL_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace stoke::internal {

struct KernelConvertArgs {
  static constexpr int kMaxChannels = 8;
  int channels = 1;
  int64_t pixels = 0;          // per channel plane
  bool channels_last = false;  // the input interleaves channels
  bool half = false;           // float16 output, else float32
  size_t in_sample_bytes = 0;
  float scale[kMaxChannels] = {};
  float bias[kMaxChannels] = {};
};

// Whether LaunchConvert takes a vector kernel (8 pixels a thread, 8-byte loads,
// 16-byte stores) for these arguments and buffers: planes of a multiple of 8
// pixels, samples packed back to back, 8-byte aligned input and 16-byte aligned
// output (cudaMalloc's are), and at most 4 interleaved channels. Otherwise the
// scalar kernel converts them, to the same values.
bool VectorConvertApplies(const KernelConvertArgs& args, const void* in, const void* out);

// Queues the conversion of `samples` samples from `in` to `out` (device memory)
// on `stream`. Returns the launch's error (cudaGetLastError).
cudaError_t LaunchConvert(const KernelConvertArgs& args, const uint8_t* in, int64_t samples,
                          void* out, cudaStream_t stream);

}  // namespace stoke::internal

#endif  // STOKE_SRC_COPY_CONVERT_KERNEL_H_

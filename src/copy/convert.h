// The conversion a loader applies to delivered batches (LoaderOptions::
// output_dtype, normalize_mean, normalize_std): uint8 samples become float32 or
// float16, out = x * scale[c] + bias[c] (scale = 1 / (255 std), bias = -mean /
// std), with channels first. The same plan drives the CPU loop here and the CUDA
// kernel (src/copy/convert_kernel.cu), so both compute the same float32 value
// per element; float16 rounds it to nearest even in both.
//
// Thread safety: a ConvertPlan is immutable after MakeConvertPlan.
#ifndef STOKE_SRC_COPY_CONVERT_H_
#define STOKE_SRC_COPY_CONVERT_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "stoke/dataset.h"
#include "stoke/options.h"
#include "stoke/status.h"

namespace stoke::internal {

// Per-channel normalisation is supported up to this many channels.
inline constexpr int kMaxConvertChannels = 8;

struct ConvertPlan {
  // kUint8: no conversion, batches are copied as they are.
  DType dtype = DType::kUint8;
  // A sample is `channels` planes of `pixels` elements each in the output.
  int64_t channels = 1;
  int64_t pixels = 0;
  // The input interleaves channels (HWC); the output is always channels first.
  bool channels_last = false;
  std::array<float, kMaxConvertChannels> scale{};
  std::array<float, kMaxConvertChannels> bias{};
  size_t in_sample_bytes = 0;   // uint8 elements of one stored sample
  size_t out_sample_bytes = 0;  // delivered bytes of one sample
  SampleSpec out_spec;          // the delivered sample's shape and dtype

  bool converts() const { return dtype != DType::kUint8; }
};

// Validates the options' conversion fields against `spec` and builds the plan.
// InvalidArgument naming the LoaderOptions field: a dtype other than uint8,
// float16 or float32; normalisation without a float dtype; a count of means or
// stds that is neither 0, 1 nor the channel count; a std of 0 or not finite; a
// conversion of samples that are not uint8.
StatusOr<ConvertPlan> MakeConvertPlan(const LoaderOptions& options, const SampleSpec& spec);

// Converts `samples` samples from `in` (in_sample_bytes each) to `out`
// (out_sample_bytes each) on the calling thread. Requires plan.converts().
void ConvertOnCpu(const ConvertPlan& plan, const uint8_t* in, int64_t samples, void* out);

// IEEE binary16 bits of `f`, rounded to nearest even (as CUDA's __float2half_rn).
uint16_t FloatToHalf(float f);
// The float value of binary16 bits `h` (exact).
float HalfToFloat(uint16_t h);

}  // namespace stoke::internal

#endif  // STOKE_SRC_COPY_CONVERT_H_

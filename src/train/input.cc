#include "train/input.h"

#include <cstring>
#include <string>

#include "copy/convert.h"

namespace stoke::internal {
namespace {

std::string ShapeText(std::span<const int64_t> dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

// Samples of `elements` elements each to channels-first float32, each element
// converted by `load`: the dtype is chosen once, outside the loops.
template <typename T, typename Load>
void Convert(const InputFormat& format, const T* in, int64_t samples, int64_t elements, float* out,
             Load load) {
  for (int64_t n = 0; n < samples; ++n) {
    const T* sample = in + n * elements;
    float* dst = out + n * elements;
    if (!format.transpose) {
      for (int64_t k = 0; k < elements; ++k) dst[k] = load(sample[k]);
      continue;
    }
    for (int64_t p = 0; p < format.pixels; ++p) {
      for (int64_t c = 0; c < format.channels; ++c) {
        dst[c * format.pixels + p] = load(sample[p * format.channels + c]);
      }
    }
  }
}

}  // namespace

StatusOr<InputFormat> InputFormatOf(const ModelSpec& spec, const Batch& batch) {
  InputFormat f;
  f.dtype = batch.dtype();
  const std::span<const int64_t> sample = batch.shape().subspan(1);
  int64_t elements = 1;
  for (int64_t d : sample) elements *= d;
  const bool known_dtype =
      f.dtype == DType::kUint8 || f.dtype == DType::kFloat16 || f.dtype == DType::kFloat32;
  if (!known_dtype || elements != spec.input_elements()) {
    return InvalidArgumentError(
        "Trainer: " + spec.text + " takes uint8, float16 or float32 samples of " +
        std::to_string(spec.input_elements()) + " elements; the batch has " + ShapeText(sample) +
        " " + std::string(DTypeName(f.dtype)));
  }
  if (spec.input.size() != 3) return f;  // an MLP takes any shape of its element count
  const int64_t c = spec.input[0], h = spec.input[1], w = spec.input[2];
  bool chw = false, hwc = false;
  if (sample.size() == 2) {  // HxW, one channel
    chw = c == 1 && sample[0] == h && sample[1] == w;
  } else if (sample.size() == 3) {
    chw = sample[0] == c && sample[1] == h && sample[2] == w;
    hwc = sample[0] == h && sample[1] == w && sample[2] == c;
  }
  if (batch.channels_last() ? !hwc : !chw) {
    return InvalidArgumentError("Trainer: " + spec.text + " takes " + ShapeText(spec.input) +
                                " (CHW) or " + ShapeText(std::vector<int64_t>{h, w, c}) +
                                " (HWC) samples; the batch has " + ShapeText(sample) +
                                (batch.channels_last() ? " (HWC)" : " (CHW)"));
  }
  f.transpose = batch.channels_last() && c > 1;
  f.channels = c;
  f.pixels = h * w;
  return f;
}

void ToFloatInput(const InputFormat& format, const void* in, int64_t samples, int64_t elements,
                  float* out) {
  switch (format.dtype) {
    case DType::kUint8:
      return Convert(format, static_cast<const uint8_t*>(in), samples, elements, out,
                     [](uint8_t x) { return static_cast<float>(x) * (1.0f / 255.0f); });
    case DType::kFloat16:
      return Convert(format, static_cast<const uint16_t*>(in), samples, elements, out,
                     [](uint16_t h) { return HalfToFloat(h); });
    default:
      if (!format.transpose) {
        std::memcpy(out, in, static_cast<size_t>(samples * elements) * sizeof(float));
        return;
      }
      return Convert(format, static_cast<const float*>(in), samples, elements, out,
                     [](float x) { return x; });
  }
}

}  // namespace stoke::internal

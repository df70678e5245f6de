#include "copy/convert.h"

#include <cmath>
#include <cstring>
#include <string>

namespace stoke::internal {
namespace {

Status Invalid(const char* field, const std::string& why) {
  return InvalidArgumentError(std::string("LoaderOptions.") + field + ": " + why);
}

}  // namespace

StatusOr<ConvertPlan> MakeConvertPlan(const LoaderOptions& o, const SampleSpec& spec) {
  ConvertPlan plan;
  plan.dtype = o.output_dtype;
  plan.in_sample_bytes = spec.bytes();
  plan.out_sample_bytes = spec.bytes();
  plan.out_spec = spec;
  const bool normalizes = !o.normalize_mean.empty() || !o.normalize_std.empty();
  if (o.output_dtype == DType::kUint8) {
    if (normalizes) {
      return Invalid("normalize_mean",
                     "normalising needs LoaderOptions.output_dtype float16 or float32");
    }
    return plan;
  }
  if (o.output_dtype != DType::kFloat16 && o.output_dtype != DType::kFloat32) {
    return Invalid("output_dtype", std::string(DTypeName(o.output_dtype)) +
                                       " is not a delivered type: uint8, float16 or float32");
  }
  if (spec.dtype != DType::kUint8) {
    return Invalid("output_dtype",
                   "only uint8 samples are converted; these are " + spec.ToString());
  }
  const auto rank = spec.shape.size();
  const int64_t elements = spec.elements();
  std::vector<int64_t> out_shape = spec.shape;
  if (spec.channels_last && rank >= 2) {
    plan.channels = spec.shape.back();
    plan.channels_last = true;
    out_shape.pop_back();
    out_shape.insert(out_shape.begin(), plan.channels);
  } else if (rank >= 3) {
    plan.channels = spec.shape.front();
  }
  auto check_count = [&](const char* field, const std::vector<float>& v) -> Status {
    if (v.size() > 1 && static_cast<int64_t>(v.size()) != plan.channels) {
      return Invalid(field, std::to_string(v.size()) + " values for samples of " +
                                std::to_string(plan.channels) + " channels (" + spec.ToString() +
                                "); give one, or one per channel");
    }
    return Status::Ok();
  };
  STOKE_RETURN_IF_ERROR(check_count("normalize_mean", o.normalize_mean));
  STOKE_RETURN_IF_ERROR(check_count("normalize_std", o.normalize_std));
  if (plan.channels > kMaxConvertChannels) {
    if (plan.channels_last || o.normalize_mean.size() > 1 || o.normalize_std.size() > 1) {
      return Invalid("output_dtype", "converting samples of " + std::to_string(plan.channels) +
                                         " channels (" + spec.ToString() + "); at most " +
                                         std::to_string(kMaxConvertChannels) + " are supported");
    }
    plan.channels = 1;  // one mean and std for all: the planes are one plane
  }
  plan.pixels = elements / plan.channels;
  for (int64_t c = 0; c < plan.channels; ++c) {
    auto pick = [&](const std::vector<float>& v, float fallback) {
      return v.empty() ? fallback : v[v.size() == 1 ? 0 : static_cast<size_t>(c)];
    };
    const float mean = pick(o.normalize_mean, 0.0f);
    const float sd = pick(o.normalize_std, 1.0f);
    if (!std::isfinite(mean)) return Invalid("normalize_mean", "values must be finite");
    if (!std::isfinite(sd) || sd == 0.0f) {
      return Invalid("normalize_std", "values must be finite and not 0");
    }
    plan.scale[c] = 1.0f / (255.0f * sd);
    plan.bias[c] = -mean / sd;
  }
  plan.out_spec.dtype = o.output_dtype;
  plan.out_spec.shape = std::move(out_shape);
  plan.out_spec.channels_last = false;
  plan.out_sample_bytes = plan.out_spec.bytes();
  return plan;
}

namespace {

// out[c][p] = table[c][in(p, c)]: one table entry per byte value and channel,
// each computed once as x * scale + bias (no fused multiply-add, like the kernel).
template <typename T>
void ConvertSamples(const ConvertPlan& plan, const T (&table)[kMaxConvertChannels][256],
                    const uint8_t* in, int64_t samples, T* out) {
  const int64_t channels = plan.channels;
  const int64_t pixels = plan.pixels;
  for (int64_t n = 0; n < samples; ++n) {
    const uint8_t* src = in + n * static_cast<int64_t>(plan.in_sample_bytes);
    T* dst = out + n * channels * pixels;
    for (int64_t c = 0; c < channels; ++c) {
      const T* lut = table[c];
      T* plane = dst + c * pixels;
      if (plan.channels_last) {
        const uint8_t* s = src + c;
        for (int64_t p = 0; p < pixels; ++p) plane[p] = lut[s[p * channels]];
      } else {
        const uint8_t* s = src + c * pixels;
        for (int64_t p = 0; p < pixels; ++p) plane[p] = lut[s[p]];
      }
    }
  }
}

float Affine(int x, float scale, float bias) {
  volatile float product = static_cast<float>(x) * scale;  // rounded, as __fmul_rn
  return product + bias;
}

}  // namespace

void ConvertOnCpu(const ConvertPlan& plan, const uint8_t* in, int64_t samples, void* out) {
  if (plan.dtype == DType::kFloat32) {
    float table[kMaxConvertChannels][256];
    for (int64_t c = 0; c < plan.channels; ++c) {
      for (int x = 0; x < 256; ++x) table[c][x] = Affine(x, plan.scale[c], plan.bias[c]);
    }
    ConvertSamples(plan, table, in, samples, static_cast<float*>(out));
  } else {
    uint16_t table[kMaxConvertChannels][256];
    for (int64_t c = 0; c < plan.channels; ++c) {
      for (int x = 0; x < 256; ++x) {
        table[c][x] = FloatToHalf(Affine(x, plan.scale[c], plan.bias[c]));
      }
    }
    ConvertSamples(plan, table, in, samples, static_cast<uint16_t*>(out));
  }
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) {  // infinity, or NaN (kept quiet)
    return static_cast<uint16_t>(sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0u));
  }
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: infinity
  if (x < 0x38800000u) {               // below 2^-14: a subnormal half, or zero
    if (x < 0x33000000u) return sign;  // below 2^-25: rounds to zero
    const uint32_t exponent = x >> 23;
    const uint32_t mantissa = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // to units of 2^-24
    uint32_t h = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (x >> 13) - (112u << 10);  // rebias the exponent from 127 to 15
  const uint32_t rest = x & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry may reach infinity
  return static_cast<uint16_t>(sign | h);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t x;
  if (exponent == 0x1f) {
    x = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    x = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    x = sign;
  } else {  // subnormal: normalise
    uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    x = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

}  // namespace stoke::internal

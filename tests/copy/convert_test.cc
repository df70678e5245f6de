// The conversion plan and its CPU loop: options checked naming the field,
// HWC to CHW with per-channel normalisation, and float16 rounding.
#include "copy/convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace stoke::internal {
namespace {

SampleSpec Hwc(int64_t h, int64_t w, int64_t c) {
  SampleSpec s;
  s.shape = {h, w, c};
  s.channels_last = true;
  return s;
}

TEST(ConvertPlanTest, Uint8WithoutNormalisationIsNoConversion) {
  auto plan = MakeConvertPlan(LoaderOptions{}, Hwc(4, 4, 3));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->converts());
  EXPECT_EQ(plan->out_sample_bytes, 48u);
}

TEST(ConvertPlanTest, AnHwcImageBecomesChwFloats) {
  LoaderOptions o;
  o.output_dtype = DType::kFloat16;
  o.normalize_mean = {0.485f, 0.456f, 0.406f};
  o.normalize_std = {0.229f, 0.224f, 0.225f};
  auto plan = MakeConvertPlan(o, Hwc(5, 7, 3));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->out_spec.shape, (std::vector<int64_t>{3, 5, 7}));
  EXPECT_EQ(plan->out_spec.dtype, DType::kFloat16);
  EXPECT_EQ(plan->channels, 3);
  EXPECT_EQ(plan->pixels, 35);
  EXPECT_EQ(plan->out_sample_bytes, 3u * 35 * 2);
}

TEST(ConvertPlanTest, BadOptionsNameTheField) {
  LoaderOptions o;
  o.normalize_mean = {0.5f};
  auto plan = MakeConvertPlan(o, Hwc(2, 2, 3));
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("LoaderOptions.normalize_mean"), std::string::npos);

  o.output_dtype = DType::kFloat32;
  o.normalize_mean = {0.5f, 0.5f};  // two values for three channels
  plan = MakeConvertPlan(o, Hwc(2, 2, 3));
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("2 values for samples of 3 channels"), std::string::npos)
      << plan.status();

  o.normalize_mean = {};
  o.normalize_std = {0.0f};
  plan = MakeConvertPlan(o, Hwc(2, 2, 3));
  EXPECT_NE(plan.status().message().find("LoaderOptions.normalize_std"), std::string::npos);

  o.normalize_std = {};
  o.output_dtype = DType::kInt32;
  plan = MakeConvertPlan(o, Hwc(2, 2, 3));
  EXPECT_NE(plan.status().message().find("LoaderOptions.output_dtype"), std::string::npos);

  o.output_dtype = DType::kFloat32;
  SampleSpec floats;
  floats.dtype = DType::kFloat32;
  floats.shape = {4};
  plan = MakeConvertPlan(o, floats);
  EXPECT_NE(plan.status().message().find("only uint8 samples"), std::string::npos);
}

TEST(ConvertOnCpuTest, HwcBecomesNormalisedChwPlanes) {
  LoaderOptions o;
  o.output_dtype = DType::kFloat32;
  o.normalize_mean = {0.1f, 0.2f, 0.3f};
  o.normalize_std = {0.5f, 0.25f, 1.0f};
  auto plan = MakeConvertPlan(o, Hwc(2, 3, 3));
  ASSERT_TRUE(plan.ok()) << plan.status();
  const int samples = 2;
  std::vector<uint8_t> in(samples * 18);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 37 + 11);
  std::vector<float> out(samples * 18);
  ConvertOnCpu(*plan, in.data(), samples, out.data());
  for (int n = 0; n < samples; ++n) {
    for (int c = 0; c < 3; ++c) {
      for (int p = 0; p < 6; ++p) {
        const double x = in[n * 18 + p * 3 + c];
        const double want = (x / 255.0 - o.normalize_mean[c]) / o.normalize_std[c];
        EXPECT_NEAR(out[n * 18 + c * 6 + p], want, 1e-5) << n << " " << c << " " << p;
      }
    }
  }
}

TEST(ConvertOnCpuTest, ChannelsFirstSamplesKeepTheirLayoutInFloat16) {
  LoaderOptions o;
  o.output_dtype = DType::kFloat16;
  o.normalize_mean = {0.5f};
  o.normalize_std = {0.5f};
  SampleSpec chw;
  chw.shape = {3, 2, 2};
  auto plan = MakeConvertPlan(o, chw);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<uint8_t> in = {0, 255, 128, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<uint16_t> out(12);
  ConvertOnCpu(*plan, in.data(), 1, out.data());
  for (size_t i = 0; i < in.size(); ++i) {
    const float want = (static_cast<float>(in[i]) / 255.0f - 0.5f) / 0.5f;
    EXPECT_NEAR(HalfToFloat(out[i]), want, 1e-3) << i;
  }
  EXPECT_EQ(HalfToFloat(out[0]), -1.0f);
  EXPECT_EQ(HalfToFloat(out[1]), 1.0f);
}

TEST(HalfTest, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    if ((bits & 0x7c00) == 0x7c00 && (bits & 0x3ff) != 0) continue;  // NaN
    ASSERT_EQ(FloatToHalf(HalfToFloat(bits)), bits) << std::hex << h;
  }
}

TEST(HalfTest, RoundsToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie: down to even
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie: up to even
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);               // rounds to infinity
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie below the least subnormal
  EXPECT_EQ(FloatToHalf(1.5f * std::ldexp(1.0f, -25)), 0x0001);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
}

#if defined(__FLT16_MAX__)
TEST(HalfTest, AgreesWithTheCompilersFloat16) {
  std::mt19937 random(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 2000000; ++i) {
    uint32_t x = bits(random);
    float f;
    std::memcpy(&f, &x, sizeof f);
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &h, sizeof want);
    ASSERT_EQ(FloatToHalf(f), want) << std::hex << x;
  }
}
#endif

}  // namespace
}  // namespace stoke::internal

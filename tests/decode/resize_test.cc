// The resampler on its own: a large shrink averages its whole window.
#include "decode/resize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace stoke::internal {
namespace {

TEST(ResamplerTest, AHugeShrinkUsesItsWholeTriangle) {
  // A linear ramp 2000 pixels wide to 10: each output pixel's symmetric triangle
  // window (200 pixels each side) averages to the ramp's value at its centre.
  const int width = 2000;
  std::vector<uint8_t> ramp(width);
  for (int x = 0; x < width; ++x) ramp[x] = static_cast<uint8_t>(x * 255 / (width - 1));
  Resampler resampler;
  std::vector<std::byte> out(10);
  resampler.Resize(ramp.data(), width, 1, width, {0, 0, double(width), 1},
                   {10, 1, 1, false, PixelLayout::kHwc}, out);
  for (int o = 1; o < 9; ++o) {  // the end pixels' windows are clamped
    const double centre = (o + 0.5) * 200 - 0.5;
    EXPECT_NEAR(static_cast<double>(out[o]), centre * 255 / (width - 1), 1.5) << "pixel " << o;
  }
}

TEST(ResamplerTest, AHugeShrinkOfFineStripesIsTheirMeanGrey) {
  // Alternating 0 and 255 columns, 2000 wide, to 10: every window holds as much
  // of one as of the other, so no single source pixel may dominate its output.
  const int width = 2000;
  std::vector<uint8_t> stripes(width);
  for (int x = 0; x < width; ++x) stripes[x] = x % 2 ? 255 : 0;
  Resampler resampler;
  std::vector<std::byte> out(10);
  resampler.Resize(stripes.data(), width, 1, width, {0, 0, double(width), 1},
                   {10, 1, 1, false, PixelLayout::kHwc}, out);
  for (int o = 0; o < 10; ++o) {
    EXPECT_NEAR(static_cast<double>(out[o]), 127.5, 3) << "pixel " << o;
  }
}

}  // namespace
}  // namespace stoke::internal

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

TEST(ResamplerTest, OneChannelIsEachChannelOfThree) {
  // Single-channel images take the transposed (SSE2) path, three-channel ones
  // the byte loops: a plane must come out as the same channel of an RGB image
  // whose channels are that plane, sizes on and off the 16x16 tiles, flipped too.
  struct Case {
    int w, h, ow, oh;
    bool flip;
  } cases[] = {{300, 200, 224, 224, false},
               {37, 53, 29, 41, false},
               {64, 48, 16, 32, true},
               {333, 251, 100, 90, false},
               {17, 300, 33, 17, true}};
  Resampler one, three;
  for (const Case& c : cases) {
    std::vector<uint8_t> plane(static_cast<size_t>(c.w) * c.h), rgb(plane.size() * 3);
    for (size_t i = 0; i < plane.size(); ++i) {
      plane[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
      rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = plane[i];
    }
    const Region region{1.5, 2.25, c.w - 3.0, c.h - 4.5};
    std::vector<std::byte> a(static_cast<size_t>(c.ow) * c.oh), b(a.size() * 3);
    one.Resize(plane.data(), c.w, c.h, c.w, region, {c.ow, c.oh, 1, c.flip, PixelLayout::kHwc}, a);
    three.Resize(rgb.data(), c.w, c.h, 3 * static_cast<size_t>(c.w), region,
                 {c.ow, c.oh, 3, c.flip, PixelLayout::kHwc}, b);
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i], b[3 * i]) << c.w << "x" << c.h << " to " << c.ow << "x" << c.oh << " at "
                                << i;
    }
  }
}

}  // namespace
}  // namespace stoke::internal

// YCbCr to RGB against libjpeg's formula (jdcolor.c), every (Cb, Cr) pair:
// the vector path splits libjpeg's products into 16-bit halves, and must round
// every case as the 32-bit formula does.
#include "decode/colour.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace stoke::internal {
namespace {

uint8_t Clamp(int x) { return static_cast<uint8_t>(std::clamp(x, 0, 255)); }

// jdcolor.c's ycc_rgb_convert, written out.
void Reference(int y, int cb, int cr, uint8_t rgb[3]) {
  const int u = cb - 128, v = cr - 128;
  rgb[0] = Clamp(y + ((91881 * v + 32768) >> 16));
  rgb[1] = Clamp(y + ((-22554 * u - 46802 * v + 32768) >> 16));
  rgb[2] = Clamp(y + ((116130 * u + 32768) >> 16));
}

TEST(ColourTest, EveryChromaPairConvertsAsLibjpegDoes) {
  // All 65,536 (Cb, Cr) pairs, each with several lumas (the extremes too, where
  // the clamp bites), in rows of an odd length so that the scalar tail runs.
  const size_t n = 65536 * 4 + 13;
  std::vector<uint8_t> y(n), cb(n), cr(n);
  for (size_t i = 0; i < n; ++i) {
    cb[i] = static_cast<uint8_t>(i);
    cr[i] = static_cast<uint8_t>(i >> 8);
    const uint8_t lumas[4] = {0, 255, 16, 200};
    y[i] = static_cast<uint8_t>(lumas[(i >> 16) & 3] + (i >> 18) * 37);
  }
  std::vector<uint8_t> planes(3 * n), pixels(3 * n);
  YccToRgbPlanes(y.data(), cb.data(), cr.data(), n, planes.data(), planes.data() + n,
                 planes.data() + 2 * n);
  YccToRgbPixels(y.data(), cb.data(), cr.data(), n, pixels.data());
  for (size_t i = 0; i < n; ++i) {
    uint8_t want[3];
    Reference(y[i], cb[i], cr[i], want);
    for (int c = 0; c < 3; ++c) {
      ASSERT_EQ(planes[c * n + i], want[c])
          << "planes, pixel " << i << " Y " << int(y[i]) << " Cb " << int(cb[i]) << " Cr "
          << int(cr[i]) << " channel " << c;
      ASSERT_EQ(pixels[3 * i + c], want[c])
          << "pixels, pixel " << i << " Y " << int(y[i]) << " Cb " << int(cb[i]) << " Cr "
          << int(cr[i]) << " channel " << c;
    }
  }
}

TEST(ColourTest, EveryLengthAndOffsetWritesItsOwnBytesOnly) {
  // Rows of 0 to 40 pixels at unaligned offsets: the triples land where they
  // belong and nothing past the row is written.
  std::vector<uint8_t> y(64), cb(64), cr(64);
  for (int i = 0; i < 64; ++i) {
    y[i] = static_cast<uint8_t>(i * 7);
    cb[i] = static_cast<uint8_t>(255 - i * 3);
    cr[i] = static_cast<uint8_t>(i * 11);
  }
  for (size_t n = 0; n <= 40; ++n) {
    for (size_t offset = 0; offset < 3; ++offset) {
      std::vector<uint8_t> out(3 * 64, 0xAB);
      YccToRgbPixels(&y[offset], &cb[offset], &cr[offset], n, &out[1]);
      EXPECT_EQ(out[0], 0xAB) << n;
      for (size_t i = 0; i < n; ++i) {
        uint8_t want[3];
        Reference(y[offset + i], cb[offset + i], cr[offset + i], want);
        for (int c = 0; c < 3; ++c) ASSERT_EQ(out[1 + 3 * i + c], want[c]) << n << " " << i;
      }
      for (size_t j = 1 + 3 * n; j < out.size(); ++j) ASSERT_EQ(out[j], 0xAB) << n << " " << j;
    }
  }
}

}  // namespace
}  // namespace stoke::internal

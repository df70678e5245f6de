// Cutting JPEGs at their restart markers: the rewrite that adds them is
// lossless, a cut is a valid JPEG of the right rectangle, and decoding a crop
// through a cut gives exactly the bytes decoding the uncut JPEG gives.
#include "decode/jpeg_restart.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "decode/crop.h"
#include "decode/jpeg_decoder.h"
#include "decode/synth_image.h"
#include "testing/jpeg_testing.h"

namespace stoke::internal {
namespace {

using Bytes = testing::JpegBytes;
using Color = JpegEncodeOptions::Color;
using testing::DecodeRegion;
using testing::FullDecode;
constexpr uint64_t kMaxPixels = testing::kTestMaxPixels;

Bytes Encode(int w, int h, uint64_t seed, JpegEncodeOptions o = {}) {
  return testing::EncodeSynthJpeg(w, h, seed, o);
}

Bytes WithRestarts(const Bytes& jpeg) {
  Bytes out;
  const Status s = AddRestartMarkers(jpeg, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(JpegRestartTest, AddingRestartMarkersIsLossless) {
  struct Case {
    const char* name;
    int w, h;
    JpegEncodeOptions options;
    int channels;
  } cases[] = {{"colour 4:2:0", 500, 375, {}, 3},
               {"odd size", 333, 251, {}, 3},
               {"progressive", 320, 240, {.progressive = true}, 3},
               {"gray", 300, 200, {.color = Color::kGray}, 1},
               {"CMYK", 200, 120, {.color = Color::kCmyk}, 4}};
  for (const Case& c : cases) {
    const Bytes original = Encode(c.w, c.h, 7, c.options);
    const Bytes restarted = WithRestarts(original);
    int w0 = 0, h0 = 0, w1 = 0, h1 = 0;
    const auto a = FullDecode(original, c.channels, &w0, &h0);
    const auto b = FullDecode(restarted, c.channels, &w1, &h1);
    EXPECT_EQ(w1, c.w) << c.name;
    EXPECT_EQ(h1, c.h) << c.name;
    EXPECT_TRUE(a == b) << c.name << ": the rewrite changed pixels";
    RestartLayout layout;
    EXPECT_TRUE(layout.Parse(restarted)) << c.name;
    EXPECT_EQ(layout.restart_interval(), 1) << c.name;
    const int mcu = c.options.color == Color::kGray ? 8 : 16;
    EXPECT_EQ(layout.segments(),
              static_cast<size_t>((c.w + mcu - 1) / mcu) * ((c.h + mcu - 1) / mcu))
        << c.name;
    std::printf("%s: %zu bytes, %zu with a restart marker per MCU (%+.1f%%)\n", c.name,
                original.size(), restarted.size(),
                100.0 * (double(restarted.size()) / double(original.size()) - 1));
  }
}

TEST(JpegRestartTest, ACutIsTheJpegOfItsRectangle) {
  const Bytes jpeg = WithRestarts(Encode(333, 251, 11));
  int w = 0, h = 0;
  const auto full = FullDecode(jpeg, 3, &w, &h);
  RestartLayout layout;
  ASSERT_TRUE(layout.Parse(jpeg));
  ASSERT_EQ(layout.mcu_width(), 16);
  Bytes cut;
  int ox = -1, oy = -1;
  ASSERT_TRUE(layout.Cut(40, 100, 150, 251, &cut, &ox, &oy));
  EXPECT_EQ(ox, 32);
  EXPECT_EQ(oy, 96);
  int cw = 0, ch = 0;
  const auto part = FullDecode(cut, 3, &cw, &ch);
  EXPECT_EQ(cw, 160 - 32);  // whole MCUs, to the one holding pixel 149
  EXPECT_EQ(ch, 251 - 96);  // to the bottom edge, a partial MCU row
  // Pixels away from the cut's inner edges (where chroma upsampling has no
  // neighbour) are the full decode's.
  for (int y = 2; y < ch; ++y) {
    for (int x = 2; x < cw - 2; ++x) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(part[(size_t(y) * cw + x) * 3 + c], full[(size_t(y + oy) * w + x + ox) * 3 + c])
            << x << "," << y;
      }
    }
  }
  // The whole image is no cut.
  EXPECT_FALSE(layout.Cut(0, 0, 333, 251, &cut, &ox, &oy));
  EXPECT_FALSE(layout.Cut(5, 3, 330, 250, &cut, &ox, &oy));
  EXPECT_FALSE(layout.Cut(32, 40, 32, 60, &cut, &ox, &oy));  // empty
}

TEST(JpegRestartTest, DecodingThroughACutGivesTheSameBytes) {
  struct Case {
    const char* name;
    int w, h;
    JpegEncodeOptions options;
    bool rewrite;  // through AddRestartMarkers
    int channels;
  } cases[] = {
      {"marker per MCU", 500, 375, {}, true, 3},
      {"odd size", 333, 251, {}, true, 3},
      {"gray", 300, 200, {.color = Color::kGray}, true, 1},
      {"gray to colour", 300, 200, {.color = Color::kGray}, true, 3},
      {"CMYK", 200, 120, {.color = Color::kCmyk}, true, 3},
      {"marker every 4 MCUs", 512, 384, {.restart_mcus = 4}, false, 3},
      {"marker every MCU row", 500, 375, {.restart_rows = 1}, false, 3},
      {"marker every 3 MCU rows", 500, 375, {.restart_rows = 3}, false, 3},
  };
  JpegDecoder decoder;
  for (const Case& c : cases) {
    JpegEncodeOptions plain_options = c.options;
    plain_options.restart_mcus = plain_options.restart_rows = 0;
    const Bytes plain = Encode(c.w, c.h, 5, plain_options);
    const Bytes cuttable = c.rewrite ? WithRestarts(plain) : Encode(c.w, c.h, 5, c.options);
    int cuts = 0;
    SampleRandom random(3);
    for (int i = 0; i < 40; ++i) {
      // Random-resized crops to outputs from 16 to 224: every DCT scale.
      const int side = 16 << (i % 4);
      const ResizeTarget target{side + 8 * (i % 3), side, c.channels, (i & 1) != 0,
                                (i & 2) ? PixelLayout::kChw : PixelLayout::kHwc};
      const Region region = i == 0 ? Region{0, 0, double(c.w), double(c.h)}
                                   : RandomResizedCrop(c.w, c.h, 0.08, 1.0, 0.75, 4.0 / 3, random);
      const auto want = DecodeRegion(decoder, plain, region, target);
      ASSERT_FALSE(decoder.last_cut());
      const int scale = decoder.last_scale();
      const auto got = DecodeRegion(decoder, cuttable, region, target);
      cuts += decoder.last_cut();
      EXPECT_EQ(decoder.last_scale(), scale);
      ASSERT_TRUE(got == want) << c.name << ": crop " << region.width << "x" << region.height
                               << " at " << region.x << "," << region.y << " to " << target.width
                               << "x" << target.height << ", scale " << scale << "/8, cut "
                               << decoder.last_cut();
    }
    EXPECT_GT(cuts, 20) << c.name;
  }
}

TEST(JpegRestartTest, JpegsThatCannotBeCutAreDecodedWhole) {
  RestartLayout layout;
  EXPECT_FALSE(layout.Parse(Encode(200, 100, 1)));  // no markers
  EXPECT_FALSE(layout.Parse(Encode(200, 100, 1, {.progressive = true, .restart_rows = 1})));
  EXPECT_FALSE(layout.Parse(Encode(200, 100, 1, {.restart_mcus = 5})));  // 13 MCUs a row
  const Bytes good = WithRestarts(Encode(200, 100, 1));
  ASSERT_TRUE(layout.Parse(good));
  // Truncated (no EOI), a marker renumbered, a marker lost: not cut, and the
  // decoder says what libjpeg says of the whole file.
  Bytes truncated(good.begin(), good.begin() + static_cast<long>(good.size() * 2 / 3));
  EXPECT_FALSE(layout.Parse(truncated));
  Bytes renumbered = good, lost = good;
  for (size_t i = 200; i + 1 < good.size(); ++i) {
    if (good[i] == std::byte{0xFF} && good[i + 1] == std::byte{0xD3}) {
      renumbered[i + 1] = std::byte{0xD5};
      lost[i] = lost[i + 1] = std::byte{0x00};
      break;
    }
  }
  EXPECT_FALSE(layout.Parse(renumbered));
  EXPECT_FALSE(layout.Parse(lost));
  JpegDecoder decoder;
  JpegHeader header;
  std::vector<std::byte> out(64 * 64 * 3);
  const ResizeTarget target{64, 64, 3, false, PixelLayout::kHwc};
  for (const Bytes* bad : {&truncated, &renumbered, &lost}) {
    ASSERT_TRUE(decoder.Begin(*bad, kMaxPixels, &header).ok());
    const Status s = decoder.Finish({10, 10, 100, 80}, target, out);
    EXPECT_FALSE(decoder.last_cut());
    EXPECT_TRUE(!s.ok() || decoder.warnings() > 0) << s;
  }
  // Not a JPEG, or one libjpeg only warns about: no rewrite (it would hide the
  // damage in a clean JPEG of damaged pixels).
  Bytes garbage(500, std::byte{0x5A});
  const Status not_jpeg = AddRestartMarkers(garbage, &out);
  EXPECT_EQ(not_jpeg.code(), StatusCode::kDataLoss) << not_jpeg;
  const Status warned = AddRestartMarkers(truncated, &out);
  EXPECT_EQ(warned.code(), StatusCode::kDataLoss) << warned;
  EXPECT_NE(warned.message().find("Premature end"), std::string::npos) << warned;
}

TEST(JpegRestartTest, AJpegDeclaringAGiantImageIsNotRewritten) {
  // A 64x48 JPEG whose frame header says 60000x50000: the rewrite would hold
  // 60000x50000x1.5 coefficients (4:2:0), 8.4 GiB; refused before libjpeg
  // allocates them (the fuzzer's find: a 548-byte file asked for 953 MB).
  Bytes jpeg = Encode(64, 48, 9);
  size_t sof = 0;
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == std::byte{0xFF} && jpeg[i + 1] == std::byte{0xC0}) sof = i;
  }
  ASSERT_GT(sof, 0u);
  const auto put16 = [&](size_t at, int v) {
    jpeg[at] = static_cast<std::byte>(v >> 8);
    jpeg[at + 1] = static_cast<std::byte>(v & 0xFF);
  };
  put16(sof + 5, 50000);  // height
  put16(sof + 7, 60000);  // width
  Bytes out;
  const Status s = AddRestartMarkers(jpeg, &out);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("declares 60000x50000x3"), std::string::npos) << s;
  EXPECT_NE(s.message().find("more than the 256 MiB"), std::string::npos) << s;
  // The same file at its own size rewrites.
  put16(sof + 5, 48);
  put16(sof + 7, 64);
  EXPECT_TRUE(AddRestartMarkers(jpeg, &out).ok());
}

TEST(JpegRestartTest, DamagedSegmentsNeverCrash) {
  const Bytes good = WithRestarts(Encode(240, 180, 2));
  JpegDecoder decoder;
  SampleRandom random(9);
  std::vector<std::byte> out(32 * 32 * 3);
  const ResizeTarget target{32, 32, 3, false, PixelLayout::kHwc};
  for (int i = 0; i < 300; ++i) {
    Bytes bad = good;
    for (int k = 0; k < 1 + i % 4; ++k) {
      const auto at = static_cast<size_t>(random.Int(2, static_cast<int64_t>(bad.size()) - 1));
      bad[at] = static_cast<std::byte>(random.Int(0, 255));
    }
    JpegHeader header;
    if (!decoder.Begin(bad, kMaxPixels, &header).ok()) continue;
    const Region region =
        RandomResizedCrop(header.width, header.height, 0.08, 1.0, 0.75, 4.0 / 3, random);
    decoder.Finish(region, target, out).IgnoreError();
  }
}

}  // namespace
}  // namespace stoke::internal

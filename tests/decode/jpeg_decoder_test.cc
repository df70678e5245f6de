// The JPEG decoder against an independent reference (TurboJPEG full-size decode,
// integer crop, a naive triangle-filter resize written here), its colour
// spaces and encodings, and bad input: none may crash, hang or leak.
#include "decode/jpeg_decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "decode/synth_image.h"
#include "testing/jpeg_testing.h"

namespace stoke::internal {
namespace {

using Bytes = testing::JpegBytes;
using testing::DecodeRegion;
constexpr uint64_t kMaxPixels = testing::kTestMaxPixels;

Bytes Encode(int w, int h, uint64_t seed, JpegEncodeOptions o = {}) {
  return testing::EncodeSynthJpeg(w, h, seed, o);
}

// TurboJPEG at full size, RGB.
std::vector<uint8_t> ReferenceDecode(const Bytes& jpeg, int* w, int* h) {
  return testing::FullDecode(jpeg, 3, w, h);
}

// Crop [x, x+cw) x [y, y+ch), then resize to ow x oh: each output pixel is the
// normalised triangle-weighted mean of the crop's pixels, the triangle as wide as
// the shrink factor (at least one pixel), edges clamped to the crop.
std::vector<uint8_t> ReferenceCropResize(const std::vector<uint8_t>& rgb, int w, int x, int y,
                                         int cw, int ch, int ow, int oh) {
  auto weights = [](int in, int out, int o, std::vector<double>* wt) {
    const double scale = static_cast<double>(in) / out;
    const double support = std::max(1.0, scale);
    const double center = (o + 0.5) * scale;
    wt->assign(in, 0.0);
    double total = 0;
    for (int s = 0; s < in; ++s) {
      const double d = std::abs(s + 0.5 - center) / support;
      if (d < 1) total += (*wt)[s] = 1 - d;
    }
    for (double& v : *wt) v /= total;
  };
  std::vector<uint8_t> out(static_cast<size_t>(ow) * oh * 3);
  std::vector<double> wx, wy;
  for (int oy = 0; oy < oh; ++oy) {
    weights(ch, oh, oy, &wy);
    for (int ox = 0; ox < ow; ++ox) {
      weights(cw, ow, ox, &wx);
      for (int c = 0; c < 3; ++c) {
        double acc = 0;
        for (int sy = 0; sy < ch; ++sy) {
          if (wy[sy] == 0) continue;
          for (int sx = 0; sx < cw; ++sx) {
            if (wx[sx] == 0) continue;
            acc += wy[sy] * wx[sx] * rgb[(static_cast<size_t>(y + sy) * w + x + sx) * 3 + c];
          }
        }
        out[(static_cast<size_t>(oy) * ow + ox) * 3 + c] =
            static_cast<uint8_t>(std::clamp(std::lround(acc), 0L, 255L));
      }
    }
  }
  return out;
}

struct Diff {
  double mean = 0;
  int max = 0;
};
Diff Compare(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  Diff d;
  for (size_t i = 0; i < a.size(); ++i) {
    const int e = std::abs(int(a[i]) - int(b[i]));
    d.mean += e;
    d.max = std::max(d.max, e);
  }
  d.mean /= static_cast<double>(a.size());
  return d;
}

// The tolerance, stated: against a full-size decode + crop + resize, a DCT-scaled
// partial decode differs by at most 2.5 grey levels on average per channel.
constexpr double kMeanTolerance = 2.5;

TEST(JpegDecoderTest, FixedCropsMatchAFullDecodeCropAndResize) {
  const Bytes jpeg = Encode(500, 375, 1);
  int w = 0, h = 0;
  const std::vector<uint8_t> full = ReferenceDecode(jpeg, &w, &h);
  ASSERT_EQ(w, 500);
  JpegDecoder decoder;
  struct Case {
    int x, y, cw, ch, ow, oh, scale;
  } cases[] = {
      {0, 0, 500, 375, 224, 224, 8},    // whole image, shrunk: 4/8 would not cover 224
      {62, 24, 328, 328, 224, 224, 8},  // a centre crop
      {10, 200, 120, 90, 224, 224, 8},  // a small crop, enlarged
      {300, 100, 199, 274, 64, 48, 4},  // a corner region, much smaller output: 4/8
      {0, 0, 500, 375, 100, 90, 2},     // thumbnails: 2/8
  };
  for (const Case& c : cases) {
    const ResizeTarget target{c.ow, c.oh, 3, false, PixelLayout::kHwc};
    const std::vector<uint8_t> got =
        DecodeRegion(decoder, jpeg, {double(c.x), double(c.y), double(c.cw), double(c.ch)}, target);
    EXPECT_EQ(decoder.last_scale(), c.scale) << c.x << "," << c.y;
    const Diff d = Compare(got, ReferenceCropResize(full, w, c.x, c.y, c.cw, c.ch, c.ow, c.oh));
    EXPECT_LE(d.mean, kMeanTolerance)
        << "crop " << c.x << "," << c.y << " " << c.cw << "x" << c.ch << " max " << d.max;
    std::printf("crop %dx%d at %d,%d -> %dx%d at scale %d/8: mean |diff| %.2f, max %d\n", c.cw,
                c.ch, c.x, c.y, c.ow, c.oh, decoder.last_scale(), d.mean, d.max);
  }
}

TEST(JpegDecoderTest, FlipAndChwAreRearrangementsOfTheSamePixels) {
  const Bytes jpeg = Encode(320, 240, 2);
  JpegDecoder decoder;
  const Region r{20, 10, 200, 200};
  const auto hwc = DecodeRegion(decoder, jpeg, r, {50, 40, 3, false, PixelLayout::kHwc});
  const auto flipped = DecodeRegion(decoder, jpeg, r, {50, 40, 3, true, PixelLayout::kHwc});
  const auto chw = DecodeRegion(decoder, jpeg, r, {50, 40, 3, false, PixelLayout::kChw});
  for (int y = 0; y < 40; ++y) {
    for (int x = 0; x < 50; ++x) {
      for (int c = 0; c < 3; ++c) {
        const uint8_t v = hwc[(y * 50 + x) * 3 + c];
        ASSERT_EQ(flipped[(y * 50 + (49 - x)) * 3 + c], v);
        ASSERT_EQ(chw[c * 2000 + y * 50 + x], v);
      }
    }
  }
}

TEST(JpegDecoderTest, EveryColourSpaceAndEncodingDecodes) {
  const std::vector<uint8_t> pixels = SynthPixels(256, 192, 3);
  JpegDecoder decoder;
  const Region whole{0, 0, 256, 192};
  const ResizeTarget rgb{128, 96, 3, false, PixelLayout::kHwc};
  const auto baseline = DecodeRegion(decoder, *EncodeJpeg(pixels, 256, 192, {}), whole, rgb);
  using Color = JpegEncodeOptions::Color;
  struct Case {
    const char* name;
    JpegEncodeOptions options;
    double tolerance;  // mean |diff| against the baseline RGB decode
  } cases[] = {{"progressive", {.progressive = true}, 1.0},
               {"restart markers", {.restart_rows = 1}, 1.0},
               {"progressive + restarts", {.progressive = true, .restart_rows = 2}, 1.0},
               {"CMYK (Adobe, inverted)", {.color = Color::kCmyk}, 6.0}};
  for (const Case& c : cases) {
    auto jpeg = EncodeJpeg(pixels, 256, 192, c.options);
    ASSERT_TRUE(jpeg.ok()) << c.name;
    const Diff d = Compare(DecodeRegion(decoder, *jpeg, whole, rgb), baseline);
    EXPECT_LE(d.mean, c.tolerance) << c.name << " max " << d.max;
  }
  // Grayscale: 3 equal channels, or 1 channel when asked.
  auto gray = EncodeJpeg(pixels, 256, 192, {.color = Color::kGray});
  ASSERT_TRUE(gray.ok());
  const auto three = DecodeRegion(decoder, *gray, whole, rgb);
  for (size_t i = 0; i < three.size(); i += 3) {
    ASSERT_EQ(three[i], three[i + 1]);
    ASSERT_EQ(three[i], three[i + 2]);
  }
  const auto one = DecodeRegion(decoder, *gray, whole, {128, 96, 1, false, PixelLayout::kHwc});
  for (size_t i = 0; i < one.size(); ++i) ASSERT_NEAR(one[i], three[3 * i], 1);
  // A colour JPEG to 1 channel is its luma.
  const auto luma = DecodeRegion(decoder, *EncodeJpeg(pixels, 256, 192, {}), whole,
                                 {128, 96, 1, false, PixelLayout::kHwc});
  double err = 0;
  for (size_t i = 0; i < luma.size(); ++i) {
    const double y =
        0.299 * baseline[3 * i] + 0.587 * baseline[3 * i + 1] + 0.114 * baseline[3 * i + 2];
    err += std::abs(luma[i] - y);
  }
  EXPECT_LE(err / luma.size(), 1.5);
}

// ---- Bad input ----

Status DecodeStatus(JpegDecoder& decoder, const Bytes& jpeg, int* warnings = nullptr) {
  JpegHeader header;
  Status s = decoder.Begin(jpeg, kMaxPixels, &header);
  if (!s.ok()) return s;
  std::vector<std::byte> out(64 * 64 * 3);
  s = decoder.Finish({0, 0, double(header.width), double(header.height)},
                     {64, 64, 3, false, PixelLayout::kHwc}, out);
  if (warnings) *warnings = decoder.warnings();
  return s;
}

TEST(JpegDecoderEntropyTest, ReadsTheScanDownToTheCropAndLeavesTheDecoderAsItWas) {
  // A JPEG without restart markers cut short at 60% of its bytes: the entropy
  // decode of a crop at the top never reaches the cut; one at the bottom does
  // (libjpeg warns of the premature end). So it reads the scan, and only down
  // to the crop's bottom edge.
  const Bytes whole = Encode(320, 480, 9);
  const Bytes cut(whole.begin(), whole.begin() + static_cast<ptrdiff_t>(whole.size() * 6 / 10));
  ResizeTarget target;
  target.width = target.height = 32;
  JpegDecoder decoder;
  JpegHeader header;
  ASSERT_TRUE(decoder.Begin(cut, kMaxPixels, &header).ok());
  ASSERT_TRUE(decoder.EntropyDecode({40, 10, 200, 90}, target).ok());
  EXPECT_EQ(decoder.warnings(), 0);
  ASSERT_TRUE(decoder.Begin(cut, kMaxPixels, &header).ok());
  ASSERT_TRUE(decoder.EntropyDecode({40, 380, 200, 90}, target).ok());
  EXPECT_GT(decoder.warnings(), 0);
  // Whole, and with restart markers (a cut to the crop's segments): the next
  // decode gives the same pixels as a decoder that never entropy-decoded.
  for (const Bytes& jpeg : {whole, Encode(320, 480, 9, {.restart_mcus = 1})}) {
    const Region crop{40, 200, 200, 150};
    ASSERT_TRUE(decoder.Begin(jpeg, kMaxPixels, &header).ok());
    ASSERT_TRUE(decoder.EntropyDecode(crop, target).ok());
    JpegDecoder fresh;
    EXPECT_EQ(DecodeRegion(decoder, jpeg, crop, target), DecodeRegion(fresh, jpeg, crop, target));
  }
}

TEST(JpegDecoderCodecTest, DecodesTheRowsFinishWouldAndFailsAsFinishDoes) {
  // The JPEG cut at 60% again: the codec decode of a crop at the top succeeds
  // without a warning, one at the bottom fails as Finish fails (the rows are
  // truncated), through both of Finish's paths: planes (3 channels) and rows
  // (1 channel). After it, the decoder gives a fresh decoder's pixels.
  const Bytes whole = Encode(320, 480, 9);
  const Bytes cut(whole.begin(), whole.begin() + static_cast<ptrdiff_t>(whole.size() * 6 / 10));
  for (int channels : {3, 1}) {
    SCOPED_TRACE(channels);
    const ResizeTarget target{32, 32, channels, false, PixelLayout::kHwc};
    std::vector<std::byte> out(32 * 32 * static_cast<size_t>(channels));
    JpegDecoder decoder;
    JpegHeader header;
    ASSERT_TRUE(decoder.Begin(cut, kMaxPixels, &header).ok());
    ASSERT_TRUE(decoder.CodecDecode({40, 10, 200, 90}, target).ok());
    EXPECT_EQ(decoder.warnings(), 0);
    ASSERT_TRUE(decoder.Begin(cut, kMaxPixels, &header).ok());
    const Status codec = decoder.CodecDecode({40, 380, 200, 90}, target);
    ASSERT_TRUE(decoder.Begin(cut, kMaxPixels, &header).ok());
    const Status finish = decoder.Finish({40, 380, 200, 90}, target, out);
    EXPECT_EQ(codec.code(), StatusCode::kDataLoss) << codec.ToString();
    EXPECT_EQ(codec.ToString(), finish.ToString());
    for (const Bytes& jpeg : {whole, Encode(320, 480, 9, {.restart_mcus = 1})}) {
      const Region crop{40, 200, 200, 150};
      ASSERT_TRUE(decoder.Begin(jpeg, kMaxPixels, &header).ok());
      ASSERT_TRUE(decoder.CodecDecode(crop, target).ok());
      JpegDecoder fresh;
      EXPECT_EQ(DecodeRegion(decoder, jpeg, crop, target), DecodeRegion(fresh, jpeg, crop, target));
    }
  }
}

TEST(JpegDecoderBadInputTest, EachIsAClearErrorAndTheDecoderStaysUsable) {
  const Bytes good = Encode(200, 150, 4);
  JpegDecoder decoder;
  auto expect_error = [&](const Bytes& bytes, StatusCode code, const char* contains,
                          const char* what) {
    Status s = DecodeStatus(decoder, bytes);
    EXPECT_EQ(s.code(), code) << what << ": " << s;
    EXPECT_NE(s.message().find(contains), std::string::npos) << what << ": " << s;
    EXPECT_TRUE(DecodeStatus(decoder, good).ok()) << "after " << what;  // still usable
  };
  expect_error({}, StatusCode::kDataLoss, "JPEG", "zero bytes");
  for (size_t cut : {size_t{2}, size_t{20}, size_t{300}, good.size() / 2, good.size() - 10}) {
    expect_error(Bytes(good.begin(), good.begin() + cut), StatusCode::kDataLoss, "JPEG",
                 "truncated");
  }
  Bytes garbage(5000);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = std::byte(i * 131 + 7);
  expect_error(garbage, StatusCode::kDataLoss, "Not a JPEG", "garbage");
  Bytes png = {std::byte{0x89}, std::byte{'P'},  std::byte{'N'},  std::byte{'G'},
               std::byte{0x0d}, std::byte{0x0a}, std::byte{0x1a}, std::byte{0x0a}};
  png.resize(200);
  expect_error(png, StatusCode::kDataLoss, "Not a JPEG", "a PNG");

  // Headers claiming huge sizes (the SOF's height and width): 65535x65535 is
  // beyond libjpeg's own limit; 60000x60000 is within it but beyond ours.
  auto with_size = [&](uint16_t side) {
    Bytes b = good;
    for (size_t i = 0; i + 9 < b.size(); ++i) {
      if (b[i] == std::byte{0xFF} && b[i + 1] == std::byte{0xC0}) {
        for (size_t k : {size_t{5}, size_t{7}}) {
          b[i + k] = std::byte(side >> 8);
          b[i + k + 1] = std::byte(side & 0xFF);
        }
        break;
      }
    }
    return b;
  };
  expect_error(with_size(65535), StatusCode::kDataLoss, "dimension", "a 65535x65535 header");
  expect_error(with_size(60000), StatusCode::kResourceExhausted, "60000x60000",
               "a 60000x60000 header");

  // A corrupt Huffman table definition is an error.
  Bytes bad_table = good;
  for (size_t i = 0; i + 30 < bad_table.size(); ++i) {
    if (bad_table[i] == std::byte{0xFF} && bad_table[i + 1] == std::byte{0xC4}) {
      for (size_t k = 5; k < 21; ++k) bad_table[i + k] = std::byte{0xFF};  // code counts
      break;
    }
  }
  expect_error(bad_table, StatusCode::kDataLoss, "Huffman", "a corrupt Huffman table");

  // Corrupt entropy-coded data: JPEG has no checksum, so libjpeg may fail, warn,
  // or decode garbage; whichever, no crash, no hang, and a usable decoder.
  for (uint8_t pattern : {0x5A, 0xFF, 0x00}) {
    Bytes corrupt = good;
    for (size_t i = corrupt.size() / 3; i < corrupt.size() / 3 + 64; ++i) {
      corrupt[i] = std::byte(static_cast<uint8_t>(corrupt[i]) ^ pattern);
    }
    (void)DecodeStatus(decoder, corrupt);
    EXPECT_TRUE(DecodeStatus(decoder, good).ok());
  }
}

TEST(JpegDecoderBadInputTest, AJpegThatOnlyWarnsDecodes) {
  // Extraneous bytes before the SOS marker: libjpeg warns and decodes.
  Bytes jpeg = Encode(200, 150, 5);
  size_t sos = 0;
  for (size_t i = 2; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == std::byte{0xFF} && jpeg[i + 1] == std::byte{0xDA}) {
      sos = i;
      break;
    }
  }
  ASSERT_GT(sos, 0u);
  jpeg.insert(jpeg.begin() + static_cast<std::ptrdiff_t>(sos),
              {std::byte{0x12}, std::byte{0x34}, std::byte{0x56}});
  JpegDecoder decoder;
  int warnings = 0;
  Status s = DecodeStatus(decoder, jpeg, &warnings);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_GT(warnings, 0);
}

}  // namespace
}  // namespace stoke::internal

namespace stoke::internal {
namespace {

TEST(JpegDecoderScratchTest, AHugeImagesScratchIsGivenBackAfterItsDecode) {
  // One 6000x4500 photo (planes of 40 MB) decoded at full scale (a crop that needs it) grew the
  // thread's scratch to tens of MiB and kept it for the rest of the run,
  // outside the memory budget. Now it is given back; small images keep theirs.
  JpegDecoder decoder;
  const testing::JpegBytes small = testing::EncodeSynthJpeg(320, 240, 1);
  const testing::JpegBytes huge = testing::EncodeSynthJpeg(6000, 4500, 2);
  // Just past half size: only the full-scale IDCT covers it.
  const ResizeTarget target{3001, 2251, 3, false, PixelLayout::kHwc};
  testing::DecodeRegion(decoder, small, {0, 0, 320, 240}, target);
  const size_t small_scratch = decoder.scratch_bytes();
  EXPECT_GT(small_scratch, 0u);
  EXPECT_LE(small_scratch, JpegDecoder::kKeptScratchBytes);
  testing::DecodeRegion(decoder, huge, {0, 0, 6000, 4500}, target);
  EXPECT_EQ(decoder.last_scale(), 8);
  EXPECT_LE(decoder.scratch_bytes(), JpegDecoder::kKeptScratchBytes);
  // The decoder goes on decoding, and regrows what it needs.
  const std::vector<uint8_t> again =
      testing::DecodeRegion(decoder, small, {0, 0, 320, 240}, target);
  EXPECT_GT(decoder.scratch_bytes(), 0u);
  EXPECT_LE(decoder.scratch_bytes(), JpegDecoder::kKeptScratchBytes);
  EXPECT_EQ(again, testing::DecodeRegion(decoder, small, {0, 0, 320, 240}, target));
}

}  // namespace
}  // namespace stoke::internal

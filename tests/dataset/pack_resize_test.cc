// stoke pack at the resolution training uses (PackOptions::resize): JPEGs
// larger than asked are resampled with the loader's resampler and re-encoded,
// smaller ones kept losslessly, the choice recorded in every shard, the same
// bytes on any thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "dataset/stored.h"
#include "decode/jpeg_decoder.h"
#include "decode/jpeg_encode.h"
#include "decode/jpeg_resample.h"
#include "decode/synth_image.h"
#include "stoke/shards.h"
#include "testing/jpeg_testing.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

using testing::TempDir;

// The JPEG's size, from its header.
void Dimensions(std::span<const std::byte> jpeg, int* width, int* height) {
  internal::JpegDecoder decoder;
  internal::JpegHeader header;
  EXPECT_TRUE(decoder.Begin(jpeg, uint64_t{1} << 28, &header).ok());
  *width = header.width;
  *height = header.height;
}

// The JPEG, whole, decoded and resampled to width x height (RGB) as the loader would.
std::vector<uint8_t> Resampled(const std::vector<std::byte>& jpeg, int width, int height) {
  int source_width = 0, source_height = 0;
  Dimensions(jpeg, &source_width, &source_height);
  internal::ResizeTarget target;
  target.width = width;
  target.height = height;
  internal::JpegDecoder decoder;
  return testing::DecodeRegion(
      decoder, jpeg, {0, 0, static_cast<double>(source_width), static_cast<double>(source_height)},
      target);
}

class PackResizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 12 images in one class, in name order: even ones 300x200 (a short side
    // of 200), odd ones 100x90.
    for (int i = 0; i < 12; ++i) {
      const int w = i % 2 == 0 ? 300 : 100, h = i % 2 == 0 ? 200 : 90;
      auto jpeg = internal::EncodeJpeg(internal::SynthPixels(w, h, i), w, h, {.quality = 92});
      ASSERT_TRUE(jpeg.ok());
      sources_.push_back(*jpeg);
      const std::string path =
          dir_.Join("images/c/img_" + std::string(i < 10 ? "0" : "") + std::to_string(i) + ".jpg");
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
      const auto* p = reinterpret_cast<const uint8_t*>(jpeg->data());
      testing::WriteFile(path, std::vector<uint8_t>(p, p + jpeg->size()));
    }
    ImageFolderOptions folder;
    folder.root = dir_.Join("images");
    auto images = OpenImageFolder(folder);
    ASSERT_TRUE(images.ok()) << images.status();
    images_ = std::move(*images);
  }

  PackOptions Resize(int threads) const {
    PackOptions o;
    o.shuffle_records = false;  // record i is image i
    o.threads = threads;
    o.resize = PackOptions::Resize::kShortSide;
    o.resize_pixels = 120;
    o.resize_quality = 95;
    return o;
  }

  TempDir dir_;
  std::vector<std::vector<std::byte>> sources_;
  std::shared_ptr<Dataset> images_;
};

TEST_F(PackResizeTest, LargerJpegsAreResampledSmallerOnesKeptAndTheChoiceRecorded) {
  auto result = Pack(*images_, dir_.Join("s120"), Resize(2));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->jpegs_resampled, 6u);
  EXPECT_EQ(result->jpegs_rewritten, 12u);
  auto shards = OpenShards({.path = dir_.Join("s120")});
  ASSERT_TRUE(shards.ok()) << shards.status();
  EXPECT_NE((*shards)->Describe().find(
                "JPEGs larger than a short side of 120 resampled to it by stoke pack (quality 95)"),
            std::string::npos)
      << (*shards)->Describe();
  for (uint64_t i = 0; i < 12; ++i) {
    std::vector<std::byte> record;
    ASSERT_TRUE(internal::ReadStoredSample(**shards, i, &record).ok());
    int width = 0, height = 0;
    Dimensions(record, &width, &height);
    if (i % 2 == 1) {  // small: kept, the same pixels
      EXPECT_EQ(width, 100);
      EXPECT_EQ(height, 90);
      EXPECT_EQ(Resampled(record, 100, 90), Resampled(sources_[i], 100, 90)) << "image " << i;
      continue;
    }
    // Large: a short side of 120, close to the source resampled directly
    // (the difference is the re-encoding's, at quality 95).
    EXPECT_EQ(width, 180);
    EXPECT_EQ(height, 120);
    const std::vector<uint8_t> packed = Resampled(record, 180, 120);
    const std::vector<uint8_t> direct = Resampled(sources_[i], 180, 120);
    auto difference = [&](const std::vector<uint8_t>& other) {
      double sum = 0;
      for (size_t j = 0; j < packed.size(); ++j) sum += std::abs(packed[j] - other[j]);
      return sum / static_cast<double>(packed.size());
    };
    // The noisy synthetic scenes lose about 3 levels to JPEG at 4:2:0; the
    // next image (another scene) is tens of levels away.
    EXPECT_LT(difference(direct), 5.0) << "image " << i << ": mean absolute difference";
    EXPECT_GT(difference(Resampled(sources_[(i + 2) % 12], 180, 120)), 15.0) << "image " << i;
    EXPECT_GT(record.size(), 0u);
    EXPECT_LT(record.size(), sources_[i].size());
  }
  // The same bytes on one thread or three.
  ASSERT_TRUE(Pack(*images_, dir_.Join("one"), Resize(1)).ok());
  EXPECT_EQ(testing::ReadFileBytes(dir_.Join("one/shard-000000.stk")),
            testing::ReadFileBytes(dir_.Join("s120/shard-000000.stk")));
}

TEST_F(PackResizeTest, BadResizeOptionsAreNamed) {
  PackOptions o = Resize(1);
  o.resize_pixels = 0;
  auto bad = Pack(*images_, dir_.Join("a"), o);
  EXPECT_NE(bad.status().message().find("resize_pixels 0 is outside"), std::string::npos)
      << bad.status();
  o = Resize(1);
  o.resize_quality = 101;
  bad = Pack(*images_, dir_.Join("b"), o);
  EXPECT_NE(bad.status().message().find("resize_quality 101 is outside"), std::string::npos)
      << bad.status();
  testing::WriteIdxSplit(dir_, 10, 2, 2);
  auto idx = OpenIdxSplit(dir_.path(), "train");
  ASSERT_TRUE(idx.ok());
  bad = Pack(**idx, dir_.Join("c"), Resize(1));
  EXPECT_NE(bad.status().message().find("holds no JPEGs to resample"), std::string::npos)
      << bad.status();
  EXPECT_FALSE(std::filesystem::exists(dir_.Join("c/shard-000000.stk")));
}

TEST(ResampledSizeTest, BringsTheChosenSideDownAndKeepsTheAspect) {
  internal::ResampleJpegOptions o;
  o.pixels = 256;
  int w = 0, h = 0;
  internal::ResampledSize(500, 375, o, &w, &h);
  EXPECT_EQ(w, 341);
  EXPECT_EQ(h, 256);
  internal::ResampledSize(200, 300, o, &w, &h);  // already small enough
  EXPECT_EQ(w, 200);
  EXPECT_EQ(h, 300);
  o.side = internal::ResampleJpegOptions::Side::kLong;
  internal::ResampledSize(500, 375, o, &w, &h);
  EXPECT_EQ(w, 256);
  EXPECT_EQ(h, 192);
  internal::ResampledSize(5000, 1, o, &w, &h);  // never below a pixel
  EXPECT_EQ(w, 256);
  EXPECT_EQ(h, 1);
}

}  // namespace
}  // namespace stoke

namespace stoke {
namespace {

// Mean absolute difference of two byte spans of one length.
double MeanDifference(const uint8_t* a, const uint8_t* b, size_t n) {
  double sum = 0;
  for (size_t j = 0; j < n; ++j) sum += std::abs(static_cast<int>(a[j]) - static_cast<int>(b[j]));
  return sum / static_cast<double>(n);
}

// stoke pack --store raw: each image decoded once (and resized when asked),
// its pixels stored; the loader crops and resamples them, with the crops,
// flips and sizes of the same images packed as JPEGs, and pixels that differ
// by the JPEG decode's rounding only.
TEST_F(PackResizeTest, StoredPixelsLoadAsTheJpegsDoWithoutADecode) {
  PackOptions jpeg = Resize(2);
  jpeg.resize = PackOptions::Resize::kNone;
  PackOptions raw = jpeg;
  raw.store_pixels = true;
  auto packed = Pack(*images_, dir_.Join("raw"), raw);
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ(packed->jpegs_rewritten, 12u);
  EXPECT_EQ(packed->jpegs_resampled, 0u);
  ASSERT_TRUE(Pack(*images_, dir_.Join("jpeg"), jpeg).ok());
  for (const int channels : {3, 1}) {
    for (const CropMode crop : {CropMode::kCenter, CropMode::kRandomResized}) {
      ShardsOptions o;
      o.image.height = o.image.width = 64;
      o.image.channels = channels;
      o.image.crop = crop;
      o.image.flip = true;
      o.path = dir_.Join("raw");
      auto pixels = OpenShards(o);
      o.path = dir_.Join("jpeg");
      auto jpegs = OpenShards(o);
      ASSERT_TRUE(pixels.ok() && jpegs.ok()) << pixels.status();
      EXPECT_NE((*pixels)->Describe().find("stored as decoded pixels (stoke pack --store raw)"),
                std::string::npos)
          << (*pixels)->Describe();
      EXPECT_TRUE((*pixels)->decode_is_compute_bound());
      std::vector<std::byte> a((*pixels)->spec().bytes()), b(a.size()), stored;
      for (uint64_t i = 0; i < 12; ++i) {
        const Dataset::DecodeContext ctx{i, 3, 77};
        int64_t la = -1, lb = -1;
        ASSERT_TRUE(internal::ReadStoredSample(**pixels, i, &stored).ok());
        EXPECT_EQ(stored.size(),
                  internal::kPixelRecordHeader + (i % 2 == 0 ? 300u * 200 : 100u * 90) * 3);
        ASSERT_TRUE((*pixels)->DecodeSample(ctx, stored, a, &la).ok());
        ASSERT_TRUE(internal::ReadStoredSample(**jpegs, i, &stored).ok());
        ASSERT_TRUE((*jpegs)->DecodeSample(ctx, stored, b, &lb).ok());
        EXPECT_EQ(la, lb);
        // The same crop and flip: within a few levels (the noisy synthetic
        // scenes differ by tens of levels between images).
        EXPECT_LT(MeanDifference(reinterpret_cast<const uint8_t*>(a.data()),
                                 reinterpret_cast<const uint8_t*>(b.data()), a.size()),
                  4.0)
            << "image " << i << ", channels " << channels;
      }
      // The entropy floor has nothing to measure in pixels; a damaged record
      // is DataLoss naming it.
      Dataset::DecodeContext floor{0, 0, 0};
      floor.what_if = Dataset::DecodeContext::WhatIf::kEntropyOnly;
      ASSERT_TRUE(internal::ReadStoredSample(**pixels, 0, &stored).ok());
      int64_t label = 0;
      EXPECT_FALSE((*pixels)->DecodeSample(floor, stored, a, &label).ok());
      floor.what_if = Dataset::DecodeContext::WhatIf::kWhole;
      floor.rewritten = true;  // no CRC: the record's own check
      stored.resize(stored.size() - 1);
      const Status damaged = (*pixels)->DecodeSample(floor, stored, a, &label);
      EXPECT_EQ(damaged.code(), StatusCode::kDataLoss) << damaged;
      EXPECT_NE(damaged.message().find("shard-000000.stk record 0"), std::string::npos) << damaged;
    }
  }
  // Resized first, then stored: a short side of 120; the same bytes on one
  // thread or two.
  raw.resize = PackOptions::Resize::kShortSide;
  raw.resize_pixels = 120;
  auto resized = Pack(*images_, dir_.Join("raw120"), raw);
  ASSERT_TRUE(resized.ok()) << resized.status();
  EXPECT_EQ(resized->jpegs_resampled, 6u);
  auto shards = OpenShards({.path = dir_.Join("raw120")});
  ASSERT_TRUE(shards.ok());
  EXPECT_NE((*shards)->Describe().find("images larger than a short side of 120 resampled"),
            std::string::npos)
      << (*shards)->Describe();
  std::vector<std::byte> record;
  ASSERT_TRUE(internal::ReadStoredSample(**shards, 0, &record).ok());
  EXPECT_EQ(record.size(), internal::kPixelRecordHeader + 180u * 120 * 3);
  raw.threads = 1;
  ASSERT_TRUE(Pack(*images_, dir_.Join("raw120-one"), raw).ok());
  EXPECT_EQ(testing::ReadFileBytes(dir_.Join("raw120-one/shard-000000.stk")),
            testing::ReadFileBytes(dir_.Join("raw120/shard-000000.stk")));
  // Only images are stored as pixels.
  testing::WriteIdxSplit(dir_, 10, 4, 4);
  auto idx = OpenIdxSplit(dir_.path(), "train");
  ASSERT_TRUE(idx.ok());
  EXPECT_EQ(Pack(**idx, dir_.Join("idx-raw"), raw).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stoke

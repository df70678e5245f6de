// Packed shards: a pack round trip gives the same batches as its source (raw
// samples and JPEGs with random crops), a flipped byte is DataLoss naming shard
// and record, and damaged or unfinished shards never read as valid.
#include "stoke/shards.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <sys/mman.h>
#include <zlib.h>

#include "dataset/crc32.h"
#include "decode/jpeg_decoder.h"
#include "decode/synth_image.h"
#include "stoke/loader.h"
#include "testing/epoch_dump.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

using testing::TempDir;

using testing::EpochDump;

EpochDump Dump(std::shared_ptr<Dataset> d, const LoaderOptions& o, int64_t epoch) {
  return testing::DumpEpochs(std::move(d), o, epoch);
}

TEST(ShardsTest, RawSamplesRoundTripAcrossSeveralShards) {
  TempDir dir;
  testing::WriteIdxSplit(dir, 500, 8, 8);
  auto idx = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(idx.ok());
  PackOptions pack;
  pack.shard_bytes = 8192;       // 128 samples of 64 bytes a shard
  pack.shuffle_records = false;  // index for index, as the source
  auto result = Pack(**idx, dir.Join("shards"), pack);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->records, 500u);
  EXPECT_EQ(result->shards, 4u);
  auto shards = OpenShards({.path = dir.Join("shards")});
  ASSERT_TRUE(shards.ok()) << shards.status();
  EXPECT_EQ((*shards)->size(), 500u);
  EXPECT_EQ((*shards)->spec(), (*idx)->spec());
  for (Order order : {Order::kFullShuffle, Order::kBlock}) {
    // Block order reads each run's neighbouring records in file order with one
    // read; the batches are the same as the source's.
    const LoaderOptions o{.batch_size = 32, .order = order, .seed = 3, .block_samples = 32};
    const EpochDump a = Dump(*idx, o, 1), b = Dump(*shards, o, 1);
    EXPECT_EQ(a.indices, b.indices);
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_EQ(a.bytes, b.bytes);
  }
  // A glob opens the same shards.
  auto globbed = OpenShards({.path = dir.Join("shards/shard-*.stk")});
  ASSERT_TRUE(globbed.ok()) << globbed.status();
  EXPECT_EQ((*globbed)->size(), 500u);
}

TEST(ShardsTest, JpegsRoundTripWithTheSameRandomCrops) {
  TempDir dir;
  for (int i = 0; i < 40; ++i) {
    const int w = 60 + 7 * (i % 5), h = 50 + 5 * (i % 3);
    auto jpeg = internal::EncodeJpeg(internal::SynthPixels(w, h, i, i % 4, 4), w, h, {});
    ASSERT_TRUE(jpeg.ok());
    const std::string rel =
        "images/class_" + std::to_string(i % 4) + "/img_" + std::to_string(i) + ".jpg";
    std::filesystem::create_directories(std::filesystem::path(dir.Join(rel)).parent_path());
    const auto* p = reinterpret_cast<const uint8_t*>(jpeg->data());
    testing::WriteFile(dir.Join(rel), std::vector<uint8_t>(p, p + jpeg->size()));
  }
  ImageFolderOptions folder;
  folder.root = dir.Join("images");
  folder.image.height = folder.image.width = 32;
  folder.image.crop = CropMode::kRandomResized;
  folder.image.flip = true;
  auto images = OpenImageFolder(folder);
  ASSERT_TRUE(images.ok()) << images.status();
  // Rewritten with restart markers (the default) or kept byte for byte: the
  // same pixels either way.
  for (const bool restarts : {true, false}) {
    const std::string out = dir.Join(restarts ? "shards" : "kept");
    // In the source's order: crops are seeded by index, so the same pixels.
    auto result = Pack(**images, out, {.jpeg_restart_markers = restarts, .shuffle_records = false});
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->jpegs_rewritten, restarts ? 40u : 0u);
    ShardsOptions so;
    so.path = out;
    so.image = folder.image;
    auto shards = OpenShards(so);
    ASSERT_TRUE(shards.ok()) << shards.status();
    EXPECT_TRUE((*shards)->decode_is_compute_bound());
    const LoaderOptions o{.batch_size = 8, .order = Order::kFullShuffle, .seed = 5};
    const EpochDump a = Dump(*images, o, 2), b = Dump(*shards, o, 2);
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_EQ(a.bytes, b.bytes) << (restarts ? "rewritten" : "kept");
  }
  // Rewriting on one thread or several writes the same shard, and bad options
  // are named.
  ASSERT_TRUE(Pack(**images, dir.Join("one"), {.threads = 1}).ok());
  ASSERT_TRUE(Pack(**images, dir.Join("three"), {.threads = 3}).ok());
  EXPECT_EQ(testing::ReadFileBytes(dir.Join("one/shard-000000.stk")),
            testing::ReadFileBytes(dir.Join("three/shard-000000.stk")));
  auto bad = Pack(**images, dir.Join("bad"), {.threads = -1});
  EXPECT_NE(bad.status().message().find("PackOptions.threads"), std::string::npos) << bad.status();
}

TEST(ShardsTest, ShuffledRecordsHoldEverySourceSampleOnceInASeededOrder) {
  TempDir dir;
  testing::WriteIdxSplit(dir, 300, 4, 4);
  auto idx = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(idx.ok());
  ASSERT_TRUE(Pack(**idx, dir.Join("a"), {.shard_bytes = 4096, .shuffle_seed = 4}).ok());
  ASSERT_TRUE(Pack(**idx, dir.Join("b"), {.shard_bytes = 4096, .shuffle_seed = 4}).ok());
  ASSERT_TRUE(Pack(**idx, dir.Join("c"), {.shard_bytes = 4096, .shuffle_seed = 5}).ok());
  EXPECT_EQ(testing::ReadFileBytes(dir.Join("a/shard-000000.stk")),
            testing::ReadFileBytes(dir.Join("b/shard-000000.stk")));
  EXPECT_NE(testing::ReadFileBytes(dir.Join("a/shard-000000.stk")),
            testing::ReadFileBytes(dir.Join("c/shard-000000.stk")));
  auto shards = OpenShards({.path = dir.Join("a")});
  ASSERT_TRUE(shards.ok()) << shards.status();
  EXPECT_NE((*shards)->Describe().find("records shuffled by stoke pack (seed 4)"),
            std::string::npos)
      << (*shards)->Describe();
  // Every record is a source sample (its bytes and label), each exactly once,
  // and not in the source's order.
  const EpochDump source = Dump(*idx, {.batch_size = 300}, 0);
  const EpochDump packed = Dump(*shards, {.batch_size = 300}, 0);
  auto samples = [](const EpochDump& d) {
    std::vector<std::pair<std::vector<uint8_t>, int64_t>> out;
    for (size_t i = 0; i < d.labels.size(); ++i) {
      out.emplace_back(
          std::vector<uint8_t>(d.bytes.begin() + i * 16, d.bytes.begin() + (i + 1) * 16),
          d.labels[i]);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  ASSERT_EQ(packed.labels.size(), 300u);
  EXPECT_EQ(samples(packed), samples(source));  // the same samples, each once
  EXPECT_NE(packed.bytes, source.bytes);
}

TEST(ShardsTest, AFlippedByteIsDataLossNamingShardAndRecord) {
  TempDir dir;
  testing::WriteIdxSplit(dir, 100, 4, 4);
  auto idx = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(idx.ok());
  ASSERT_TRUE(Pack(**idx, dir.Join("s"), {.shuffle_records = false}).ok());
  const std::string shard = dir.Join("s/shard-000000.stk");
  std::vector<uint8_t> bytes = testing::ReadFileBytes(shard);
  bytes[37 * 16 + 5] ^= 0x40;  // record 37
  testing::WriteFile(shard, bytes);
  auto shards = OpenShards({.path = dir.Join("s")});
  ASSERT_TRUE(shards.ok()) << shards.status();
  auto loader = Loader::Open(*shards, {.batch_size = 10});
  ASSERT_TRUE(loader.ok());
  for (int b = 0; b < 10; ++b) {
    auto batch = (*loader)->Next();
    if (b == 3) {
      EXPECT_EQ(batch.status().code(), StatusCode::kDataLoss);
      EXPECT_NE(batch.status().message().find(shard + " record 37 (key 37)"), std::string::npos)
          << batch.status();
      EXPECT_NE(batch.status().message().find("CRC-32 mismatch"), std::string::npos);
    } else {
      EXPECT_TRUE(batch.ok()) << b << ": " << batch.status();
    }
  }
  // With verification off, the flipped byte is delivered as it is.
  auto unchecked = OpenShards({.path = dir.Join("s"), .verify_checksums = false});
  ASSERT_TRUE(unchecked.ok());
  const EpochDump d = Dump(*unchecked, {.batch_size = 10}, 0);
  EXPECT_EQ(d.bytes[37 * 16 + 5], testing::SampleByte(37, 5) ^ 0x40);
}

TEST(ShardsTest, DamagedOrUnfinishedShardsNeverReadAsValid) {
  TempDir dir;
  testing::WriteIdxSplit(dir, 50, 4, 4);
  auto idx = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(idx.ok());
  ASSERT_TRUE(Pack(**idx, dir.Join("s"), {}).ok());
  const std::string shard = dir.Join("s/shard-000000.stk");
  const std::vector<uint8_t> good = testing::ReadFileBytes(shard);
  // Truncated at several points: the footer is gone or does not add up.
  for (size_t keep : {size_t{0}, size_t{100}, good.size() / 2, good.size() - 1}) {
    testing::WriteFile(shard, std::vector<uint8_t>(good.begin(), good.begin() + keep));
    auto s = OpenShards({.path = dir.Join("s")});
    EXPECT_EQ(s.status().code(), StatusCode::kDataLoss) << keep;
    EXPECT_NE(s.status().message().find(shard), std::string::npos) << s.status();
  }
  // A corrupted index fails its CRC.
  std::vector<uint8_t> bad = good;
  bad[good.size() - 64 - 80 - 10] ^= 1;
  testing::WriteFile(shard, bad);
  auto s = OpenShards({.path = dir.Join("s")});
  EXPECT_NE(s.status().message().find("CRC-32"), std::string::npos) << s.status();
  // An interrupted pack leaves only a temporary file, which is not a shard.
  std::filesystem::remove(shard);
  testing::WriteFile(shard + ".tmp", std::vector<uint8_t>(good.begin(), good.begin() + 300));
  s = OpenShards({.path = dir.Join("s")});
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound) << s.status();
}

}  // namespace
}  // namespace stoke

namespace stoke::internal {
namespace {

TEST(ShardsCrcTest, RecordOver4GiBChecksums) {
  // The reader checksummed a record's size mod 2^32 bytes (zlib takes uInt
  // lengths), so every record of 4 GiB or more failed its CRC. 4 GiB + 1 zero
  // bytes, from an untouched anonymous mapping (the zero page: no memory is
  // committed), against a reference built with crc32_combine by doubling.
  const size_t n = (size_t{1} << 32) + 1;
  void* zeros = mmap(nullptr, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(zeros, MAP_FAILED);
  const size_t mib = size_t{1} << 20;
  uLong expected = crc32(0L, static_cast<const Bytef*>(zeros), static_cast<uInt>(mib));
  for (size_t len = mib; len < (size_t{1} << 32); len *= 2) {
    expected = crc32_combine(expected, expected, static_cast<z_off_t>(len));
  }
  expected = crc32_combine(expected, crc32(0L, static_cast<const Bytef*>(zeros), 1), 1);
  EXPECT_EQ(Crc32(zeros, n), static_cast<uint32_t>(expected));
  // Continuing a CRC over two pieces gives the CRC of the whole.
  EXPECT_EQ(Crc32(zeros, 3 * mib, Crc32(zeros, 5)), Crc32(zeros, 3 * mib + 5));
  munmap(zeros, n);
}

}  // namespace
}  // namespace stoke::internal

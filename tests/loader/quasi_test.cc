// The quasi-random order through the loader: the plan's batches with the right
// bytes, whole windows read with one request each, exact resume for any thread
// count, disjoint ranks, the memory budget, and bad input (a file per sample,
// a truncated file, a failing read).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "loader/plan.h"
#include "stoke/loader.h"
#include "testing/fake_file_systems.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

using testing::SampleByte;
using testing::SampleLabel;
using testing::TempDir;

constexpr uint64_t kSamples = 1000;
constexpr size_t kSampleBytes = 30;  // 6x5 IDX samples

// 25 samples a window, 4 windows a group: segments of 100 positions.
LoaderOptions Quasi(int64_t batch = 32) {
  return {.batch_size = batch,
          .order = Order::kQuasiRandom,
          .seed = 9,
          .window_bytes = 25 * kSampleBytes,
          .group_windows = 4};
}

class QuasiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteIdxSplit(dir_, kSamples, 6, 5);
    dataset_ = OpenWith(DefaultFileSystem());
  }

  std::shared_ptr<Dataset> OpenWith(FileSystem* fs) {
    auto d = OpenIdxSplit(dir_.path(), "train", fs);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : nullptr;
  }

  // Every batch of the epoch as its indices; contents and labels checked.
  static std::vector<std::vector<uint64_t>> EpochIndices(Loader& loader, int64_t epoch) {
    std::vector<std::vector<uint64_t>> out;
    for (Batch& b : loader.Epoch(epoch)) {
      for (int64_t s = 0; s < b.size(); ++s) {
        const uint64_t index = b.indices()[s];
        EXPECT_EQ(b.labels()[s], SampleLabel(index));
        for (size_t j = 0; j < kSampleBytes; ++j) {
          EXPECT_EQ(b.data<uint8_t>()[s * kSampleBytes + j], SampleByte(index, j))
              << "batch " << b.index() << " sample " << s;
        }
      }
      out.emplace_back(b.indices().begin(), b.indices().end());
    }
    return out;
  }

  std::unique_ptr<Loader> Open(const LoaderOptions& o, std::shared_ptr<Dataset> d = nullptr) {
    auto l = Loader::Open(d ? d : dataset_, o);
    EXPECT_TRUE(l.ok()) << l.status();
    return l.ok() ? std::move(l).value() : nullptr;
  }

  TempDir dir_;
  std::shared_ptr<Dataset> dataset_;
};

TEST_F(QuasiTest, BatchesAreThePlansWithTheirBytesForAnyThreadsAndRing) {
  internal::PlanConfig c{.dataset_size = kSamples,
                         .order = Order::kQuasiRandom,
                         .seed = 9,
                         .batch_size = 32,
                         .window_samples = 25,
                         .group_windows = 4};
  internal::Plan plan(c);
  std::vector<std::vector<uint64_t>> expected;
  for (int64_t b = 0; b < plan.batches_per_epoch(); ++b) {
    expected.emplace_back();
    for (int64_t p = b * 32; p < b * 32 + plan.batch_size(0, b); ++p) {
      expected.back().push_back(plan.SampleAt(1, p));
    }
  }
  for (int threads : {1, 3, 8}) {
    for (int slots : {2, 5}) {
      for (IoBackend io : {IoBackend::kAuto, IoBackend::kPread, IoBackend::kMmap}) {
        LoaderOptions o = Quasi();
        o.read_threads = threads;
        o.ring_slots = slots;
        o.io = io;
        auto loader = Open(o);
        ASSERT_NE(loader, nullptr);
        EpochIndices(*loader, 0);
        EXPECT_EQ(EpochIndices(*loader, 1), expected)
            << threads << " threads, " << slots << " slots, " << IoBackendName(io);
      }
    }
  }
}

TEST_F(QuasiTest, EachWindowIsReadWithOneRequest) {
  testing::FaultFileSystem counting(DefaultFileSystem(), {});
  auto d = OpenWith(&counting);
  const uint64_t at_open = counting.read_calls();
  LoaderOptions o = Quasi();
  o.ring_slots = 2;
  auto loader = Open(o, d);
  EpochIndices(*loader, 0);
  const LoaderStats stats = loader->stats();
  loader.reset();  // stops reading ahead into epoch 1
  // 40 windows an epoch (not 1000 samples); ahead into epoch 1, the 2 slots'
  // batches (64 positions: 1 or 2 segments) and the 3 sets (4 windows each).
  const uint64_t reads = counting.read_calls() - at_open;
  EXPECT_GE(reads, 40u);
  EXPECT_LE(reads, 40u + 4 * (2 + 3));
  EXPECT_NE(stats.io_backend.find("windows"), std::string::npos) << stats.io_backend;
  EXPECT_GE(stats.arena_bytes, 8 * 25 * kSampleBytes);
}

TEST_F(QuasiTest, ResumeIsExactForAnyThreadCount) {
  auto uninterrupted = Open(Quasi());
  const auto e0 = EpochIndices(*uninterrupted, 0);
  const auto e1 = EpochIndices(*uninterrupted, 1);
  for (int threads : {1, 4}) {
    for (int64_t at : {1, 7, 30}) {
      LoaderOptions o = Quasi();
      o.start = {1, at};
      o.read_threads = threads;
      o.decode_threads = threads - 1;
      auto resumed = Open(o);
      const auto rest = EpochIndices(*resumed, 1);
      ASSERT_EQ(rest.size(), e1.size() - static_cast<size_t>(at));
      EXPECT_TRUE(std::equal(rest.begin(), rest.end(), e1.begin() + at)) << at;
      ASSERT_TRUE(resumed->Seek({0, 3}).ok());
      const auto again = EpochIndices(*resumed, 0);
      EXPECT_TRUE(std::equal(again.begin(), again.end(), e0.begin() + 3));
    }
  }
}

TEST_F(QuasiTest, RanksAreDisjointWithEqualBatchCounts) {
  for (bool drop_last : {false, true}) {
    std::map<uint64_t, int> seen;
    int64_t batches = -1;
    for (int rank = 0; rank < 3; ++rank) {
      LoaderOptions o = Quasi(50);
      o.rank = rank;
      o.world_size = 3;
      o.drop_last = drop_last;
      auto loader = Open(o);
      if (batches < 0) batches = loader->batches_per_epoch();
      EXPECT_EQ(loader->batches_per_epoch(), batches);
      for (const auto& b : EpochIndices(*loader, 4)) {
        for (uint64_t i : b) ++seen[i];
      }
    }
    // 1000 over 3 ranks: 334 each, padded by 2 wrapped samples; or 333 each.
    uint64_t repeats = 0;
    for (const auto& [index, count] : seen) repeats += count - 1;
    EXPECT_EQ(repeats, drop_last ? 0u : 2u);
    // drop_last: 333 a rank, 6 whole batches of 50.
    EXPECT_EQ(seen.size(), drop_last ? 900u : kSamples);
  }
}

TEST_F(QuasiTest, PreloadGivesTheSameOrder) {
  auto from_disk = Open(Quasi());
  LoaderOptions o = Quasi();
  o.preload = true;
  auto from_ram = Open(o);
  EXPECT_EQ(EpochIndices(*from_ram, 2), EpochIndices(*from_disk, 2));
}

TEST_F(QuasiTest, WindowsCountAgainstTheMemoryBudget) {
  LoaderOptions o = Quasi();
  o.window_bytes = 1 << 20;  // the whole 30 kB file is one window
  o.group_windows = 64;
  o.memory_budget_bytes = 64 << 10;
  auto loader = Loader::Open(dataset_, o);
  ASSERT_FALSE(loader.ok());
  EXPECT_EQ(loader.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(loader.status().message().find("window_bytes"), std::string::npos);
}

TEST_F(QuasiTest, AFilePerSampleIsRefusedNamingPack) {
  const std::string list = testing::WriteNpyList(dir_, 20, 4, 4);
  auto d = OpenList({.list_path = list});
  ASSERT_TRUE(d.ok()) << d.status();
  auto loader = Loader::Open(*d, Quasi());
  ASSERT_FALSE(loader.ok());
  EXPECT_EQ(loader.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loader.status().message().find("stoke pack"), std::string::npos) << loader.status();
}

TEST_F(QuasiTest, AFailingWindowReadFailsItsBatchesAndTheLoaderGoesOn) {
  // The third window read fails with EIO: the batches drawing from it fail
  // with the read's error, the others are whole, and the epoch ends.
  testing::FaultFileSystem counting(DefaultFileSystem(), {});
  OpenWith(&counting);
  testing::FaultFileSystem failing(DefaultFileSystem(), {.eio_on_call = counting.read_calls() + 3});
  auto d = OpenWith(&failing);
  LoaderOptions o = Quasi(50);
  o.read_threads = 1;  // windows read in order
  auto loader = Open(o, d);
  int failed = 0;
  for (int64_t b = 0; b < loader->batches_per_epoch(); ++b) {
    auto batch = loader->Next();
    if (batch.ok()) continue;
    ++failed;
    EXPECT_NE(batch.status().message().find("train-images-idx3-ubyte"), std::string::npos)
        << batch.status();
  }
  EXPECT_GE(failed, 1);
  EXPECT_LE(failed, 2);              // one segment of 100 positions: two batches of 50
  EXPECT_TRUE(loader->Next().ok());  // the end of the epoch, as usual
}

TEST_F(QuasiTest, ATruncatedFileFailsOnlyItsMissingSamplesNamingTheFile) {
  // Cut the images file after 900 samples: the windows past it are short.
  const std::string images = dir_.Join("train-images-idx3-ubyte");
  const auto size = std::filesystem::file_size(images);
  auto d = OpenWith(DefaultFileSystem());
  std::filesystem::resize_file(images, size - 100 * kSampleBytes);
  LoaderOptions o = Quasi(100);
  auto loader = Open(o, d);
  int failed = 0;
  int ok = 0;
  for (int64_t b = 0; b < loader->batches_per_epoch(); ++b) {
    auto batch = loader->Next();
    if (batch.ok()) {
      ++ok;
      continue;
    }
    ++failed;
    EXPECT_EQ(batch.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(batch.status().message().find("train-images-idx3-ubyte"), std::string::npos)
        << batch.status();
  }
  // The 100 missing samples are windows 36 to 39; a segment (a batch of 100
  // here) of 4 windows fails if it holds one of them: 1 to 4 batches fail, and
  // the 6 or more whose windows are whole are delivered.
  EXPECT_GE(failed, 1);
  EXPECT_LE(failed, 4);
  EXPECT_GE(ok, 6);

  o.on_error = ErrorPolicy::kSkip;
  auto skipping = Open(o, d);
  uint64_t delivered = 0;
  for (Batch& b : skipping->Epoch(0)) {
    EXPECT_EQ(b.size(), 100);
    for (uint64_t i : b.indices()) EXPECT_LT(i, 900u);
    delivered += static_cast<uint64_t>(b.size());
  }
  EXPECT_EQ(delivered, kSamples);
  EXPECT_GE(skipping->stats().skipped, 100u);
}

}  // namespace
}  // namespace stoke

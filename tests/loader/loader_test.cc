// The loader: exact batch contents, order, determinism across thread counts and
// backends, resume, options and memory-budget errors, shutdown.
#include "stoke/loader.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <map>

#include "cuda/pinned_memory.h"
#include "loader/plan.h"
#include "stoke/shards.h"
#include "testing/fake_file_systems.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

using testing::SampleByte;
using testing::SampleLabel;
using testing::TempDir;

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteIdxSplit(dir_, kSamples, 6, 5);
    auto d = OpenIdxSplit(dir_.path(), "train");
    ASSERT_TRUE(d.ok()) << d.status();
    dataset_ = *d;
  }

  std::unique_ptr<Loader> Open(const LoaderOptions& o) {
    auto l = Loader::Open(dataset_, o);
    EXPECT_TRUE(l.ok()) << l.status();
    return l.ok() ? std::move(l).value() : nullptr;
  }

  // Every batch of one epoch, as (indices, checked contents).
  static std::vector<std::vector<uint64_t>> EpochIndices(Loader& loader, int64_t epoch) {
    std::vector<std::vector<uint64_t>> out;
    for (Batch& b : loader.Epoch(epoch)) {
      CheckContents(b);
      out.emplace_back(b.indices().begin(), b.indices().end());
    }
    return out;
  }

  // Each sample's bytes and label are those of its dataset index.
  static void CheckContents(const Batch& b) {
    const size_t sample = 30;
    ASSERT_EQ(b.shape().size(), 3u);
    EXPECT_EQ(b.shape()[1], 6);
    EXPECT_EQ(b.bytes(), static_cast<size_t>(b.size()) * sample);
    for (int64_t s = 0; s < b.size(); ++s) {
      const uint64_t index = b.indices()[s];
      EXPECT_EQ(b.labels()[s], SampleLabel(index));
      for (size_t j = 0; j < sample; ++j) {
        ASSERT_EQ(b.data<uint8_t>()[s * sample + j], SampleByte(index, j))
            << "batch " << b.index() << " sample " << s;
      }
    }
  }

  static constexpr uint64_t kSamples = 1000;
  TempDir dir_;
  std::shared_ptr<Dataset> dataset_;
};

TEST_F(LoaderTest, SequentialBatchesAreExactAndInOrderWithAShortLast) {
  auto loader = Open({.batch_size = 64});
  ASSERT_TRUE(loader);
  EXPECT_EQ(loader->batches_per_epoch(), 16);
  auto batches = EpochIndices(*loader, 0);
  ASSERT_EQ(batches.size(), 16u);
  uint64_t next = 0;
  for (const auto& b : batches) {
    for (uint64_t i : b) EXPECT_EQ(i, next++);
  }
  EXPECT_EQ(batches.back().size(), 1000u - 15 * 64);
  EXPECT_EQ(loader->position(), (Position{1, 0}));
}

TEST_F(LoaderTest, SameSeedSameBatchesForAnyThreadsRingAndBackend) {
  LoaderOptions base{.batch_size = 50, .order = Order::kFullShuffle, .seed = 11};
  auto reference = EpochIndices(*Open(base), 2);
  for (IoBackend io : {IoBackend::kPread, IoBackend::kUring, IoBackend::kMmap}) {
    if (!testing::Usable(io)) continue;  // no io_uring here
    for (int threads : {1, 3, 8}) {
      for (int slots : {2, 7}) {
        LoaderOptions o = base;
        o.io = io;
        o.read_threads = threads;
        o.ring_slots = slots;
        o.decode_threads = threads == 3 ? 2 : 0;
        o.reads_in_flight = threads == 8 ? 3 : 0;
        o.samples_per_task = slots == 7 ? threads * 3 - 2 : 0;  // 1, 7, 22 or auto
        EXPECT_EQ(EpochIndices(*Open(o), 2), reference)
            << IoBackendName(io) << " threads " << threads << " slots " << slots;
      }
    }
  }
  LoaderOptions other = base;
  other.seed = 12;
  EXPECT_NE(EpochIndices(*Open(other), 2), reference);
}

TEST_F(LoaderTest, ResumeYieldsExactlyTheRemainingBatches) {
  LoaderOptions o{.batch_size = 32, .order = Order::kBlock, .seed = 5, .block_samples = 100};
  auto uninterrupted = Open(o);
  auto e0 = EpochIndices(*uninterrupted, 0);
  auto e1 = EpochIndices(*uninterrupted, 1);

  // Stop after 7 batches of epoch 1, save the position, resume in a new loader.
  auto first = Open(o);
  EpochIndices(*first, 0);
  Position saved;
  {
    int taken = 0;
    for (Batch& b : first->Epoch(1)) {
      (void)b;
      if (++taken == 7) break;
    }
    saved = first->position();
  }
  EXPECT_EQ(saved, (Position{1, 7}));
  LoaderOptions resumed = o;
  resumed.start = saved;
  resumed.read_threads = 2;  // a different machine shape
  auto second = Open(resumed);
  auto rest = EpochIndices(*second, 1);
  ASSERT_EQ(rest.size(), e1.size() - 7);
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), e1.begin() + 7));
  // Seek back works too.
  ASSERT_TRUE(second->Seek({0, 0}).ok());
  EXPECT_EQ(EpochIndices(*second, 0), e0);
}

TEST_F(LoaderTest, NextReturnsAnEmptyBatchAtTheEndOfEachEpoch) {
  auto loader = Open({.batch_size = 400});
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int b = 0; b < 3; ++b) {
      auto batch = loader->Next();
      ASSERT_TRUE(batch.ok());
      ASSERT_TRUE(*batch);
      EXPECT_EQ(batch->epoch(), epoch);
      EXPECT_EQ(batch->index(), b);
    }
    auto end = loader->Next();
    ASSERT_TRUE(end.ok());
    EXPECT_FALSE(*end);
  }
}

TEST_F(LoaderTest, ShardsSplitTheEpoch) {
  std::map<uint64_t, int> seen;
  for (int rank = 0; rank < 3; ++rank) {
    auto loader = Open({.batch_size = 64,
                        .order = Order::kFullShuffle,
                        .seed = 1,
                        .drop_last = true,
                        .rank = rank,
                        .world_size = 3});
    EXPECT_EQ(loader->batches_per_epoch(), 333 / 64);
    for (const auto& b : EpochIndices(*loader, 0)) {
      for (uint64_t i : b) ++seen[i];
    }
  }
  for (const auto& [index, count] : seen) EXPECT_EQ(count, 1) << index;
}

TEST_F(LoaderTest, BadOptionsNameTheField) {
  struct Case {
    LoaderOptions options;
    const char* field;
  };
  std::vector<Case> cases = {
      {{.batch_size = 0}, "batch_size"},
      {{.ring_slots = 1}, "ring_slots"},
      {{.read_threads = 0}, "read_threads"},
      {{.rank = 3, .world_size = 2}, "rank"},
      {{.batch_size = 2000, .drop_last = true}, "batch_size"},
      {{.start = {0, 99}}, "start.batch"},
  };
  for (const Case& c : cases) {
    auto l = Loader::Open(dataset_, c.options);
    ASSERT_FALSE(l.ok()) << c.field;
    EXPECT_EQ(l.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(l.status().message().find(c.field), std::string::npos) << l.status();
  }
}

TEST_F(LoaderTest, MemoryBudgetThatCannotHoldTheRingFailsAtOpen) {
  auto l =
      Loader::Open(dataset_, {.batch_size = 256, .ring_slots = 8, .memory_budget_bytes = 4096});
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(l.status().message().find("memory_budget_bytes"), std::string::npos) << l.status();
}

TEST_F(LoaderTest, HoldingEveryBatchIsAnErrorNotAHang) {
  auto loader = Open({.batch_size = 10, .ring_slots = 2});
  auto a = loader->Next();
  auto b = loader->Next();
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = loader->Next();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  a->Release();
  auto d = loader->Next();
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->index(), 2);
}

TEST_F(LoaderTest, DestroyingMidEpochWithAFullRingReturns) {
  for (int i = 0; i < 20; ++i) {
    auto loader = Open({.batch_size = 16, .ring_slots = 3, .read_threads = 4});
    auto b = loader->Next();
    ASSERT_TRUE(b.ok());
    b->Release();
    // The ring fills behind our back; destroy without draining.
  }
}

TEST_F(LoaderTest, DirectIoReadsTheSameBytes) {
  auto direct = Open({.batch_size = 100, .order = Order::kFullShuffle, .direct_io = true});
  if (!direct) GTEST_SKIP() << "O_DIRECT is not supported on this file system";
  auto plain = Open({.batch_size = 100, .order = Order::kFullShuffle});
  EXPECT_EQ(EpochIndices(*direct, 0), EpochIndices(*plain, 0));
  EXPECT_GT(direct->stats().arena_bytes, 0u);
}

TEST_F(LoaderTest, PreloadServesTheSameSamplesFromMemory) {
  auto preloaded = Preload(dataset_);
  ASSERT_TRUE(preloaded.ok()) << preloaded.status();
  auto loader = Loader::Open(*preloaded, {.batch_size = 100, .order = Order::kFullShuffle});
  ASSERT_TRUE(loader.ok());
  auto from_disk = Open({.batch_size = 100, .order = Order::kFullShuffle});
  EXPECT_EQ(EpochIndices(**loader, 0), EpochIndices(*from_disk, 0));
  EXPECT_EQ(Preload(dataset_, {}, 1000).status().code(), StatusCode::kResourceExhausted);
}

TEST_F(LoaderTest, PreloadKeepsUint8HostSamplesWhateverTheDeliveryOptions) {
  // A trainer's options reused for Preload: float output with normalisation
  // (before the fix, a 4x memcpy past the end of the preload's buffer, which
  // ASan reports), and a cuda device (a host memcpy from device memory). The
  // preload stores the dataset's own uint8 samples either way.
  LoaderOptions delivery{.batch_size = 64, .output_dtype = DType::kFloat32};
  delivery.normalize_mean = {0.5f};
  delivery.normalize_std = {0.25f};
  auto preloaded = Preload(dataset_, delivery);
  ASSERT_TRUE(preloaded.ok()) << preloaded.status();
  EXPECT_EQ((*preloaded)->spec().dtype, DType::kUint8);
  auto loader = Loader::Open(*preloaded, {.batch_size = 100});
  ASSERT_TRUE(loader.ok()) << loader.status();
  EpochIndices(**loader, 0);  // checks every byte
  delivery.device = {DeviceKind::kCuda, 0};
  auto on_device = Preload(dataset_, delivery);
  ASSERT_TRUE(on_device.ok()) << on_device.status();
  EXPECT_EQ((*on_device)->size(), dataset_->size());
}

TEST_F(LoaderTest, CpuConvertedMakeStreamWaitIsOkAndReleaseDoesNotPoison) {
  // Device-agnostic code calls MakeStreamWait(stream) on every batch. On the
  // cpu with float output (the copy engine's host device) it returned
  // InvalidArgument, and the release then failed MarkConsumed and made every
  // later Next() fail. Both dtypes: nothing to wait for, OK, and the loader goes on.
  auto* stream = reinterpret_cast<CUstream_st*>(uintptr_t{0x1000});  // never dereferenced
  for (DType dtype : {DType::kUint8, DType::kFloat32}) {
    auto loader = Open({.batch_size = 64, .output_dtype = dtype});
    ASSERT_NE(loader, nullptr);
    int64_t batches = 0;
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      for (Batch& batch : loader->Epoch(epoch)) {  // throws stoke::Error if the loader fails
        const Status waited = batch.MakeStreamWait(stream);
        EXPECT_TRUE(waited.ok()) << waited;
        ++batches;
      }
    }
    EXPECT_EQ(batches, 2 * loader->batches_per_epoch());
  }
}

TEST_F(LoaderTest, SamplesAdjacentInTheFileAreReadWithOneRead) {
  // Sequential order puts samples that are adjacent in the file at adjacent
  // places in the slot: each task of 25 of them is one ReadAt. Shuffled, each
  // sample is its own read. The contents are checked either way.
  for (Order order : {Order::kSequential, Order::kFullShuffle}) {
    testing::FaultFileSystem counting(DefaultFileSystem(), {});
    auto d = OpenIdxSplit(dir_.path(), "train", &counting);
    ASSERT_TRUE(d.ok()) << d.status();
    const uint64_t at_open = counting.read_calls();
    auto loader = Loader::Open(*d, {.batch_size = 100,
                                    .order = order,
                                    .ring_slots = 4,
                                    .samples_per_task = 25,
                                    .io = IoBackend::kPread});
    ASSERT_TRUE(loader.ok()) << loader.status();
    EpochIndices(**loader, 0);
    (*loader).reset();  // stops the read-ahead into epoch 1, so the count settles
    const uint64_t reads = counting.read_calls() - at_open;
    // 1000 samples, and at most the 4 ring slots of 100 read ahead.
    if (order == Order::kSequential) {
      EXPECT_LE(reads, 1400u / 25);
    } else {
      EXPECT_GE(reads, 900u);  // a few shuffled neighbours may be adjacent
    }
  }
}

TEST(LoaderDeepQueueTest, ManyMoreReadsInFlightThanAsioDrainsPerWakeDoNotHang) {
  // Boost 1.81's Asio drains at most 128 io_uring completions per wake; the
  // engine must keep fewer in flight however many the options allow.
  if (!testing::UringAvailable()) GTEST_SKIP() << "io_uring is not available here";
  TempDir dir;
  const std::string list = testing::WriteNpyList(dir, 2000, 4, 4);
  auto d = OpenList({.list_path = list});
  ASSERT_TRUE(d.ok()) << d.status();
  for (int epoch = 0; epoch < 3; ++epoch) {
    auto loader = Loader::Open(*d, {.batch_size = 256,
                                    .order = Order::kFullShuffle,
                                    .reads_in_flight = 1024,
                                    .samples_per_task = 64,
                                    .io = IoBackend::kUring});
    ASSERT_TRUE(loader.ok()) << loader.status();
    int64_t samples = 0;
    for (Batch& b : (*loader)->Epoch(epoch)) samples += b.size();
    EXPECT_EQ(samples, 2000);
  }
}

TEST_F(LoaderTest, AutoMapsSamplesInsideAFewFilesAndMmapRefusesAFilePerSample) {
  auto loader = Open({.batch_size = 100});
  EpochIndices(*loader, 0);
  EXPECT_EQ(loader->stats().io_backend, "mmap");

  const std::string list = testing::WriteNpyList(dir_, 20, 2, 3);
  auto d = OpenList({.list_path = list});
  ASSERT_TRUE(d.ok()) << d.status();
  auto refused = Loader::Open(*d, {.io = IoBackend::kMmap});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("LoaderOptions.io = mmap"), std::string::npos)
      << refused.status();
  auto fallback = Loader::Open(*d, {});  // auto: a file per sample is not mapped
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_NE((*fallback)->stats().io_backend, "mmap");

  // A file system without descriptors (a fake) cannot be mapped either.
  testing::FaultFileSystem fake(DefaultFileSystem(), {});
  auto faked = OpenIdxSplit(dir_.path(), "train", &fake);
  ASSERT_TRUE(faked.ok());
  EXPECT_FALSE(Loader::Open(*faked, {.io = IoBackend::kMmap}).ok());
  auto faked_auto = Loader::Open(*faked, {});
  ASSERT_TRUE(faked_auto.ok()) << faked_auto.status();
  EXPECT_NE((*faked_auto)->stats().io_backend, "mmap");
}

TEST(LoaderBackendTest, CifarBatchesAreTheSameMappedOrRead) {
  // CIFAR needs decoding (label byte, then pixels), so mapped samples are copied
  // from the mapping and read ones from read buffers: the batches must agree.
  TempDir dir;
  testing::WriteCifar(dir.Join("test_batch.bin"), 50, false);
  auto d = OpenCifar(dir.path(), "test");
  ASSERT_TRUE(d.ok()) << d.status();
  auto epoch = [&](IoBackend io) {
    auto loader = Loader::Open(*d, {.batch_size = 8, .order = Order::kFullShuffle, .io = io});
    EXPECT_TRUE(loader.ok()) << loader.status();
    std::vector<std::pair<std::vector<uint8_t>, std::vector<int64_t>>> out;
    for (Batch& b : (*loader)->Epoch(0)) {
      out.emplace_back(std::vector<uint8_t>(b.data<uint8_t>(), b.data<uint8_t>() + b.bytes()),
                       std::vector<int64_t>(b.labels().begin(), b.labels().end()));
    }
    EXPECT_EQ((*loader)->stats().io_backend, io == IoBackend::kMmap ? "mmap" : "pread");
    return out;
  };
  const auto mapped = epoch(IoBackend::kMmap);
  EXPECT_EQ(mapped.size(), 7u);
  EXPECT_EQ(mapped, epoch(IoBackend::kPread));
}

TEST_F(LoaderTest, PinMemoryGivesPinnedSlotsOrAClearErrorAtOpen) {
  auto loader = Loader::Open(dataset_, {.batch_size = 100, .pin_memory = true});
  if (!loader.ok()) {
    // No CUDA build, or no visible GPU (as in CI): the reason, naming the option.
    EXPECT_EQ(loader.status().code(), StatusCode::kUnavailable) << loader.status();
    EXPECT_NE(loader.status().message().find("LoaderOptions.pin_memory"), std::string::npos)
        << loader.status();
    return;
  }
  for (Batch& b : (*loader)->Epoch(0)) {
    CheckContents(b);
    EXPECT_TRUE(internal::IsPinned(b.data<uint8_t>()));
  }
}

TEST_F(LoaderTest, StatsCountWhatWasRead) {
  auto loader = Open({.batch_size = 100, .io = IoBackend::kPread});
  EpochIndices(*loader, 0);
  LoaderStats s = loader->stats();
  EXPECT_EQ(s.batches, 10u);
  EXPECT_EQ(s.samples, 1000u);
  EXPECT_EQ(s.io_backend, "pread");
  ASSERT_GE(s.stages.size(), 2u);
  EXPECT_EQ(s.stages[1].name, "read");
  EXPECT_GE(s.stages[1].Total().items, 1000u);
  EXPECT_GE(s.stages[1].Total().bytes, 1000u * 30);
}

TEST_F(LoaderTest, PreloadServesTheSameBatchesFromRamOrSaysItDoesNotFit) {
  LoaderOptions o{.batch_size = 16, .order = Order::kFullShuffle, .seed = 2};
  auto plain = Open(o);
  o.preload = true;
  auto preloaded = Open(o);
  ASSERT_TRUE(plain && preloaded);
  EXPECT_NE(preloaded->dataset().Describe().find("preloaded"), std::string::npos);
  EXPECT_EQ(EpochIndices(*plain, 1), EpochIndices(*preloaded, 1));  // contents checked too
  o.preload_max_bytes = 100;
  auto too_big = Loader::Open(dataset_, o);
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(too_big.status().message().find("LoaderOptions.preload_max_bytes"), std::string::npos)
      << too_big.status();
}

}  // namespace
}  // namespace stoke

namespace stoke {
namespace {

TEST(LoaderDeathTest, ABatchOutlivingItsLoaderAbortsNamingTheCause) {
  // A trainer class whose std::vector<Batch> member is declared after its
  // unique_ptr<Loader>: the loader goes first, and the batches' releases
  // wrote into freed memory. Now the loader's destructor says what happened.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 100, 6, 5);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok()) << d.status();
  for (DType dtype : {DType::kUint8, DType::kFloat32}) {
    EXPECT_DEATH(
        {
          Batch kept;
          {
            auto loader = Loader::Open(*d, {.batch_size = 10, .output_dtype = dtype});
            if (loader.ok()) kept = std::move((*loader)->Next()).value();
          }
        },
        "a Batch must not outlive its Loader");
  }
}

}  // namespace
}  // namespace stoke

namespace stoke {
namespace {

TEST(LoaderDeathTest, AnAllocationFailingAtOpenIsResourceExhaustedNotAnException) {
  // The trace log's allocation threw std::bad_alloc out of Loader::Open. In a
  // child whose address space is capped, 2^28 trace events (12 GiB) cannot
  // be allocated: Open says so.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers reserve more address space than any cap allows";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 100, 6, 5);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok()) << d.status();
  LoaderOptions huge_trace;
  huge_trace.batch_size = 10;
  huge_trace.trace_events = uint64_t{1} << 28;
  const rlimit cap{uint64_t{4} << 30, uint64_t{4} << 30};
  EXPECT_EXIT(
      {
        setrlimit(RLIMIT_AS, &cap);
        auto loader = Loader::Open(*d, huge_trace);
        std::fprintf(stderr, "%s\n", loader.status().ToString().c_str());
        std::_Exit(loader.status().code() == StatusCode::kResourceExhausted ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "ResourceExhausted: Loader::Open: out of memory");
#endif
}

}  // namespace
}  // namespace stoke

namespace stoke {
namespace {

TEST(LoaderManyFilesTest, ManyShardsStillCoalesce) {
  // Past 64 files each sample opened and closed its own file and no two
  // records merged into one read. 100 shards of 4 records: sequential order
  // reads each shard's records together, with 1,024 descriptors allowed.
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < 4 * 128) {
    GTEST_SKIP() << "a descriptor limit of " << limit.rlim_cur << " keeps 64 files open";
  }
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 400, 32, 32);
  auto idx = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(idx.ok()) << idx.status();
  PackOptions pack;
  pack.shard_bytes = 4096;  // 4 records of 1,024 bytes a shard
  pack.shuffle_records = false;
  const auto packed = Pack(**idx, dir.Join("shards"), pack);
  ASSERT_TRUE(packed.ok()) << packed.status();
  testing::FaultFileSystem counting(DefaultFileSystem(), {});
  ShardsOptions shard_options;
  shard_options.path = dir.Join("shards");
  shard_options.file_system = &counting;
  auto shards = OpenShards(shard_options);
  ASSERT_TRUE(shards.ok()) << shards.status();
  ASSERT_EQ((*shards)->file_count(), 100u);
  auto loader = Loader::Open(*shards, {.batch_size = 8, .io = IoBackend::kPread});
  ASSERT_TRUE(loader.ok()) << loader.status();
  const uint64_t before = counting.read_calls();
  int64_t samples = 0;
  for (Batch& b : (*loader)->Epoch(0)) samples += b.size();
  EXPECT_EQ(samples, 400);
  const uint64_t reads = counting.read_calls() - before;
  // About one read per shard (runs of a batch cut some shards in two), far
  // from one per record (400, with a file opened for each).
  EXPECT_LE(reads, 150u) << "reads of 400 records in 100 shards";
}

}  // namespace
}  // namespace stoke

// The steady state allocates nothing: a counting global operator new, read after
// warm-up epochs. Its own executable, since it replaces operator new.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "stoke/loader.h"
#include "testing/test_data.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, std::align_val_t a) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const size_t align = static_cast<size_t>(a);
  if (void* p = std::aligned_alloc(align, (n + align - 1) / align * align)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace stoke {
namespace {

// Allocations over 3 epochs after 2 warm-up epochs (thread-local caches, queue
// blocks); 2 epochs' worth of failures stop it early.
uint64_t SteadyStateAllocations(Loader& loader) {
  auto run_epoch = [&] {
    while (true) {
      auto b = loader.Next();
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok() || !*b) break;
    }
  };
  run_epoch();
  run_epoch();
  const uint64_t before = g_allocations.load();
  for (int e = 0; e < 3; ++e) run_epoch();
  return g_allocations.load() - before;
}

TEST(AllocationTest, SteadyStateAllocatesNothing) {
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 2000, 8, 8);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok());
  for (IoBackend io : {IoBackend::kPread, IoBackend::kUring, IoBackend::kMmap}) {
    for (bool direct : {false, true}) {
      if (io == IoBackend::kMmap && direct) continue;  // refused: a mapping reads the cache
      if (!testing::Usable(io)) continue;              // no io_uring here
      auto loader = Loader::Open(*d, {.batch_size = 32,
                                      .order = Order::kFullShuffle,
                                      .decode_threads = direct ? 2 : 0,
                                      .io = io,
                                      .direct_io = direct});
      if (!loader.ok() && direct) continue;  // no O_DIRECT on this file system
      ASSERT_TRUE(loader.ok()) << loader.status();
      const uint64_t during = SteadyStateAllocations(**loader);
      EXPECT_EQ(during, 0u) << IoBackendName(io) << (direct ? " direct" : "") << ": " << during
                            << " allocations in 3 epochs of 63 batches";
    }
  }
}

TEST(AllocationTest, QuasiOrderAllocatesNothingInTheSteadyState) {
  // Windows of 20 samples, 4 a group: each epoch reads 100 windows in 25
  // groups through the window cache, and draws every sample from memory.
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 2000, 8, 8);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok());
  for (int decode_threads : {0, 2}) {
    auto loader = Loader::Open(*d, {.batch_size = 32,
                                    .order = Order::kQuasiRandom,
                                    .window_bytes = 20 * 64,
                                    .group_windows = 4,
                                    .decode_threads = decode_threads});
    ASSERT_TRUE(loader.ok()) << loader.status();
    EXPECT_EQ(SteadyStateAllocations(**loader), 0u) << decode_threads << " decode threads";
  }
}

TEST(AllocationTest, TheCopyEngineAllocatesNothingInTheSteadyStateEither) {
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 2000, 8, 8);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok());
  LoaderOptions o{.batch_size = 32, .order = Order::kFullShuffle};
  o.output_dtype = DType::kFloat16;  // converted on the cpu by the copy engine
  o.normalize_mean = {0.5f};
  o.normalize_std = {0.25f};
  auto loader = Loader::Open(*d, o);
  ASSERT_TRUE(loader.ok()) << loader.status();
  EXPECT_EQ(SteadyStateAllocations(**loader), 0u);
}

}  // namespace
}  // namespace stoke

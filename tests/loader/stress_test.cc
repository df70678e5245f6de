// Many threads, a 2-slot ring, early releases, seeks and destruction mid-epoch:
// for the sanitizers to chew on. Asserts contents throughout.
#include <gtest/gtest.h>

#include <thread>

#include "stoke/loader.h"
#include "testing/fake_file_systems.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

TEST(StressTest, TinyRingManyThreadsSeeksAndEarlyExit) {
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 500, 4, 4);
  testing::FaultFileSystem slow(DefaultFileSystem(), {.max_bytes_per_read = 5});
  auto d = OpenIdxSplit(dir.path(), "train", &slow);
  ASSERT_TRUE(d.ok());
  for (IoBackend io : {IoBackend::kPread, IoBackend::kUring}) {
    if (!testing::Usable(io)) continue;  // no io_uring here
    auto loader = Loader::Open(*d, {.batch_size = 7,
                                    .order = Order::kFullShuffle,
                                    .seed = 9,
                                    .ring_slots = 2,
                                    .read_threads = 16,
                                    .reads_in_flight = 24,
                                    .decode_threads = 3,
                                    .io = io});
    ASSERT_TRUE(loader.ok());
    for (int round = 0; round < 6; ++round) {
      int64_t n = 0;
      for (Batch& b : (*loader)->Epoch(round % 3)) {
        for (int64_t s = 0; s < b.size(); ++s) {
          ASSERT_EQ(b.data<uint8_t>()[s * 16 + 3], testing::SampleByte(b.indices()[s], 3));
        }
        // Hand the lease to another thread half the time.
        if (n % 2) std::thread([lease = std::move(b)]() mutable { lease.Release(); }).join();
        if (++n == 20 + round * 5) break;
      }
    }
  }
}

TEST(StressTest, ManyLoadersOpenAndCloseWhileReading) {
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 300, 8, 8);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        auto loader = Loader::Open(
            *d,
            {.batch_size = 3,
             .ring_slots = 2,
             .read_threads = 1 + t,
             .io = t % 2 || !testing::UringAvailable() ? IoBackend::kPread : IoBackend::kUring});
        ASSERT_TRUE(loader.ok());
        for (int k = 0; k < i; ++k) ASSERT_TRUE((*loader)->Next().ok());
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace stoke

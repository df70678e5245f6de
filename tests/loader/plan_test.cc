#include "loader/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace stoke::internal {
namespace {

std::vector<uint64_t> Epoch(const Plan& plan, int64_t epoch) {
  std::vector<uint64_t> out;
  for (int64_t p = 0; p < plan.samples_per_epoch(); ++p) out.push_back(plan.SampleAt(epoch, p));
  return out;
}

bool IsPermutation(std::vector<uint64_t> v, uint64_t n) {
  std::sort(v.begin(), v.end());
  for (uint64_t i = 0; i < n; ++i) {
    if (v[i] != i) return false;
  }
  return v.size() == n;
}

TEST(PermutationTest, IsABijectionForManySizes) {
  for (uint64_t n : {1ull, 2ull, 3ull, 5ull, 17ull, 64ull, 100ull, 1000ull, 4097ull}) {
    Permutation p(n, 42);
    std::vector<uint64_t> v;
    for (uint64_t i = 0; i < n; ++i) v.push_back(p(i));
    EXPECT_TRUE(IsPermutation(v, n)) << n;
  }
}

TEST(PlanTest, SequentialIsIdentity) {
  Plan plan({.dataset_size = 10, .order = Order::kSequential, .batch_size = 4});
  EXPECT_EQ(plan.batches_per_epoch(), 3);
  EXPECT_EQ(plan.batch_size(0, 2), 2);  // short last batch, as PyTorch without drop_last
  EXPECT_EQ(Epoch(plan, 0), (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(PlanTest, DropLastDropsTheShortBatch) {
  Plan plan({.dataset_size = 10, .batch_size = 4, .drop_last = true});
  EXPECT_EQ(plan.batches_per_epoch(), 2);
}

TEST(PlanTest, FullShuffleIsAFreshPermutationPerEpochAndSeed) {
  PlanConfig c{.dataset_size = 1000, .order = Order::kFullShuffle, .seed = 7, .batch_size = 10};
  Plan plan(c);
  auto e0 = Epoch(plan, 0);
  auto e1 = Epoch(plan, 1);
  EXPECT_TRUE(IsPermutation(e0, 1000));
  EXPECT_TRUE(IsPermutation(e1, 1000));
  EXPECT_NE(e0, e1);
  EXPECT_EQ(e0, Epoch(Plan(c), 0));  // a pure function of its inputs
  c.seed = 8;
  EXPECT_NE(e0, Epoch(Plan(c), 0));
  // Shuffled: few samples stay in place.
  int fixed = 0;
  for (uint64_t i = 0; i < e0.size(); ++i) fixed += e0[i] == i;
  EXPECT_LT(fixed, 20);
}

TEST(PlanTest, BlockOrderKeepsBlocksTogether) {
  for (uint64_t n : {1000ull, 1024ull, 7ull}) {
    Plan plan({.dataset_size = n,
               .order = Order::kBlock,
               .seed = 3,
               .block_samples = 64,
               .batch_size = 8});
    auto e = Epoch(plan, 0);
    ASSERT_TRUE(IsPermutation(e, n)) << n;
    // Consecutive positions change block only when a block ends: at most
    // blocks - 1 times.
    int changes = 0;
    for (uint64_t i = 1; i < e.size(); ++i) changes += e[i] / 64 != e[i - 1] / 64;
    EXPECT_LE(changes, static_cast<int>((n + 63) / 64) - 1) << n;
    if (n == 1024) {
      EXPECT_NE(e, Epoch(Plan({.dataset_size = n, .batch_size = 8}), 0));
    }
  }
}

TEST(PlanTest, ShardsAreDisjointWithEqualBatchCounts) {
  const uint64_t n = 103;
  const int world = 4;
  std::vector<uint64_t> all;
  int64_t batches = -1;
  for (int rank = 0; rank < world; ++rank) {
    Plan plan({.dataset_size = n,
               .order = Order::kFullShuffle,
               .seed = 1,
               .batch_size = 5,
               .rank = rank,
               .world_size = world});
    if (batches >= 0) {
      EXPECT_EQ(plan.batches_per_epoch(), batches);
    }
    batches = plan.batches_per_epoch();
    EXPECT_EQ(plan.samples_per_epoch(), 26);  // ceil(103 / 4), padded as DistributedSampler
    auto e = Epoch(plan, 0);
    all.insert(all.end(), e.begin(), e.end());
  }
  // 104 positions cover all 103 samples; exactly one (the padding) repeats.
  std::set<uint64_t> distinct(all.begin(), all.end());
  EXPECT_EQ(distinct.size(), n);
  EXPECT_EQ(all.size(), 104u);

  // With drop_last the shards are strictly disjoint.
  std::set<uint64_t> seen;
  for (int rank = 0; rank < world; ++rank) {
    Plan plan({.dataset_size = n,
               .order = Order::kFullShuffle,
               .seed = 1,
               .batch_size = 5,
               .drop_last = true,
               .rank = rank,
               .world_size = world});
    EXPECT_EQ(plan.samples_per_epoch(), 25);
    for (uint64_t s : Epoch(plan, 0)) EXPECT_TRUE(seen.insert(s).second);
  }
}

TEST(PlanTest, WorldLargerThanTwiceTheDatasetWrapsLikeDistributedSampler) {
  // 8 ranks over 3 samples: ranks 6 and 7 wrap twice. Before the fix, sequential
  // order gave them indices 3 and 4 (past the dataset) and full shuffle cycled
  // forever in the Feistel walk. DistributedSampler repeats the indices as often
  // as the padding needs: rank r's position p is the order's (p * world + r) % n.
  for (uint64_t n : {1ull, 2ull, 3ull, 5ull}) {
    for (int world : {3, 8, 17, 64}) {
      for (Order order :
           {Order::kSequential, Order::kFullShuffle, Order::kBlock, Order::kQuasiRandom}) {
        std::set<uint64_t> seen;
        for (int rank = 0; rank < world; ++rank) {
          Plan plan({.dataset_size = n,
                     .order = order,
                     .seed = 3,
                     .block_samples = 2,
                     .batch_size = 1,
                     .rank = rank,
                     .world_size = world,
                     .window_samples = 2,
                     .group_windows = 2});
          ASSERT_EQ(plan.samples_per_epoch(), static_cast<int64_t>((n + world - 1) / world));
          if (order == Order::kQuasiRandom) {
            const Segment segment = plan.SegmentAt(0, 0);
            EXPECT_LE(segment.begin, 0);
            EXPECT_GT(segment.end, 0);
          }
          for (uint64_t s : Epoch(plan, 0)) {
            ASSERT_LT(s, n) << "n " << n << " world " << world << " rank " << rank;
            seen.insert(s);
          }
          if (order == Order::kSequential) {
            EXPECT_EQ(plan.SampleAt(0, 0), static_cast<uint64_t>(rank) % n);
          }
        }
        EXPECT_EQ(seen.size(), n) << "every sample is some rank's, n " << n << " world " << world;
      }
    }
  }
}

PlanConfig Quasi(uint64_t n, uint64_t k, uint64_t w, int64_t batch) {
  return {.dataset_size = n,
          .order = Order::kQuasiRandom,
          .seed = 11,
          .batch_size = batch,
          .window_samples = k,
          .group_windows = w};
}

TEST(QuasiPlanTest, IsAFreshPermutationPerEpochForManyShapes) {
  // Sizes that divide and do not divide into windows and groups.
  for (uint64_t n : {1ull, 7ull, 100ull, 1000ull, 1003ull}) {
    for (uint64_t k : {1ull, 10ull, 64ull}) {
      for (uint64_t w : {1ull, 3ull, 8ull}) {
        Plan plan(Quasi(n, k, w, 32));
        const auto e0 = Epoch(plan, 0);
        EXPECT_TRUE(IsPermutation(e0, n)) << n << " " << k << " " << w;
        EXPECT_TRUE(IsPermutation(Epoch(plan, 1), n)) << n << " " << k << " " << w;
        if (n >= 100 && k * w < n) {
          EXPECT_NE(e0, Epoch(plan, 1));
        }
        EXPECT_EQ(e0, Epoch(Plan(Quasi(n, k, w, 32)), 0));  // pure
      }
    }
  }
}

TEST(QuasiPlanTest, EachSegmentDrawsFromAtMostAGroupOfWindowsAndBatchesMixThem) {
  // 10 000 samples in windows of 50, 8 windows a group: a segment of 400
  // positions reads 8 windows, and a batch of 64 draws from most of them.
  Plan plan(Quasi(10000, 50, 8, 64));
  int64_t p = 0;
  int64_t segments = 0;
  while (p < plan.samples_per_epoch()) {
    const Segment s = plan.SegmentAt(0, p);
    EXPECT_EQ(s.begin, p);
    EXPECT_EQ(s.ordinal, segments);
    EXPECT_EQ(plan.SegmentAt(0, s.end - 1).ordinal, s.ordinal);
    std::set<uint64_t> windows;
    for (int64_t q = s.begin; q < s.end; ++q) windows.insert(plan.WindowOf(plan.SampleAt(3, q)));
    EXPECT_EQ(windows.size(), 8u);
    p = s.end;
    ++segments;
  }
  EXPECT_EQ(segments, 10000 / 400);
  int64_t mixed = 0;
  for (int64_t b = 0; b < plan.batches_per_epoch() - 1; ++b) {
    std::set<uint64_t> windows;
    for (int64_t q = b * 64; q < (b + 1) * 64; ++q)
      windows.insert(plan.WindowOf(plan.SampleAt(0, q)));
    mixed += static_cast<int64_t>(windows.size());
  }
  EXPECT_GE(static_cast<double>(mixed) / static_cast<double>(plan.batches_per_epoch() - 1), 6.0);
}

TEST(QuasiPlanTest, RanksTakeDisjointChunksWithEqualCountsAndSegmentsTileThem) {
  for (uint64_t n : {97ull, 1000ull, 1003ull}) {
    for (int world : {1, 2, 3, 5}) {
      for (bool drop_last : {false, true}) {
        std::map<uint64_t, int> seen;
        int64_t per_rank = -1;
        for (int rank = 0; rank < world; ++rank) {
          PlanConfig c = Quasi(n, 16, 4, 10);
          c.rank = rank;
          c.world_size = world;
          c.drop_last = drop_last;
          Plan plan(c);
          if (per_rank < 0) per_rank = plan.samples_per_epoch();
          EXPECT_EQ(plan.samples_per_epoch(), per_rank);
          for (uint64_t i : Epoch(plan, 2)) ++seen[i];
          // Segments tile the rank's positions with consecutive ordinals.
          int64_t p = 0;
          int64_t ordinal = 0;
          while (p < plan.samples_per_epoch()) {
            const Segment s = plan.SegmentAt(0, p);
            ASSERT_EQ(s.begin, p) << n << " " << world << " " << rank;
            ASSERT_GT(s.end, s.begin);
            EXPECT_EQ(s.ordinal, ordinal++);
            p = s.end;
          }
        }
        // Disjoint; without drop_last only the wrapped padding repeats.
        const uint64_t padding = drop_last ? 0 : per_rank * world - n;
        uint64_t repeats = 0;
        for (const auto& [index, count] : seen) repeats += count - 1;
        EXPECT_EQ(repeats, padding) << n << " " << world;
        EXPECT_EQ(seen.size(), drop_last ? per_rank * world : n);
      }
    }
  }
}

}  // namespace
}  // namespace stoke::internal

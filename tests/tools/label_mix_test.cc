#include "label_mix.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace stoke {
namespace {

TEST(LabelMixTest, SortedBatchesAreFarAndShuffledOnesNear) {
  // 8 classes of 256 samples each, batches of 256.
  std::vector<int64_t> labels;
  for (int64_t c = 0; c < 8; ++c) labels.insert(labels.end(), 256, c);
  LabelMix sorted;
  for (size_t b = 0; b < labels.size(); b += 256) sorted.Add({labels.data() + b, 256});
  EXPECT_NEAR(sorted.Mean(), 1 - 1.0 / 8, 1e-9);  // each batch one class of 1/8

  std::mt19937 rng(1);
  std::shuffle(labels.begin(), labels.end(), rng);
  LabelMix shuffled;
  for (size_t b = 0; b < labels.size(); b += 256) shuffled.Add({labels.data() + b, 256});
  EXPECT_GT(shuffled.Mean(), 0.02);  // sampling noise
  EXPECT_LT(shuffled.Mean(), 0.15);
  EXPECT_EQ(shuffled.batches(), 8u);
}

TEST(LabelMixTest, PerfectlyMixedBatchesAreZeroAndNothingIsZero) {
  const std::vector<int64_t> batch = {0, 1, 2, 3};
  LabelMix mix;
  mix.Add(batch);
  mix.Add(batch);
  EXPECT_DOUBLE_EQ(mix.Mean(), 0);
  EXPECT_DOUBLE_EQ(LabelMix().Mean(), 0);
}

TEST(LabelMixTest, StopsCountingAtItsCap) {
  LabelMix mix(4);
  const std::vector<int64_t> a = {0, 0}, b = {1, 1}, c = {0, 1};
  mix.Add(a);
  mix.Add(b);
  mix.Add(c);  // over the cap: not counted
  EXPECT_EQ(mix.batches(), 2u);
  EXPECT_DOUBLE_EQ(mix.Mean(), 0.5);
}

}  // namespace
}  // namespace stoke

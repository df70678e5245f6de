// The profile's last lines on made-up runs: each names what the verdict found,
// with its figures, and what to try next (advice 1 and its commands, the step,
// or a consumer to measure against).
#include "profile/conclusion.h"

#include <gtest/gtest.h>

namespace stoke::internal {
namespace {

StageStats Stage(const std::string& name, int threads, uint64_t items, double busy_each) {
  StageStats s{name, {}};
  for (int t = 0; t < threads; ++t) {
    s.threads.push_back({items / static_cast<uint64_t>(threads), 0, busy_each, 0});
  }
  return s;
}

RunFacts Facts() {
  RunFacts f;
  f.wall_seconds = 10;
  f.samples = 10000;
  f.cores = 2;
  f.options.read_threads = 4;
  f.options.decode_threads = 2;
  f.stored_bytes_per_sample = 100000;
  f.file_per_sample = true;
  f.stats.samples = 10000;
  f.stats.bytes = 10000 * 150528;
  return f;
}

TEST(ConclusionTest, ADecodeBoundRunPointsAtAdviceOneAndItsCommands) {
  RunFacts f = Facts();
  f.stats.stages = {Stage("read", 4, 10000, 2.5), Stage("decode", 2, 10000, 9.9)};
  f.stats.consumer_wait_seconds = 9;
  f.ceilings.decode_samples_per_second_per_core = 500;
  f.ceilings.decode_samples_per_second_per_core_packed = 750;
  f.pack = "stoke pack in out";
  f.rerun_packed = "stoke profile out";
  const Verdict v = Judge(f);
  ASSERT_EQ(v.bottleneck, "decode");
  const Conclusion c = Conclude(v, f);
  EXPECT_EQ(c.learned,
            "decoding is the limit: the pipeline delivered 1000 samples/s and the consumer "
            "waited 90% of the run; a training step that needs more than that would wait for "
            "data too");
  EXPECT_EQ(c.next, "advice 1 above, about 1.5x: $ stoke pack in out, then $ stoke profile out");
}

TEST(ConclusionTest, AStepBoundRunSaysTheDataKeepsUpAndByHowMuch) {
  RunFacts f = Facts();
  f.stats.stages = {Stage("read", 4, 10000, 1.0)};  // each thread 1 s busy: 10000/s
  f.has_step = true;
  f.step = "mlp:784-10";
  f.step_busy_seconds = 9.5;
  const Verdict v = Judge(f);
  ASSERT_EQ(v.bottleneck, "consumer");
  const Conclusion c = Conclude(v, f);
  EXPECT_EQ(c.learned,
            "the step is the limit, not the data: it consumed 1000 samples/s and waited 0% of "
            "the run for data; the input pipeline could deliver 10000 samples/s (10.0x "
            "headroom)");
  EXPECT_NE(c.next.find("--device cuda"), std::string::npos) << c.next;
}

TEST(ConclusionTest, AnIdleInMemoryRunAsksForAConsumerInsteadOfNamingABottleneck) {
  RunFacts f = Facts();
  f.stats.stages = {Stage("read", 4, 10000, 0)};
  f.stats.consumer_wait_seconds = 3;
  const Verdict v = Judge(f);
  const Conclusion c = Conclude(v, f);
  EXPECT_EQ(c.learned.rfind("the data is in memory and no step consumed it: the loader "
                            "delivered 1000 samples/s (151 MB/s)",
                            0),
            0u)
      << c.learned;
  EXPECT_NE(c.next.find("--step sleep:T"), std::string::npos) << c.next;
}

TEST(ConclusionTest, ABoundStageWithoutAdviceStillSaysWhatWouldHelp) {
  RunFacts f = Facts();
  f.cores = 2;  // decode threads already one per core, nothing packs faster
  f.stats.stages = {Stage("read", 4, 10000, 2.5), Stage("decode", 2, 10000, 9.9)};
  f.stats.consumer_wait_seconds = 9;
  const Verdict v = Judge(f);
  ASSERT_TRUE(v.advice.empty());
  EXPECT_EQ(Conclude(v, f).next,
            "more cores (decoding scales with them), or smaller stored images");
}

}  // namespace
}  // namespace stoke::internal

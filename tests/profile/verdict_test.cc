// The verdict on made-up runs: the lowest capacity bounds the run, advice
// predicts the next bound, and a device that serves one request at a time gets
// no advice to send it more; and the conclusion drawn from it (the profile's
// last lines) names what it found, with its figures, and what to try next.
#include "profile/verdict.h"

#include <gtest/gtest.h>

#include "profile/conclusion.h"

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
  f.stats.batches = 1000;
  f.cores = 8;
  f.options.read_threads = 4;
  f.options.decode_threads = 2;
  f.stored_bytes_per_sample = 100000;
  f.file_per_sample = true;
  return f;
}

TEST(VerdictTest, ARunTooShortIsNotJudgedAndSaysHowManyBatchesItNeeds) {
  // A few samples in microseconds: the "384862 samples/s at 100% busy".
  RunFacts f = Facts();
  f.wall_seconds = 0.0003;
  f.samples = 96;
  f.stats.batches = 3;
  f.batches_per_epoch = 3;
  f.stats.stages = {Stage("read", 4, 96, 0.0001), Stage("decode", 2, 96, 0.0003)};
  Verdict v = Judge(f);
  EXPECT_EQ(v.bottleneck, "too short");
  EXPECT_TRUE(v.advice.empty());
  EXPECT_TRUE(v.stages.empty());
  EXPECT_NE(v.explanation.find("batches delivered: 3, in 0.000 s"), std::string::npos)
      << v.explanation;
  // 0.1 s at this run's 10000 batches/s: 1000 batches, 334 epochs of 3.
  EXPECT_NE(v.explanation.find("at least 1000 batches and 0.10 s"), std::string::npos)
      << v.explanation;
  EXPECT_NE(v.explanation.find("--epochs 334"), std::string::npos) << v.explanation;
  const Conclusion c = Conclude(v, f);
  EXPECT_NE(c.learned.find("too short"), std::string::npos) << c.learned;
  // Enough batches but too little time: still too short; the minimums judged.
  f.stats.batches = 300;
  f.wall_seconds = kMinJudgedSeconds / 2;
  EXPECT_EQ(Judge(f).bottleneck, "too short");
  f.wall_seconds = kMinJudgedSeconds;
  EXPECT_EQ(Judge(f).bottleneck, "decode");
}

TEST(VerdictTest, TheDecodeStageAtFullUseBoundsTheRunAndMoreThreadsArePredicted) {
  RunFacts f = Facts();
  f.stats.stages = {Stage("read", 4, 10000, 2.5), Stage("decode", 2, 10000, 9.9)};
  f.stats.consumer_wait_seconds = 9;
  const Verdict v = Judge(f);
  EXPECT_EQ(v.bottleneck, "decode");
  EXPECT_NEAR(v.starved_fraction, 0.9, 1e-9);
  ASSERT_FALSE(v.advice.empty());
  EXPECT_NE(v.advice[0].what.find("--decode-threads from 2 to 8"), std::string::npos);
  // 4x the decoders would decode 4040/s, but the readers top out at 4000/s.
  EXPECT_NEAR(v.advice[0].predicted_samples_per_second, 4000, 1);
}

TEST(VerdictTest, JpegsThatDecodeFasterPackedAreAdvisedToBePacked) {
  RunFacts f = Facts();
  f.cores = 2;  // no more decode threads to give
  f.stats.stages = {Stage("read", 4, 10000, 2.5), Stage("decode", 2, 10000, 9.9)};
  f.stats.consumer_wait_seconds = 9;
  f.ceilings.decode_samples_per_second_per_core = 500;
  f.ceilings.decode_samples_per_second_per_core_packed = 750;
  Verdict v = Judge(f);
  ASSERT_EQ(v.advice.size(), 1u);
  EXPECT_NE(v.advice[0].what.find("stoke pack"), std::string::npos) << v.advice[0].what;
  EXPECT_NE(v.advice[0].what.find("750 samples/s instead of 500"), std::string::npos);
  // Decoding at 1010/s now (1000 per 9.9 s of each of 2 threads), 1.5x that.
  EXPECT_NEAR(v.advice[0].predicted_samples_per_second, 1515, 1);
  f.ceilings.decode_samples_per_second_per_core_packed = 0;  // nothing to gain: no advice
  v = Judge(f);
  EXPECT_TRUE(v.advice.empty());
}

TEST(VerdictTest, ADecodeBoundRunSaysHowCloseToTheEntropyFloorAndWhereTheRestGoes) {
  // One core: 2000 samples/s whole, 4000 in libjpeg alone, 8000 Huffman only:
  // 500 us a sample, 125 of them Huffman decoding, 125 the rest of libjpeg and
  // 250 resampling and colour.
  RunFacts f = Facts();
  f.cores = 2;
  f.stats.stages = {Stage("read", 4, 10000, 2.5), Stage("decode", 2, 10000, 9.9)};
  f.stats.consumer_wait_seconds = 9;
  f.ceilings.decode_samples_per_second_per_core = 2000;
  f.ceilings.codec_samples_per_second_per_core = 4000;
  f.ceilings.entropy_floor_samples_per_second_per_core = 8000;
  Verdict v = Judge(f);
  ASSERT_EQ(v.bottleneck, "decode");
  EXPECT_NE(v.explanation.find("0.25 of the entropy floor (8000 samples/s"), std::string::npos)
      << v.explanation;
  EXPECT_NE(v.explanation.find("of its 500 us a sample, 125 go to Huffman decoding, 125 to the "
                               "rest of libjpeg's decode (IDCT) and 250 to resampling"),
            std::string::npos)
      << v.explanation;
  EXPECT_EQ(v.explanation.find("only fewer bytes per image"), std::string::npos) << v.explanation;
  // Measured noise puts libjpeg alone below the whole decode: no negative part.
  f.ceilings.codec_samples_per_second_per_core = 1900;
  v = Judge(f);
  EXPECT_NE(v.explanation.find("375 to the rest of libjpeg's decode (IDCT) and 0 to resampling"),
            std::string::npos)
      << v.explanation;
  // At 0.8 of the floor and above, only fewer bytes or another decoder help.
  f.ceilings.decode_samples_per_second_per_core = 6400;
  f.ceilings.codec_samples_per_second_per_core = 7000;
  v = Judge(f);
  EXPECT_NE(v.explanation.find("0.80 of the entropy floor"), std::string::npos) << v.explanation;
  EXPECT_NE(v.explanation.find("only fewer bytes per image, or another decoder, go faster"),
            std::string::npos)
      << v.explanation;
}

TEST(VerdictTest, TheBoundingStageDecodesAtLeastAtTheSteadyRateAndPredictionsScaleThat) {
  // The decoders' busy time includes the run's start (pages of the ring first
  // touched, cold caches): 1010/s by busy time, but the run's second half
  // delivered 1100/s. Packing's 1.5x is of what the stage sustains.
  RunFacts f = Facts();
  f.cores = 2;
  f.stats.stages = {Stage("read", 4, 10000, 2.5), Stage("decode", 2, 10000, 9.9)};
  f.stats.consumer_wait_seconds = 9;
  f.ceilings.decode_samples_per_second_per_core = 500;
  f.ceilings.decode_samples_per_second_per_core_packed = 750;
  f.steady_samples_per_second = 1100;
  Verdict v = Judge(f);
  EXPECT_EQ(v.bottleneck, "decode");
  EXPECT_NE(v.explanation.find("capacity 1100 samples/s"), std::string::npos) << v.explanation;
  ASSERT_EQ(v.advice.size(), 1u);
  EXPECT_NEAR(v.advice[0].predicted_samples_per_second, 1650, 1);
  // A steady rate below the busy-time capacity changes nothing.
  f.steady_samples_per_second = 900;
  v = Judge(f);
  ASSERT_EQ(v.advice.size(), 1u);
  EXPECT_NEAR(v.advice[0].predicted_samples_per_second, 1515, 1);
}

TEST(VerdictTest, ReadsOnASingleHeadDiskAreNotAdvisedMoreRequests) {
  RunFacts f = Facts();
  f.stats.stages = {Stage("read", 4, 1200, 9.9), Stage("decode", 2, 1200, 0.6)};
  f.samples = 1200;
  f.storage_model = "hdd";
  f.ceilings.storage_sequential_bytes_per_second = 160e6;
  f.ceilings.storage_random_reads_per_second = 120;
  f.ceilings.storage_random_reads_per_second_parallel = 121;
  const Verdict v = Judge(f);
  EXPECT_EQ(v.bottleneck, "read");
  for (const Advice& a : v.advice) EXPECT_EQ(a.what.find("--read-threads"), std::string::npos);
  ASSERT_FALSE(v.advice.empty());
  EXPECT_NE(v.advice[0].what.find("shards"), std::string::npos);
  // Windows of 8 MiB of 100 kB samples: 52.4 ms of transfer at 160 MB/s plus
  // one request's overhead (a random read, 8.3 ms, less its 0.6 ms transfer).
  const double window = 8 << 20;
  EXPECT_NEAR(v.advice[0].predicted_samples_per_second,
              (window / 1e5) / (window / 160e6 + (1 / 120.0 - 1e5 / 160e6)), 1);
  // A device that serves reads in parallel is advised more of them.
  f.ceilings.storage_random_reads_per_second_parallel = 900;
  bool more_reads = false;
  for (const Advice& a : Judge(f).advice) more_reads |= a.what.starts_with("raise --read-threads");
  EXPECT_TRUE(more_reads);
}

// Packed shards of 100 kB samples in a store that answers in 30 ms, read in
// full shuffle, reading at full use and decoding (5000 samples/s) a fifth busy.
RunFacts StoreFacts() {
  RunFacts f = Facts();
  f.file_per_sample = false;
  f.remote = true;
  f.options.order = Order::kFullShuffle;
  f.samples = 10000;
  f.stats.stages = {Stage("read", 1, 10000, 9.9), Stage("decode", 2, 10000, 2.0)};
  f.ceilings.storage_sequential_bytes_per_second = 30e6;
  f.ceilings.storage_random_reads_per_second = 33;
  f.ceilings.remote_first_byte_p50_seconds = 0.030;
  f.ceilings.remote_first_byte_p99_seconds = 0.045;
  f.ceilings.remote_requests_per_second_parallel = 2100;
  return f;
}

TEST(VerdictTest, AStoreReadWithTooFewRequestsInFlightIsAdvisedLittlesLaw) {
  // Packed shards in a store that answers in 30 ms, read in full shuffle with
  // 32 requests in flight: at most 32 / 0.03 = 1067 samples/s, while decoding
  // would take 5000: 5000 x 0.03 x 1.5 = 225 in flight are advised.
  RunFacts f = StoreFacts();
  f.options.reads_in_flight = 32;
  f.ceilings.storage_random_reads_per_second_parallel = 260;
  const Verdict v = Judge(f);
  EXPECT_EQ(v.bottleneck, "read");
  ASSERT_FALSE(v.advice.empty());
  EXPECT_NE(v.advice[0].what.find("--reads-in-flight 225"), std::string::npos) << v.advice[0].what;
  EXPECT_NE(v.advice[0].what.find("30 ms (p50)"), std::string::npos) << v.advice[0].what;
  // The store's parallel rate, scaled to 225 in flight, above the decode's 5000.
  EXPECT_NEAR(v.advice[0].predicted_samples_per_second, 5000, 1);
  // Enough in flight already: no such advice; a local disk is never advised it.
  f.options.reads_in_flight = 256;
  for (const Advice& a : Judge(f).advice) EXPECT_EQ(a.what.find("in flight"), std::string::npos);
  f.options.reads_in_flight = 32;
  f.remote = false;
  for (const Advice& a : Judge(f).advice) {
    EXPECT_EQ(a.what.find("keep more requests"), std::string::npos);
  }
}

TEST(VerdictTest, AStoreReadInFullShuffleIsAdvisedQuasiOrderAndMoreWindowsInFlight) {
  // 100 kB samples in a store at 30 ms and 100 MB/s a connection: a window of
  // 8 MiB takes 0.030 + 0.0839 s, so 4 in flight read 4 x 83.9 / 0.1139 =
  // 2946 samples/s; a GET per sample with few in flight reads 1000.
  RunFacts f = StoreFacts();
  f.options.reads_in_flight = 256;
  f.ceilings.remote_connection_bytes_per_second = 100e6;
  const double window = 8 << 20;
  const double expected = 4 * (window / 1e5) / (0.030 + window / 100e6);
  EXPECT_NEAR(RemoteWindowReadRate(f.ceilings, 1e5, window, 4), expected, 1e-6);
  EXPECT_EQ(RemoteWindowReadRate(f.ceilings, 1e5, window, 0), 0);
  Verdict v = Judge(f);
  ASSERT_FALSE(v.advice.empty());
  EXPECT_NE(v.advice[0].what.find("--shuffle quasi"), std::string::npos) << v.advice[0].what;
  EXPECT_NEAR(v.advice[0].predicted_samples_per_second, expected, 1);
  // In quasi order, read-bound: twice the windows in flight, twice the rate,
  // up to the decode stage's 5000 samples/s.
  f.options.order = Order::kQuasiRandom;
  v = Judge(f);
  ASSERT_FALSE(v.advice.empty());
  EXPECT_NE(v.advice[0].what.find("--read-threads 8"), std::string::npos) << v.advice[0].what;
  EXPECT_NEAR(v.advice[0].predicted_samples_per_second, std::min(2 * expected, 5000.0), 1);
}

TEST(VerdictTest, AdviceNamesTheCommandsThatFollowIt) {
  RunFacts f = Facts();
  f.stats.stages = {Stage("read", 4, 1200, 9.9), Stage("decode", 2, 1200, 0.6)};
  f.samples = 1200;
  f.options.order = Order::kFullShuffle;
  f.ceilings.storage_sequential_bytes_per_second = 160e6;
  f.ceilings.storage_random_reads_per_second = 120;
  f.pack = "stoke pack /d /d.shards";
  f.rerun_packed = "stoke profile /d.shards --shuffle quasi";
  f.rerun_quasi = "stoke profile /d --shuffle quasi";
  Verdict v = Judge(f);
  ASSERT_FALSE(v.advice.empty());
  EXPECT_NE(v.advice[0].what.find("--shuffle quasi"), std::string::npos) << v.advice[0].what;
  EXPECT_EQ(v.advice[0].commands, (std::vector<std::string>{f.pack, f.rerun_packed}));
  // Already in records (shards): no pack, the same data in quasi order.
  f.file_per_sample = false;
  v = Judge(f);
  ASSERT_FALSE(v.advice.empty());
  EXPECT_EQ(v.advice[0].commands, (std::vector<std::string>{f.rerun_quasi}));
  // Read in order: packing keeps the order, and quasi is not advised.
  f.options.order = Order::kSequential;
  for (const Advice& a : Judge(f).advice) EXPECT_EQ(a.what.find("quasi"), std::string::npos);
}

TEST(VerdictTest, ARingTooSmallForTheThreadsIsNamedAndMoreSlotsAdvised) {
  // 16 decoders each 25% busy, the dispatcher waiting for a free slot 90% of
  // the run, the consumer starved: the ring, not a stage, bounds the run.
  RunFacts f = Facts();
  f.cores = 16;
  f.options.decode_threads = 16;
  f.options.ring_slots = 4;
  f.options.batch_size = 32;
  f.stats.stages = {Stage("dispatch", 1, 0, 0), Stage("read", 4, 10000, 1),
                    Stage("decode", 16, 10000, 2.5)};
  f.stats.stages[0].threads[0].blocked_seconds = 9;
  f.stats.consumer_wait_seconds = 8;
  f.stats.batches = 300;
  Verdict v = Judge(f);
  EXPECT_EQ(v.bottleneck, "ring");
  EXPECT_NE(v.explanation.find("4 slots of 32 samples"), std::string::npos) << v.explanation;
  ASSERT_EQ(v.advice.size(), 1u);
  EXPECT_NE(v.advice[0].what.find("--ring-slots from 4 to 16"), std::string::npos)
      << v.advice[0].what;
  // The decoders would then bound it: 10000 samples per 2.5 s of 16 threads.
  EXPECT_NEAR(v.advice[0].predicted_samples_per_second, 4000, 1);
  // A run of two batches is all start: not judged on the ring.
  f.stats.batches = 2;
  EXPECT_NE(Judge(f).bottleneck, "ring");
  f.stats.batches = 300;
  // Starved at the start, then the ring full behind a slow consumer: the two
  // barely overlap, so not the ring either.
  f.stats.consumer_wait_seconds = 4;
  f.stats.stages[0].threads[0].blocked_seconds = 6;
  EXPECT_NE(Judge(f).bottleneck, "ring");
  // A busy stage is the bottleneck, however full the ring.
  f.stats.consumer_wait_seconds = 8;
  f.stats.stages[0].threads[0].blocked_seconds = 9;
  f.stats.stages[2] = Stage("decode", 16, 10000, 9.5);
  EXPECT_EQ(Judge(f).bottleneck, "decode");
}

TEST(VerdictTest, ASlowStepBoundsTheRunAndNothingUpstreamIsAdvised) {
  RunFacts f = Facts();
  f.stats.stages = {Stage("read", 4, 10000, 1), Stage("decode", 2, 10000, 3)};
  f.has_step = true;
  f.step_busy_seconds = 9.5;
  f.stats.batches = 100;
  const Verdict v = Judge(f);
  EXPECT_EQ(v.bottleneck, "consumer");
  EXPECT_TRUE(v.advice.empty());
  EXPECT_NE(v.explanation.find("95.00 ms per batch"), std::string::npos) << v.explanation;
}

// ---- The conclusion: the profile's last two lines ----

RunFacts ConclusionFacts() {
  RunFacts f = Facts();
  f.cores = 2;
  f.stats.samples = 10000;
  f.stats.bytes = 10000 * 150528;
  return f;
}

TEST(ConclusionTest, ADecodeBoundRunPointsAtAdviceOneAndItsCommands) {
  RunFacts f = ConclusionFacts();
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
  RunFacts f = ConclusionFacts();
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
  RunFacts f = ConclusionFacts();
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
  RunFacts f = ConclusionFacts();
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

// The loader's sizing policy, case by case: samples per task, tickets, read
// buffers and the automatic ring, as pure arithmetic.
#include "loader/sizing.h"

#include <gtest/gtest.h>

#include "ring/ring.h"

namespace stoke::internal {
namespace {

// Packed JPEG shards: records of about 38 KB decoded to 224x224x3.
SizingInput JpegShards(int64_t batch, int decode_threads, bool uring) {
  SizingInput in;
  in.options.batch_size = batch;
  in.options.decode_threads = decode_threads;
  in.sample_bytes = 224 * 224 * 3;
  in.first_length = 38000;
  in.longest = 60000;
  in.direct_reads = true;
  in.pack_run_buffers = true;
  in.uring = uring;
  return in;
}

TEST(SizingTest, AutomaticDecodeThreadsLeaveACoreToTheGpusFeeder) {
  EXPECT_EQ(AutoDecodeThreads(false, 16, DeviceKind::kCuda), 0);  // decoding is a copy
  EXPECT_EQ(AutoDecodeThreads(false, 16, DeviceKind::kCpu), 0);
  EXPECT_EQ(AutoDecodeThreads(true, 16, DeviceKind::kCpu), 16);
  EXPECT_EQ(AutoDecodeThreads(true, 16, DeviceKind::kCuda), 15);
  EXPECT_EQ(AutoDecodeThreads(true, 1, DeviceKind::kCuda), 1);  // never none
  EXPECT_EQ(AutoDecodeThreads(true, 0, DeviceKind::kCpu), 1);   // cores unknown
}

TEST(SizingTest, RawSamplesReadStraightIntoTheSlotTakeAWholeBatchATask) {
  SizingInput in;
  in.options.batch_size = 32;
  in.options.decode_threads = 0;
  in.sample_bytes = in.first_length = in.longest = 30;  // IDX 6x5
  const Sizing s = ComputeSizing(in);
  EXPECT_EQ(s.samples_per_task, 32);      // 256 KiB would be 64 samples; a batch is 32
  EXPECT_EQ(s.tickets, 8);                // 2 per read thread
  EXPECT_EQ(s.read_buffer_capacity, 0u);  // no arena
  EXPECT_EQ(s.ring_slots, 8 + 3);         // 256 samples in flight span 8 batches
}

TEST(SizingTest, ManyDecodeThreadsOnSmallBatchesGetARingThatHoldsTheirWork) {
  // 16 decoders: 32 tasks of 6 records (256 KiB / 38 KB) in flight, 192 samples.
  Sizing s = ComputeSizing(JpegShards(32, 16, true));
  EXPECT_EQ(s.samples_per_task, 6);
  EXPECT_EQ(s.tickets, 32);
  EXPECT_EQ(s.read_buffer_capacity, 60000u);
  EXPECT_EQ(s.ring_slots, 6 + 3);
  // Batches of 256: the same work spans one batch; the minimum of 4.
  s = ComputeSizing(JpegShards(256, 16, true));
  EXPECT_EQ(s.ring_slots, 4);
  // io_uring without decoders: 128 samples deep (22 tasks of 6).
  s = ComputeSizing(JpegShards(32, 0, true));
  EXPECT_EQ(s.tickets, 22);
  s = ComputeSizing(JpegShards(32, 0, false));
  EXPECT_EQ(s.tickets, 8);
}

TEST(SizingTest, TheAutomaticRingStaysWithinAnEighthOfTheBudgetAboveFourSlots) {
  SizingInput in = JpegShards(32, 64, true);        // 128 tasks: 768 samples, 24 batches
  EXPECT_EQ(ComputeSizing(in).ring_slots, 24 + 3);  // 1 GiB holds them
  in.options.memory_budget_bytes = uint64_t{512} << 20;
  const uint64_t per_slot = Ring::BytesFor(1, 32, 224 * 224 * 3);
  const auto fit = static_cast<int>((uint64_t{512} << 20) / 8 / per_slot);  // 13 of 4.8 MB
  ASSERT_GT(fit, 4);
  ASSERT_LT(fit, 24 + 3);
  EXPECT_EQ(ComputeSizing(in).ring_slots, fit);
  in.options.memory_budget_bytes = 1 << 20;  // not even 4 fit: still 4 (Open then refuses)
  EXPECT_EQ(ComputeSizing(in).ring_slots, 4);
  in.options.ring_slots = 7;  // given: kept
  EXPECT_EQ(ComputeSizing(in).ring_slots, 7);
}

TEST(SizingTest, BlockOrderRunsAreAsLongAsABlockAndGivenFiguresWin) {
  SizingInput in = JpegShards(256, 2, false);
  in.options.order = Order::kBlock;
  in.options.block_samples = 32;
  EXPECT_EQ(ComputeSizing(in).samples_per_task, 32);
  in.pack_run_buffers = false;  // kSkip: no packed runs, no longer runs
  EXPECT_EQ(ComputeSizing(in).samples_per_task, 6);
  in.options.samples_per_task = 10;
  in.options.reads_in_flight = 95;
  const Sizing s = ComputeSizing(in);
  EXPECT_EQ(s.samples_per_task, 10);
  EXPECT_EQ(s.tickets, 10);  // 95 samples, rounded up to whole tasks
}

TEST(SizingTest, LargeWholeFilesKeepTheAutomaticArenaBounded) {
  SizingInput in;
  in.options.batch_size = 8;
  in.options.decode_threads = 16;
  in.sample_bytes = 1000;
  in.first_length = in.longest = 64 << 20;  // files of up to 64 MiB
  in.whole_file = true;
  in.direct_reads = true;
  const Sizing s = ComputeSizing(in);
  EXPECT_EQ(s.samples_per_task, 1);  // 4 MiB of buffers a task allows one
  EXPECT_EQ(s.tickets, 3);           // 256 MiB of arena / (64 MiB + 1) per ticket
  EXPECT_EQ(s.read_buffer_capacity, (uint64_t{64} << 20) + 1);
}

}  // namespace
}  // namespace stoke::internal

// The ring's protocol (ring/protocol.h) on its own: slots are taken in the
// order claimed whatever order they finish in; a full ring claims nothing; a
// consumer holding every lease is refused instead of waiting forever; cancel
// and the sticky error end every wait; reset frees all but the leased; and
// under threads, no slot is ever held by two parties.
#include "ring/protocol.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "ring/fifo.h"

namespace stoke::internal {
namespace {

using Took = RingProtocol::Took;
using namespace std::chrono_literals;

TEST(FifoTest, KeepsOrderAcrossTheWrapAndDropsTheNewest) {
  Fifo<int> q(3);
  q.Push(1);
  q.Push(2);
  EXPECT_EQ(q.Pop(), 1);
  q.Push(3);
  q.Push(4);  // wraps
  EXPECT_TRUE(q.full());
  EXPECT_EQ(q.Back(), 4);
  q.PopBack();
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.Pop(), 2);
  EXPECT_EQ(q.Front(), 3);
  q.Clear();
  EXPECT_TRUE(q.empty());
}

TEST(RingProtocolTest, TakesInClaimOrderWhateverOrderBatchesFinishIn) {
  RingProtocol ring(3, RingProtocol::Reuse::kOldestFirst);
  const int a = ring.TryClaim(), b = ring.TryClaim(), c = ring.TryClaim();
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(c, 2);
  EXPECT_EQ(ring.TryClaim(), -1);  // full
  EXPECT_EQ(ring.Publish(c), 1);
  EXPECT_EQ(ring.Publish(b), 2);
  // The head (a) is not ready: a taker waits, though b and c are.
  auto taken = std::async(std::launch::async, [&] {
    int slot = -1;
    EXPECT_EQ(ring.Take(&slot, true), Took::kSlot);
    return slot;
  });
  EXPECT_EQ(taken.wait_for(50ms), std::future_status::timeout);
  ring.Publish(a);
  EXPECT_EQ(taken.get(), a);
  int slot = -1;
  EXPECT_EQ(ring.Take(&slot, true), Took::kSlot);
  EXPECT_EQ(slot, b);
  EXPECT_EQ(ring.Take(&slot, true), Took::kSlot);
  EXPECT_EQ(slot, c);
  EXPECT_EQ(ring.leased(), 3);
}

TEST(RingProtocolTest, ReleasedSlotsAreClaimedOldestOrNewestFirstAsAsked) {
  for (const auto reuse : {RingProtocol::Reuse::kOldestFirst, RingProtocol::Reuse::kNewestFirst}) {
    RingProtocol ring(3, reuse);
    for (int i = 0; i < 3; ++i) ring.Publish(ring.TryClaim());
    int s0, s1, s2;
    ring.Take(&s0, true);
    ring.Take(&s1, true);
    ring.Take(&s2, true);
    EXPECT_EQ(s0, 0);  // the first claims take the slots in index order
    EXPECT_EQ(s2, 2);
    ring.Release(s2);
    ring.Release(s0);
    const bool oldest = reuse == RingProtocol::Reuse::kOldestFirst;
    EXPECT_EQ(ring.TryClaim(), oldest ? s2 : s0);
    EXPECT_EQ(ring.Claim(), oldest ? s0 : s2);
    EXPECT_EQ(ring.TryClaim(), -1);
  }
}

TEST(RingProtocolTest, AConsumerHoldingEveryLeaseIsRefusedOrWaitsUntilCancelled) {
  RingProtocol ring(2, RingProtocol::Reuse::kOldestFirst);
  for (int i = 0; i < 2; ++i) ring.Publish(ring.TryClaim());
  int slot;
  ring.Take(&slot, true);
  ring.Take(&slot, true);
  EXPECT_EQ(ring.Take(&slot, /*refuse_if_all_leased=*/true), Took::kAllLeased);
  // Another party's consumer (the copy engine) waits for releases instead.
  auto waiting = std::async(std::launch::async, [&] {
    int s = -1;
    return ring.Take(&s, /*refuse_if_all_leased=*/false);
  });
  EXPECT_EQ(waiting.wait_for(50ms), std::future_status::timeout);
  ring.Cancel();
  EXPECT_EQ(waiting.get(), Took::kCancelled);
  EXPECT_EQ(ring.Claim(), -1);  // cancelled too
  ring.Resume();
  ring.Release(slot);
  EXPECT_EQ(ring.Claim(), slot);
}

TEST(RingProtocolTest, TheFirstErrorIsStickyAndEndsEveryWait) {
  RingProtocol ring(2, RingProtocol::Reuse::kOldestFirst);
  const int a = ring.TryClaim();
  const int b = ring.TryClaim();
  auto claimer = std::async(std::launch::async, [&] { return ring.Claim(); });
  auto taker = std::async(std::launch::async, [&] {
    int s;
    return ring.Take(&s, true);
  });
  EXPECT_EQ(claimer.wait_for(50ms), std::future_status::timeout);
  ring.SetError(DataLossError("first"));
  ring.SetError(DataLossError("second"));
  EXPECT_EQ(claimer.get(), -1);
  EXPECT_EQ(taker.get(), Took::kFailed);
  ring.Publish(a);  // a batch ready does not hide the error
  ring.Publish(b);
  int s;
  EXPECT_EQ(ring.Take(&s, true), Took::kFailed);
  EXPECT_EQ(ring.error().message(), "first");
}

TEST(RingProtocolTest, ResetFreesAllButTheLeasedAndDropsTheSchedule) {
  RingProtocol ring(4, RingProtocol::Reuse::kOldestFirst);
  for (int i = 0; i < 3; ++i) ring.Publish(ring.TryClaim());
  int leased;
  ring.Take(&leased, true);
  const int claimed = ring.TryClaim();  // claimed, never published
  ring.Reset();
  EXPECT_EQ(ring.leased(), 1);
  // Three free (the two ready and the claimed one), none scheduled: a taker
  // has nothing until a new claim is published.
  std::vector<int> claims;
  for (int c; (c = ring.TryClaim()) >= 0;) claims.push_back(c);
  EXPECT_EQ(claims.size(), 3u);
  EXPECT_NE(std::find(claims.begin(), claims.end(), claimed), claims.end());
  ring.Publish(claims[1]);
  auto taker = std::async(std::launch::async, [&] {
    int s = -1;
    ring.Take(&s, false);
    return s;
  });
  EXPECT_EQ(taker.wait_for(50ms), std::future_status::timeout);
  ring.Publish(claims[0]);
  EXPECT_EQ(taker.get(), claims[0]);
  ring.Release(leased);  // a lease from before the reset still returns
  EXPECT_EQ(ring.leased(), 1);
}

TEST(RingProtocolTest, UnclaimGivesTheNewestClaimBack) {
  RingProtocol ring(2, RingProtocol::Reuse::kOldestFirst);
  const int a = ring.TryClaim();
  const int b = ring.TryClaim();
  ring.Unclaim(b);
  ring.Publish(a);
  int s;
  EXPECT_EQ(ring.Take(&s, true), Took::kSlot);
  EXPECT_EQ(s, a);
  EXPECT_EQ(ring.TryClaim(), b);
}

// Producers finish batches in random order on several threads; the consumer
// must see every batch once, in order, and no slot may be written while taken.
TEST(RingProtocolTest, UnderThreadsBatchesArriveInOrderAndSlotsAreNeverShared) {
  constexpr int kSlots = 4;
  constexpr int kBatches = 4000;
  RingProtocol ring(kSlots, RingProtocol::Reuse::kNewestFirst);
  std::vector<std::atomic<int>> owner(kSlots);  // 0 free, 1 producer, 2 consumer
  std::vector<int64_t> batch_of(kSlots, -1);    // written by the producer of the slot
  std::atomic<bool> shared{false};
  std::mutex claim_mu;  // claims in batch order, as dispatch makes them
  int64_t next_batch = 0;
  auto produce = [&](unsigned seed) {
    std::mt19937 random(seed);
    while (true) {
      int slot;
      int64_t batch;
      {
        std::lock_guard<std::mutex> lock(claim_mu);
        if (next_batch == kBatches) return;
        slot = ring.Claim();
        if (slot < 0) return;
        batch = next_batch++;
      }
      if (owner[slot].exchange(1) != 0) shared = true;
      batch_of[slot] = batch;
      if (random() % 4 == 0) std::this_thread::yield();
      owner[slot].store(0);
      ring.Publish(slot);
    }
  };
  std::vector<std::thread> producers;
  for (unsigned i = 0; i < 3; ++i) producers.emplace_back(produce, i + 1);
  for (int64_t expect = 0; expect < kBatches; ++expect) {
    int slot = -1;
    ASSERT_EQ(ring.Take(&slot, true), Took::kSlot);
    if (owner[slot].exchange(2) != 0) shared = true;
    ASSERT_EQ(batch_of[slot], expect);
    owner[slot].store(0);
    ring.Release(slot);
  }
  ring.Cancel();
  for (std::thread& t : producers) t.join();
  EXPECT_FALSE(shared);
}

}  // namespace
}  // namespace stoke::internal

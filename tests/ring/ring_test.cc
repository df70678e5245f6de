// The ring on its own (ring/ring.h): slots laid out without overlap, each part
// page-aligned, in exactly the bytes BytesFor budgets; an allocation failure is
// the memory's error; a slot keeps the lowest failing position and hands its
// skips over once; clearing readies it for the next batch.
#include "ring/ring.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace stoke::internal {
namespace {

bool PageAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kHostPage == 0; }

TEST(RingTest, SlotsAreDisjointPageAlignedAndWithinTheBudgetedBytes) {
  constexpr int kSlots = 5;
  constexpr int64_t kBatch = 7;
  constexpr size_t kSample = 1000;  // not a multiple of a page
  auto ring = Ring::Create(kSlots, kBatch, kSample, AlignedHostMemory());
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_EQ((*ring)->size(), kSlots);
  EXPECT_EQ((*ring)->bytes(), Ring::BytesFor(kSlots, kBatch, kSample));
  // Fill every part of every slot with its own byte, then check none was
  // overwritten by a neighbour.
  for (int s = 0; s < kSlots; ++s) {
    Slot& slot = (*ring)->slot(s);
    EXPECT_TRUE(PageAligned(slot.data) && PageAligned(slot.labels) && PageAligned(slot.indices));
    std::memset(slot.data, 3 * s + 1, kBatch * kSample);
    std::memset(slot.labels, 3 * s + 2, kBatch * sizeof(int64_t));
    std::memset(slot.indices, 3 * s + 3, kBatch * sizeof(uint64_t));
  }
  for (int s = 0; s < kSlots; ++s) {
    const Slot& slot = (*ring)->slot(s);
    auto all = [](const void* p, size_t n, int v) {
      const auto* b = static_cast<const unsigned char*>(p);
      for (size_t i = 0; i < n; ++i) {
        if (b[i] != static_cast<unsigned char>(v)) return false;
      }
      return true;
    };
    EXPECT_TRUE(all(slot.data, kBatch * kSample, 3 * s + 1)) << "slot " << s;
    EXPECT_TRUE(all(slot.labels, kBatch * sizeof(int64_t), 3 * s + 2)) << "slot " << s;
    EXPECT_TRUE(all(slot.indices, kBatch * sizeof(uint64_t), 3 * s + 3)) << "slot " << s;
    const auto* begin = reinterpret_cast<const std::byte*>(slot.data);
    const auto* end = reinterpret_cast<const std::byte*>(slot.indices + kBatch);
    EXPECT_LE(static_cast<uint64_t>(end - begin), (*ring)->bytes() / kSlots);
  }
}

// Memory that refuses every allocation.
class NoMemory final : public HostMemory {
 public:
  StatusOr<std::byte*> Allocate(size_t bytes) override {
    return ResourceExhaustedError("no memory for " + std::to_string(bytes) + " bytes");
  }
  void Free(std::byte*, size_t) override {}
};

TEST(RingTest, AnAllocationFailureIsTheMemorysError) {
  NoMemory none;
  auto ring = Ring::Create(2, 4, 64, &none);
  EXPECT_EQ(ring.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(ring.status().message().find(std::to_string(Ring::BytesFor(2, 4, 64))),
            std::string::npos)
      << ring.status();
}

TEST(SlotTest, TheLowestFailingPositionWinsWhateverTheOrder) {
  Slot slot;
  std::vector<std::thread> threads;
  for (int p : {9, 4, 12, 6}) {
    threads.emplace_back(
        [&slot, p] { slot.RecordError(p, DataLossError("position " + std::to_string(p))); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(slot.error().message(), "position 4");
  slot.ClearErrors();
  EXPECT_TRUE(slot.error().ok());
}

TEST(SlotTest, SkipsAreHandedOverOnceAndClearedForTheNextBatch) {
  Slot slot;
  slot.RecordSkip(17, DataLossError("bad 17"));
  slot.RecordSkip(3, DataLossError("bad 3"));
  std::vector<std::pair<uint64_t, Status>> out;
  slot.TakeSkips(&out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].first, 17u);
  EXPECT_EQ(out[1].second.message(), "bad 3");
  slot.TakeSkips(&out);
  EXPECT_EQ(out.size(), 2u);  // nothing twice
  slot.RecordSkip(5, DataLossError("bad 5"));
  slot.ClearErrors();
  slot.TakeSkips(&out);
  EXPECT_EQ(out.size(), 2u);  // cleared with the batch
}

}  // namespace
}  // namespace stoke::internal

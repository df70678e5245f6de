// stoke/batch.h: one batch, a move-only lease on one ring slot.
//
// The batch's samples live in the loader's ring slot, written there in place by
// the loader's threads; nothing is copied to hand it over. Destroying the Batch
// (or calling Release) gives the slot back to the loader, which refills it with a
// later batch. Hold a batch only as long as the step that reads it: a ring of K
// slots stalls while the consumer holds K batches. A Batch must not outlive its
// Loader.
//
// Thread safety: a Batch may be moved to and released on another thread; one Batch
// object is not safe for concurrent use.
//
//   for (stoke::Batch& batch : loader->Epoch(0)) {
//     const uint8_t* pixels = batch.data<uint8_t>();   // size() x sample shape
//     std::span<const int64_t> labels = batch.labels();
//   }
#ifndef STOKE_BATCH_H_
#define STOKE_BATCH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "stoke/dataset.h"

namespace stoke {

namespace internal {
// Implemented by the loader: takes a slot back.
class SlotOwner {
 public:
  virtual void ReleaseSlot(int slot) = 0;

 protected:
  ~SlotOwner() = default;
};
}  // namespace internal

class Batch {
 public:
  // An empty batch: what Loader::Next returns at the end of an epoch.
  Batch() = default;
  Batch(Batch&& other) noexcept { *this = std::move(other); }
  Batch& operator=(Batch&& other) noexcept;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch() { Release(); }

  // False for an empty batch (end of epoch) and after Release.
  explicit operator bool() const { return owner_ != nullptr; }

  // Samples in the batch: batch_size, or fewer for an epoch's last batch.
  int64_t size() const { return size_; }
  int64_t epoch() const { return epoch_; }
  // The batch's number within its epoch.
  int64_t index() const { return index_; }
  // {size(), sample dims...}, e.g. {32, 28, 28}.
  std::span<const int64_t> shape() const { return {shape_.data(), static_cast<size_t>(rank_)}; }
  DType dtype() const { return dtype_; }
  size_t bytes() const { return bytes_; }

  // The samples, contiguous, C order, native byte order. Valid until Release.
  const void* data() const { return data_; }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  // One label per sample.
  std::span<const int64_t> labels() const { return {labels_, static_cast<size_t>(size_)}; }
  // The dataset index of each sample (after any skip-and-refill).
  std::span<const uint64_t> indices() const { return {indices_, static_cast<size_t>(size_)}; }

  // Gives the slot back now. Idempotent.
  void Release();

 private:
  friend class LoaderImpl;
  internal::SlotOwner* owner_ = nullptr;
  int slot_ = -1;
  int64_t size_ = 0;
  int64_t epoch_ = 0;
  int64_t index_ = 0;
  // Up to 8 sample dimensions plus the batch dimension; no allocation per batch.
  std::array<int64_t, 9> shape_{};
  int rank_ = 0;
  DType dtype_ = DType::kUint8;
  size_t bytes_ = 0;
  const void* data_ = nullptr;
  const int64_t* labels_ = nullptr;
  const uint64_t* indices_ = nullptr;
};

}  // namespace stoke

#endif  // STOKE_BATCH_H_

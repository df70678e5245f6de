// The ring: K batch-sized slots allocated once, each holding a batch's samples,
// labels and dataset indices, written in place by the loader's threads. Knows
// nothing of CUDA: memory comes from a HostMemory (util/host_memory.h), which a
// device may implement with pinned memory. The readers' arena is io/arena.h.
//
// Thread safety: the memory is shared; who may write where is the loader's
// protocol (a slot belongs to one batch between its dispatch and its release).
#ifndef STOKE_SRC_RING_RING_H_
#define STOKE_SRC_RING_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "stoke/status.h"
#include "util/host_memory.h"

namespace stoke::internal {

struct Slot {
  std::byte* data = nullptr;    // batch_size x sample_bytes
  int64_t* labels = nullptr;    // batch_size
  uint64_t* indices = nullptr;  // batch_size

  // The batch it holds; written by the dispatcher before any of its samples is
  // submitted, read by the consumer after the batch is published.
  int64_t epoch = 0;
  int64_t batch = 0;
  int64_t size = 0;
  // Samples not yet finished; the thread that takes it to 0 publishes the batch.
  std::atomic<int64_t> remaining{0};

  // The failure of the lowest failing position, if any (ErrorPolicy::kFail).
  void RecordError(int64_t position, Status status);
  // A bad sample replaced in this batch (ErrorPolicy::kSkip). Allocates: the
  // error path only.
  void RecordSkip(uint64_t index, Status status);
  // Clears errors and skips for the next batch.
  void ClearErrors();
  Status error() const;
  // Moves this batch's skips to `out`, for when the batch is delivered.
  void TakeSkips(std::vector<std::pair<uint64_t, Status>>* out);

 private:
  mutable std::mutex error_mu_;
  int64_t error_position_ = -1;                     // guarded by error_mu_; -1 iff no error
  Status error_;                                    // guarded by error_mu_
  std::vector<std::pair<uint64_t, Status>> skips_;  // guarded by error_mu_
};

class Ring {
 public:
  // Allocates `slots` slots for batches of `batch_size` samples of `sample_bytes`.
  static StatusOr<std::unique_ptr<Ring>> Create(int slots, int64_t batch_size, size_t sample_bytes,
                                                HostMemory* memory);
  // Bytes a ring of this shape takes, for the budget check before allocating.
  static uint64_t BytesFor(int slots, int64_t batch_size, size_t sample_bytes);

  int size() const { return static_cast<int>(slots_.size()); }
  Slot& slot(int i) { return *slots_[i]; }
  size_t sample_bytes() const { return sample_bytes_; }
  uint64_t bytes() const { return buffer_.size(); }

 private:
  Ring() = default;
  HostBuffer buffer_;
  std::vector<std::unique_ptr<Slot>> slots_;
  size_t sample_bytes_ = 0;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_RING_RING_H_

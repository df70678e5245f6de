// The readers' arena: fixed read buffers, allocated once, for samples that
// cannot be read straight into their batch slot (and the quasi order's
// windows). Allocates nothing after Create.
//
// Thread safety: the memory is shared; which thread writes which buffer is
// its owner's protocol (a run's buffers belong to its ticket).
#ifndef STOKE_SRC_IO_ARENA_H_
#define STOKE_SRC_IO_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "util/host_memory.h"

namespace stoke::internal {

// `count` read buffers of `capacity` bytes each, every one 4096-aligned.
class Arena {
 public:
  static StatusOr<std::unique_ptr<Arena>> Create(int count, size_t capacity, HostMemory* memory);
  static uint64_t BytesFor(int count, size_t capacity);
  std::span<std::byte> buffer(int i) const {
    return {buffer_.data() + static_cast<size_t>(i) * stride_, capacity_};
  }
  // Buffers [ticket x per_run, (ticket + 1) x per_run) as one region.
  std::span<std::byte> run_region(int ticket, int per_run) const {
    const size_t first = static_cast<size_t>(ticket) * static_cast<size_t>(per_run);
    return {buffer_.data() + first * stride_,
            static_cast<size_t>(per_run - 1) * stride_ + capacity_};
  }
  uint64_t bytes() const { return buffer_.size(); }

 private:
  Arena() = default;
  HostBuffer buffer_;
  size_t capacity_ = 0;
  size_t stride_ = 0;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_IO_ARENA_H_

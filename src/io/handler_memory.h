// Per-request memory for Asio's operation objects, so that a read in flight
// allocates nothing. Each request has at most one asynchronous operation (a post,
// then a read) outstanding at a time, and Asio frees an operation's memory before
// calling its handler, so one block per request is enough; anything larger or
// overlapping falls back to the heap.
#ifndef STOKE_SRC_IO_HANDLER_MEMORY_H_
#define STOKE_SRC_IO_HANDLER_MEMORY_H_

#include <cstddef>
#include <memory>

namespace stoke::internal {

struct HandlerMemory {
  alignas(std::max_align_t) unsigned char storage[512];
  bool in_use = false;
};

template <typename T>
class HandlerAllocator {
 public:
  using value_type = T;
  explicit HandlerAllocator(HandlerMemory* memory) : memory_(memory) {}
  template <typename U>
  HandlerAllocator(const HandlerAllocator<U>& other) noexcept : memory_(other.memory_) {}

  T* allocate(size_t n) {
    if (!memory_->in_use && n * sizeof(T) <= sizeof(memory_->storage)) {
      memory_->in_use = true;
      return reinterpret_cast<T*>(memory_->storage);
    }
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) {
    if (reinterpret_cast<unsigned char*>(p) == memory_->storage) {
      memory_->in_use = false;
    } else {
      std::allocator<T>().deallocate(p, n);
    }
  }
  template <typename U>
  bool operator==(const HandlerAllocator<U>& other) const noexcept {
    return memory_ == other.memory_;
  }

 private:
  template <typename>
  friend class HandlerAllocator;
  HandlerMemory* memory_;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_IO_HANDLER_MEMORY_H_

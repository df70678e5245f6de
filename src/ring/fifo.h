// A first-in first-out queue of fixed capacity: its storage is allocated once,
// so pushing and popping never allocate. Not thread-safe; its owner's lock
// guards it.
#ifndef STOKE_SRC_RING_FIFO_H_
#define STOKE_SRC_RING_FIFO_H_

#include <cassert>
#include <cstddef>
#include <vector>

namespace stoke::internal {

template <typename T>
class Fifo {
 public:
  explicit Fifo(size_t capacity) : items_(capacity) {}

  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == items_.size(); }
  size_t capacity() const { return items_.size(); }

  // Precondition: not full.
  void Push(T item) {
    assert(!full());
    items_[(head_ + count_) % items_.size()] = item;
    ++count_;
  }
  // Precondition: not empty.
  const T& Front() const {
    assert(!empty());
    return items_[head_];
  }
  const T& Back() const {
    assert(!empty());
    return items_[(head_ + count_ - 1) % items_.size()];
  }
  T Pop() {
    assert(!empty());
    T item = items_[head_];
    head_ = (head_ + 1) % items_.size();
    --count_;
    return item;
  }
  // Removes the newest item (the one Back returns).
  void PopBack() {
    assert(!empty());
    --count_;
  }
  void Clear() {
    head_ = 0;
    count_ = 0;
  }

 private:
  std::vector<T> items_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_RING_FIFO_H_

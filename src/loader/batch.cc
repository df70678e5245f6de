#include "stoke/batch.h"

namespace stoke {

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = other.owner_;
    slot_ = other.slot_;
    size_ = other.size_;
    epoch_ = other.epoch_;
    index_ = other.index_;
    shape_ = other.shape_;
    rank_ = other.rank_;
    dtype_ = other.dtype_;
    bytes_ = other.bytes_;
    data_ = other.data_;
    labels_ = other.labels_;
    indices_ = other.indices_;
    other.owner_ = nullptr;
    other.slot_ = -1;
  }
  return *this;
}

void Batch::Release() {
  if (owner_) {
    owner_->ReleaseSlot(slot_);
    owner_ = nullptr;
    slot_ = -1;
  }
}

}  // namespace stoke

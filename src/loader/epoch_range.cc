#include "stoke/loader.h"

namespace stoke {

EpochRange Loader::Epoch(int64_t epoch) { return EpochRange(this, epoch); }

EpochRange::Iterator EpochRange::begin() {
  Position p = loader_->position();
  // At the end of the previous epoch: step over its end marker.
  if (p.epoch + 1 == epoch_ && p.batch == loader_->batches_in_epoch(p.epoch)) {
    StatusOr<Batch> marker = loader_->Next();
    if (!marker.ok()) throw Error(marker.status());
    p = loader_->position();
  }
  if (p.epoch != epoch_) {
    Status s = loader_->Seek({epoch_, 0});
    if (!s.ok()) throw Error(s);
  }
  Iterator it(loader_);
  ++it;
  return it;
}

EpochRange::Iterator& EpochRange::Iterator::operator++() {
  batch_.Release();
  StatusOr<Batch> next = loader_->Next();
  if (!next.ok()) throw Error(next.status());
  batch_ = std::move(next).value();
  return *this;
}

}  // namespace stoke

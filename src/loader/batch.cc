#include "stoke/batch.h"
#include "util/thread_role.h"

#include <string>

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
    channels_last_ = other.channels_last_;
    bytes_ = other.bytes_;
    data_ = other.data_;
    labels_ = other.labels_;
    indices_ = other.indices_;
    device_labels_ = other.device_labels_;
    device_ = other.device_;
    streams_ = other.streams_;
    stream_count_ = other.stream_count_;
    other.owner_ = nullptr;
    other.slot_ = -1;
  }
  return *this;
}

Status Batch::MakeStreamWait(CUstream_st* stream) {
  if (!owner_) return InvalidArgumentError("Batch::MakeStreamWait: the batch is empty or released");
  const bool known =
      (stream_count_ > 0 && streams_[0] == stream) || (stream_count_ > 1 && streams_[1] == stream);
  if (!known && stream_count_ == 2) {
    return InvalidArgumentError(
        "Batch::MakeStreamWait: a third stream; a batch is guarded on at most two (its images' "
        "and its labels'): make the others wait on one of those");
  }
  internal::InStokeCall call;
  Status status = owner_->MakeStreamWait(slot_, stream);
  // The release guards the buffer on this stream only once it waits on it.
  if (status.ok() && !known) streams_[stream_count_++] = stream;
  return status;
}

Status Batch::CopyToHost(Span<std::byte> out) const {
  if (!owner_) return InvalidArgumentError("Batch::CopyToHost: the batch is empty or released");
  if (out.size() < bytes_) {
    return InvalidArgumentError("Batch::CopyToHost: " + std::to_string(out.size()) +
                                " bytes cannot hold the batch's " + std::to_string(bytes_));
  }
  internal::InStokeCall call;
  return owner_->CopyToHost(slot_, out.data(), bytes_);
}

void Batch::Release() {
  if (owner_) {
    internal::InStokeCall call;  // the release may start work into the slot
    if (stream_count_ == 2) owner_->JoinStreams(slot_, streams_[0], streams_[1]);
    owner_->ReleaseLease(slot_, streams_[0]);  // null (the legacy stream) if none
    owner_ = nullptr;
    slot_ = -1;
    streams_ = {};
    stream_count_ = 0;
  }
}

}  // namespace stoke

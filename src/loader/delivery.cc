// LoaderImpl, part 4 of 4: delivery. Next, the copy engine's slot source,
// seeking and statistics (loader_impl.h).
#include "loader/loader_impl.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "loader/resolve.h"
#include "util/thread_role.h"
#include "util/trace.h"

namespace stoke {

// ---- The consumer ----

StatusOr<Batch> LoaderImpl::Next() { return NextUntil(internal::RingProtocol::Deadline::max()); }

StatusOr<Batch> LoaderImpl::NextFor(std::chrono::nanoseconds timeout) {
  const auto now = internal::RingProtocol::Deadline::clock::now();
  const auto left = internal::RingProtocol::Deadline::max() - now;
  return NextUntil(
      timeout >= left
          ? internal::RingProtocol::Deadline::max()
          : now + std::chrono::duration_cast<internal::RingProtocol::Deadline::duration>(timeout));
}

StatusOr<Batch> LoaderImpl::NextUntil(internal::RingProtocol::Deadline deadline) {
  if (copy_) return NextFromCopyEngine(deadline);
  if (Status error = slots_->error(); !error.ok()) return error;
  if (AtEpochEnd()) return Batch();
  int slot_id = -1;
  const int64_t t0 = internal::NowNanos();
  internal::RingProtocol::Took took;
  {
    internal::TraceRange trace("stoke wait for batch");
    took = slots_->Take(&slot_id, /*refuse_if_all_leased=*/true, deadline);
  }
  if (took == internal::RingProtocol::Took::kTimedOut) {
    consumer_wait_ns_.fetch_add(internal::NowNanos() - t0, std::memory_order_relaxed);
    return DeadlineExceededError("Loader::NextFor: no batch was ready in time");
  }
  if (took == internal::RingProtocol::Took::kAllLeased) {
    return ResourceExhaustedError(
        "Loader::Next: all " + std::to_string(ring_->size()) +
        " ring slots are held by live Batch objects, so no batch can be filled; release a "
        "batch before asking for the next, or raise LoaderOptions.ring_slots");
  }
  if (took != internal::RingProtocol::Took::kSlot) return slots_->error();  // never cancelled
  const int64_t t1 = internal::NowNanos();
  consumer_wait_ns_.fetch_add(t1 - t0, std::memory_order_relaxed);
  const Position at = TakePosition();
  if (trace_.enabled()) {
    trace_.Span("wait for batch", t0, t1, at.epoch, at.batch, plan_.batch_size(at.epoch, at.batch));
  }
  internal::Slot& slot = ring_->slot(slot_id);
  assert(slot.epoch == at.epoch && slot.batch == at.batch);
  // Skips count when their batch is delivered, not when read ahead.
  AccountSkips(slot);
  Batch batch;
  batch.owner_ = this;
  batch.slot_ = slot_id;
  // A failed batch still gets its lease so that releasing it frees the slot.
  Status error = slot.error();
  if (!error.ok()) {
    batch.Release();
    return error;
  }
  SetShape(&batch, at, slot.size);
  batch.data_ = slot.data;
  batch.labels_ = slot.labels;
  batch.indices_ = slot.indices;
  batch.device_labels_ = slot.labels;
  batches_delivered_.fetch_add(1, std::memory_order_relaxed);
  samples_delivered_.fetch_add(static_cast<uint64_t>(slot.size), std::memory_order_relaxed);
  return batch;
}

void LoaderImpl::SetShape(Batch* batch, Position at, int64_t size) const {
  // The delivered spec: the dataset's, or after the copy engine's conversion.
  const SampleSpec& spec = convert_.out_spec;
  batch->size_ = size;
  batch->epoch_ = at.epoch;
  batch->index_ = at.batch;
  batch->shape_[0] = size;
  for (size_t i = 0; i < spec.shape.size(); ++i) batch->shape_[i + 1] = spec.shape[i];
  batch->rank_ = static_cast<int>(spec.shape.size()) + 1;
  batch->dtype_ = spec.dtype;
  batch->channels_last_ = spec.channels_last;
  batch->bytes_ = static_cast<size_t>(size) * convert_.out_sample_bytes;
}

bool LoaderImpl::AtEpochEnd() {
  std::lock_guard<std::mutex> lock(mu_);
  if (position_.batch < plan_.batches_in(position_.epoch)) return false;
  position_ = {position_.epoch + 1, 0};
  return true;
}

Position LoaderImpl::TakePosition() {
  std::lock_guard<std::mutex> lock(mu_);
  const Position at = position_;
  ++position_.batch;
  return at;
}

StatusOr<Batch> LoaderImpl::NextFromCopyEngine(internal::RingProtocol::Deadline deadline) {
  if (Status error = slots_->error(); !error.ok()) return error;
  if (AtEpochEnd()) return Batch();
  internal::CopyEngine::Delivery d;
  int64_t wait_ns = 0;
  Status status = copy_->Next(&d, &wait_ns, deadline);
  consumer_wait_ns_.fetch_add(wait_ns, std::memory_order_relaxed);
  if (d.buffer < 0) return status;  // sticky: the loader's or the device's
  const Position at = TakePosition();
  assert(d.epoch == at.epoch && d.batch == at.batch);
  if (!status.ok()) return status;  // the batch's own error; its buffer is free
  Batch batch;
  batch.owner_ = copy_.get();
  batch.slot_ = d.buffer;
  SetShape(&batch, at, d.size);
  batch.data_ = d.data;
  batch.labels_ = d.labels;
  batch.indices_ = d.indices;
  batch.device_labels_ = d.device_labels;
  batch.device_ = copy_->device().spec();
  batches_delivered_.fetch_add(1, std::memory_order_relaxed);
  samples_delivered_.fetch_add(static_cast<uint64_t>(d.size), std::memory_order_relaxed);
  return batch;
}

void LoaderImpl::ReleaseLease(int slot, CUstream_st*) { ReleaseSlot(slot); }

Status LoaderImpl::MakeStreamWait(int, CUstream_st*) {
  return Status::Ok();  // the batch is in host memory, complete
}

Status LoaderImpl::CopyToHost(int slot, void* out, size_t bytes) {
  std::memcpy(out, ring_->slot(slot).data, bytes);
  return Status::Ok();
}

Status LoaderImpl::TakeSlot(Taken* out) {
  // The copy engine's leases come back as its copies complete: it waits.
  int slot_id = -1;
  switch (slots_->Take(&slot_id, /*refuse_if_all_leased=*/false)) {
    case internal::RingProtocol::Took::kSlot:
      break;
    case internal::RingProtocol::Took::kCancelled:
      out->slot = -1;
      return Status::Ok();
    case internal::RingProtocol::Took::kAllLeased:
    case internal::RingProtocol::Took::kFailed:
    case internal::RingProtocol::Took::kTimedOut:  // no deadline: never
      return slots_->error();
  }
  internal::Slot& slot = ring_->slot(slot_id);
  // Skips count when the copy engine takes their batch: at most device_buffers
  // batches before they are delivered.
  AccountSkips(slot);
  out->slot = slot_id;
  out->epoch = slot.epoch;
  out->batch = slot.batch;
  out->size = slot.size;
  out->data = slot.data;
  out->labels = slot.labels;
  out->indices = slot.indices;
  out->error = slot.error();
  return Status::Ok();
}

void LoaderImpl::CancelTake() { slots_->Cancel(); }

void LoaderImpl::ResumeTake() { slots_->Resume(); }

void LoaderImpl::ReleaseSlot(int slot) {
  // One step in the protocol, so that StopDispatch's Reset sees the slot
  // either leased or free, never both; then work starts into it.
  slots_->Release(slot);
  Pump();
}

Status LoaderImpl::Seek(Position position) {
  // plan_ changes only here, on the consumer's thread, while nothing runs.
  StatusOr<internal::Resumed> resumed =
      internal::ResolveStart(position, plan_.config(), "Loader::Seek: position");
  if (!resumed.ok()) return resumed.status();
  internal::InStokeCall call;
  if (copy_) copy_->Stop();  // its copies complete and give their slots back
  StopDispatch();
  {
    std::lock_guard<std::mutex> lock(mu_);
    plan_ = internal::Plan(resumed->plan);
    position_ = resumed->start;
  }
  StartDispatch(resumed->start);
  if (copy_) copy_->Start();
  return Status::Ok();
}

Position LoaderImpl::position() const {
  std::lock_guard<std::mutex> lock(mu_);
  return internal::PositionOf(position_.epoch, position_.batch, plan_.config());
}

LoaderStats LoaderImpl::stats() const {
  LoaderStats s;
  s.stages.push_back({"dispatch", {dispatch_.Snapshot()}});
  // Quasi order: the window threads read; the engine only passes runs on.
  s.stages.push_back({"read", windows_ ? windows_->stats() : engine_->stats()});
  if (!decode_.empty()) {
    StageStats decode{"decode", {}};
    for (const internal::ThreadCounters& c : decode_) decode.threads.push_back(c.Snapshot());
    s.stages.push_back(std::move(decode));
  } else if (decode_inline_.items.load(std::memory_order_relaxed) > 0) {
    // On the read threads: their decode time, summed; not waiting by itself.
    s.stages.push_back({"decode/inline", {decode_inline_.Snapshot()}});
  }
  if (copy_) {
    s.stages.push_back(copy_->stats());
    s.convert_seconds = copy_->device().convert_seconds();
  }
  s.device = DeviceName(copy_ ? copy_->device().spec() : DeviceSpec{});
  s.batches = batches_delivered_.load(std::memory_order_relaxed);
  s.samples = samples_delivered_.load(std::memory_order_relaxed);
  s.bytes = s.samples * (copy_ ? convert_.out_sample_bytes : sample_bytes_);
  s.consumer_wait_seconds =
      static_cast<double>(consumer_wait_ns_.load(std::memory_order_relaxed)) * 1e-9;
  s.ring_bytes = ring_->bytes();
  s.arena_bytes = (arena_ ? arena_->bytes() : 0) + (overflow_ ? overflow_->bytes() : 0) +
                  (windows_ ? windows_->bytes() : 0);
  s.http_requests =
      http_requests_.load(std::memory_order_relaxed) + (windows_ ? windows_->http_requests() : 0);
  s.http_retries =
      http_retries_.load(std::memory_order_relaxed) + (windows_ ? windows_->http_retries() : 0);
  s.io_backend = !maps_.empty() ? "mmap"
                 : windows_
                     ? "pread windows of " + std::to_string(window_layout_.capacity >> 10) + " KiB"
                     : std::string(engine_->name());
  std::lock_guard<std::mutex> lock(skipped_mu_);
  s.skipped = skipped_;
  s.skipped_samples = skipped_samples_;
  return s;
}

}  // namespace stoke

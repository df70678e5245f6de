#include "copy/copy_engine.h"

#include <cassert>
#include <cstring>
#include <string>

#include "util/trace.h"

namespace stoke::internal {

StatusOr<std::unique_ptr<CopyEngine>> CopyEngine::Create(SlotSource* source,
                                                         std::unique_ptr<Device> device,
                                                         const ConvertPlan& plan, int buffers,
                                                         int64_t batch_size, int ring_slots,
                                                         TraceLog* trace) {
  STOKE_RETURN_IF_ERROR(device->Prepare(buffers, batch_size, plan));
  return std::unique_ptr<CopyEngine>(
      new CopyEngine(source, std::move(device), plan, buffers, batch_size, ring_slots, trace));
}

CopyEngine::CopyEngine(SlotSource* source, std::unique_ptr<Device> device, const ConvertPlan& plan,
                       int buffers, int64_t batch_size, int ring_slots, TraceLog* trace)
    : source_(source),
      device_(std::move(device)),
      plan_(plan),
      trace_(trace),
      slot_returns_(static_cast<size_t>(ring_slots)),
      entries_(static_cast<size_t>(buffers)),
      free_(static_cast<size_t>(buffers)),
      published_(static_cast<size_t>(buffers)) {
  for (int s = 0; s < ring_slots; ++s) slot_returns_[s] = {this, s};
  for (int b = 0; b < buffers; ++b) {
    entries_[b].labels.resize(static_cast<size_t>(batch_size));
    entries_[b].indices.resize(static_cast<size_t>(batch_size));
    free_[b] = b;
  }
  free_count_ = static_cast<size_t>(buffers);
}

CopyEngine::~CopyEngine() { Stop(); }

void CopyEngine::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    assert(stop_ && !thread_.joinable());
    stop_ = false;
  }
  source_->ResumeTake();
  thread_ = std::thread([this] { Loop(); });
}

void CopyEngine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  source_->CancelTake();
  if (thread_.joinable()) thread_.join();
  // Every queued copy completes and returns its slot: then no copy reads the
  // ring while the loader stops dispatching.
  Status drained = device_->Drain();
  if (!drained.ok()) SetError(drained.WithContext("copy engine: stopping"));
  std::lock_guard<std::mutex> lock(mu_);
  while (published_count_ > 0) {
    const int b = published_[published_head_];
    published_head_ = (published_head_ + 1) % published_.size();
    --published_count_;
    entries_[b].state = State::kFree;
    free_[(free_head_ + free_count_) % free_.size()] = b;
    ++free_count_;
  }
  published_head_ = 0;
}

void CopyEngine::Loop() {
  while (true) {
    // 1. Wait for a free buffer.
    int b;
    int64_t t0 = NowNanos();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !error_.ok() || free_count_ > 0; });
      if (stop_ || !error_.ok()) return;
      b = free_[free_head_];
      free_head_ = (free_head_ + 1) % free_.size();
      --free_count_;
      entries_[b].state = State::kFilling;
    }
    // 2. Take the next batch's slot, in order.
    SlotSource::Taken taken;
    Status status = source_->TakeSlot(&taken);
    counters_.AddBlocked(NowNanos() - t0);
    Entry& e = entries_[b];
    if (status.ok() && taken.slot >= 0) {
      // 3. Keep what the host needs, and queue the copy; the device returns the
      // slot when the copy has read it.
      e.epoch = taken.epoch;
      e.batch = taken.batch;
      e.size = taken.size;
      e.error = taken.error;
      const auto n = static_cast<size_t>(taken.size);
      std::memcpy(e.labels.data(), taken.labels, n * sizeof(int64_t));
      std::memcpy(e.indices.data(), taken.indices, n * sizeof(uint64_t));
      if (e.error.ok()) {
        CopyJob job;
        job.buffer = b;
        job.data = taken.data;
        job.samples = taken.size;
        job.labels = taken.labels;
        job.host_done = &CopyEngine::HostDone;
        job.arg = &slot_returns_[taken.slot];
        const int64_t q0 = trace_->enabled() ? NowNanos() : 0;
        status = device_->Enqueue(job);
        if (trace_->enabled())
          trace_->Span("copy", q0, NowNanos(), taken.epoch, taken.batch, taken.size);
        if (status.ok()) {
          counters_.Add(counters_.items, 1);
          counters_.Add(counters_.bytes, n * plan_.in_sample_bytes);
        } else {
          source_->ReturnSlot(taken.slot);
          status = status.WithContext("copy engine: batch " + std::to_string(taken.batch) +
                                      " of epoch " + std::to_string(taken.epoch));
        }
      } else {
        source_->ReturnSlot(taken.slot);  // a failed batch: nothing to copy
      }
    }
    // 4. Publish the buffer (or give it back and stop).
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!status.ok() || taken.slot < 0) {
        e.state = State::kFree;
        free_[(free_head_ + free_count_) % free_.size()] = b;
        ++free_count_;
        if (!status.ok() && error_.ok()) error_ = status;
      } else {
        e.state = State::kPublished;
        published_[(published_head_ + published_count_) % published_.size()] = b;
        ++published_count_;
      }
    }
    ready_.notify_all();
    if (!status.ok() || taken.slot < 0) return;
  }
}

void CopyEngine::HostDone(void* arg) {
  const SlotReturn* r = static_cast<const SlotReturn*>(arg);
  r->engine->source_->ReturnSlot(r->slot);
}

Status CopyEngine::Next(Delivery* out, int64_t* wait_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!error_.ok()) return error_;
  if (leased_count_ == static_cast<int>(entries_.size())) {
    return ResourceExhaustedError(
        "Loader::Next: all " + std::to_string(entries_.size()) +
        " delivery buffers are held by live Batch objects, so no batch can be copied; release a "
        "batch before asking for the next, or raise LoaderOptions.device_buffers");
  }
  const int64_t t0 = NowNanos();
  TraceRange trace("stoke wait for batch");
  ready_.wait(lock, [&] { return !error_.ok() || published_count_ > 0; });
  const int64_t t1 = NowNanos();
  *wait_ns += t1 - t0;
  if (trace_->enabled() && published_count_ > 0) {
    const Entry& next = entries_[published_[published_head_]];
    trace_->Span("wait for batch", t0, t1, next.epoch, next.batch, next.size);
  }
  if (!error_.ok()) return error_;
  const int b = published_[published_head_];
  published_head_ = (published_head_ + 1) % published_.size();
  --published_count_;
  Entry& e = entries_[b];
  out->buffer = b;
  out->epoch = e.epoch;
  out->batch = e.batch;
  out->size = e.size;
  if (!e.error.ok()) {
    Status error = e.error;
    e.state = State::kFree;
    free_[(free_head_ + free_count_) % free_.size()] = b;
    ++free_count_;
    lock.unlock();
    cv_.notify_one();
    return error;
  }
  e.state = State::kLeased;
  ++leased_count_;
  out->data = device_->data(b);
  out->device_labels = device_->labels(b);
  out->labels = e.labels.data();
  out->indices = e.indices.data();
  return Status::Ok();
}

void CopyEngine::ReleaseLease(int buffer, CUstream_st* stream) {
  // The buffer is refilled only after the work queued on `stream` so far.
  Status consumed = device_->MarkConsumed(buffer, stream);
  {
    std::lock_guard<std::mutex> lock(mu_);
    assert(entries_[buffer].state == State::kLeased);
    entries_[buffer].state = State::kFree;
    --leased_count_;
    free_[(free_head_ + free_count_) % free_.size()] = buffer;
    ++free_count_;
    if (!consumed.ok() && error_.ok()) error_ = consumed.WithContext("Batch::Release");
  }
  cv_.notify_one();
  if (!consumed.ok()) ready_.notify_all();
}

Status CopyEngine::MakeStreamWait(int buffer, CUstream_st* stream) {
  return device_->MakeStreamWait(buffer, stream);
}

Status CopyEngine::CopyToHost(int buffer, void* out, size_t bytes) {
  return device_->CopyToHost(buffer, out, bytes);
}

void CopyEngine::SetError(Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) error_ = std::move(status);
  }
  cv_.notify_all();
  ready_.notify_all();
}

StageStats CopyEngine::stats() const {
  ThreadStats s = counters_.Snapshot();
  s.busy_seconds = device_->busy_seconds();
  return {"copy", {s}};
}

}  // namespace stoke::internal

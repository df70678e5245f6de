#include "copy/copy_engine.h"

#include <cassert>
#include <cstring>
#include <string>

#include "util/thread_role.h"
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
      plan_(plan),
      trace_(trace),
      slot_returns_(static_cast<size_t>(ring_slots)),
      buffers_(buffers, RingProtocol::Reuse::kOldestFirst),
      entries_(static_cast<size_t>(buffers)),
      device_(std::move(device)) {
  for (int s = 0; s < ring_slots; ++s) slot_returns_[s] = {this, s};
  for (Entry& e : entries_) {
    e.labels.resize(static_cast<size_t>(batch_size));
    e.indices.resize(static_cast<size_t>(batch_size));
  }
  buffers_.Cancel();  // until Start
}

CopyEngine::~CopyEngine() { Stop(); }

void CopyEngine::Start() {
  assert(!thread_.joinable());
  buffers_.Resume();
  source_->ResumeTake();
  thread_ = std::thread([this] {
    MarkStokeThread();
    Loop();
  });
}

void CopyEngine::Stop() {
  buffers_.Cancel();
  source_->CancelTake();
  if (thread_.joinable()) thread_.join();
  // Every queued copy completes and returns its slot: then no copy reads the
  // ring while the loader stops dispatching.
  Status drained = device_->Drain();
  if (!drained.ok()) buffers_.SetError(drained.WithContext("copy engine: stopping"));
  buffers_.Reset();  // published buffers nobody took are free again
}

void CopyEngine::Loop() {
  while (true) {
    // 1. Wait for a free buffer.
    const int64_t t0 = NowNanos();
    const int b = buffers_.Claim();
    if (b < 0) return;  // stopping, or failed
    // 2. Take the next batch's slot, in order.
    SlotSource::Taken taken;
    Status status = source_->TakeSlot(&taken);
    counters_.AddBlocked(NowNanos() - t0);
    if (status.ok() && taken.slot >= 0) status = Queue(b, taken);
    // 4. Publish the buffer (or give it back and stop).
    if (!status.ok() || taken.slot < 0) {
      buffers_.Unclaim(b);
      if (!status.ok()) buffers_.SetError(std::move(status));
      return;
    }
    buffers_.Publish(b);
  }
}

Status CopyEngine::Queue(int b, const SlotSource::Taken& taken) {
  // 3. Keep what the host needs, and queue the copy; the device returns the
  // slot when the copy has read it.
  Entry& e = entries_[b];
  e.epoch = taken.epoch;
  e.batch = taken.batch;
  e.size = taken.size;
  e.error = taken.error;
  const auto n = static_cast<size_t>(taken.size);
  std::memcpy(e.labels.data(), taken.labels, n * sizeof(int64_t));
  std::memcpy(e.indices.data(), taken.indices, n * sizeof(uint64_t));
  if (!e.error.ok()) {
    source_->ReturnSlot(taken.slot);  // a failed batch: nothing to copy
    return Status::Ok();
  }
  CopyJob job;
  job.buffer = b;
  job.data = taken.data;
  job.samples = taken.size;
  job.labels = taken.labels;
  job.host_done = &CopyEngine::HostDone;
  job.arg = &slot_returns_[taken.slot];
  const int64_t q0 = trace_->enabled() ? NowNanos() : 0;
  Status status = device_->Enqueue(job);
  if (trace_->enabled()) trace_->Span("copy", q0, NowNanos(), taken.epoch, taken.batch, taken.size);
  if (!status.ok()) {
    source_->ReturnSlot(taken.slot);
    return status.WithContext("copy engine: batch " + std::to_string(taken.batch) + " of epoch " +
                              std::to_string(taken.epoch));
  }
  counters_.Add(counters_.items, 1);
  counters_.Add(counters_.bytes, n * plan_.in_sample_bytes);
  return Status::Ok();
}

void CopyEngine::HostDone(void* arg) {
  const SlotReturn* r = static_cast<const SlotReturn*>(arg);
  r->engine->source_->ReturnSlot(r->slot);
}

Status CopyEngine::Next(Delivery* out, int64_t* wait_ns, RingProtocol::Deadline deadline) {
  const int64_t t0 = NowNanos();
  int b = -1;
  RingProtocol::Took took;
  {
    TraceRange trace("stoke wait for batch");
    took = buffers_.Take(&b, /*refuse_if_all_leased=*/true, deadline);
  }
  switch (took) {
    case RingProtocol::Took::kTimedOut:
      *wait_ns += NowNanos() - t0;
      out->buffer = -1;
      return DeadlineExceededError("Loader::NextFor: no batch was ready in time");
    case RingProtocol::Took::kSlot:
      break;
    case RingProtocol::Took::kAllLeased:
      return ResourceExhaustedError(
          "Loader::Next: all " + std::to_string(entries_.size()) +
          " delivery buffers are held by live Batch objects, so no batch can be copied; release "
          "a batch before asking for the next, or raise LoaderOptions.device_buffers");
    case RingProtocol::Took::kCancelled:
      return InternalError("copy engine: Next while stopped");
    case RingProtocol::Took::kFailed:
      return buffers_.error();
  }
  const int64_t t1 = NowNanos();
  *wait_ns += t1 - t0;
  Entry& e = entries_[b];
  if (trace_->enabled()) trace_->Span("wait for batch", t0, t1, e.epoch, e.batch, e.size);
  out->buffer = b;
  out->epoch = e.epoch;
  out->batch = e.batch;
  out->size = e.size;
  if (!e.error.ok()) {
    Status error = e.error;
    buffers_.Release(b);
    return error;
  }
  out->data = device_->data(b);
  out->device_labels = device_->labels(b);
  out->labels = e.labels.data();
  out->indices = e.indices.data();
  return Status::Ok();
}

void CopyEngine::JoinStreams(int buffer, CUstream_st* into, CUstream_st* from) {
  Status joined = device_->JoinStreams(buffer, into, from);
  if (!joined.ok()) buffers_.SetError(joined.WithContext("Batch::Release"));
}

void CopyEngine::ReleaseLease(int buffer, CUstream_st* stream) {
  // The buffer is refilled only after the work queued on `stream` so far.
  Status consumed = device_->MarkConsumed(buffer, stream);
  if (!consumed.ok()) buffers_.SetError(consumed.WithContext("Batch::Release"));
  buffers_.Release(buffer);
}

Status CopyEngine::MakeStreamWait(int buffer, CUstream_st* stream) {
  return device_->MakeStreamWait(buffer, stream);
}

Status CopyEngine::CopyToHost(int buffer, void* out, size_t bytes) {
  return device_->CopyToHost(buffer, out, bytes);
}

StageStats CopyEngine::stats() const {
  ThreadStats s = counters_.Snapshot();
  s.busy_seconds = device_->busy_seconds();
  return {"copy", {s}};
}

}  // namespace stoke::internal

// LoaderImpl, part 2 of 4: dispatch. Claiming ring slots, cutting batches into
// runs of tasks, and submitting their reads (loader_impl.h).
#include "loader/loader_impl.h"

#include <algorithm>
#include <cassert>

#include "util/thread_role.h"
#include "util/trace.h"

namespace stoke {

// ---- Dispatch ----

void LoaderImpl::StartDispatch(Position from) {
  {
    internal::MutexLock lock(&dispatch_mu_);
    stopping_.store(false);
    ring_full_since_ns_ = 0;
    next_ = from;
    next_offset_ = 0;
    current_slot_ = -1;
    if (windows_) {
      const Position at =
          from.batch >= plan_.batches_in(from.epoch) ? Position{from.epoch + 1, 0} : from;
      windows_->Start(at.epoch, at.batch * options_.batch_size);
    }
  }
  Pump();
}

void LoaderImpl::StopDispatch() {
  if (windows_) {
    // No window read starts now; those in flight finish (and their Pump calls
    // see stopping_), without dispatch_mu_ held, which those calls take.
    {
      internal::MutexLock lock(&dispatch_mu_);
      stopping_.store(true);
    }
    windows_->Stop();
  }
  internal::MutexLock lock(&dispatch_mu_);
  stopping_.store(true);
  engine_->CancelInFlight();  // remote reads end now rather than when answered
  // Every ticket comes back once its run is finished; no new run starts now.
  while (idle_tickets_.size() != runs_.size()) dispatch_cv_.Wait(&dispatch_mu_);
  // Every slot not held by a Batch is free again; nothing is scheduled.
  slots_->Reset();
  current_slot_ = -1;
  ring_full_since_ns_ = 0;
}

void LoaderImpl::Pump() {
  if (!internal::OnStokeThread()) {
    // A thread stoke neither started nor was called on (a driver's callback
    // thread): dispatching here would take the loader's locks and submit reads
    // on it. Only the slot's release (one step of the ring's protocol) may
    // happen on such a thread; a device hands slots back on a thread of its own.
    SetBackgroundError(InternalError(
        "dispatch reached from a thread stoke does not own (a driver callback?); a copy device "
        "must return slots on a thread of its own"));
    return;
  }
  internal::MutexLock lock(&dispatch_mu_);
  PumpLocked();
}

void LoaderImpl::PumpLocked() {
  try {
    while (!stopping_.load(std::memory_order_relaxed) && !idle_tickets_.empty()) {
      const int64_t t0 = internal::NowNanos();
      if (current_slot_ < 0) {
        if (!ClaimSlot()) {
          // Work could start but the ring is full: the consumer sets the pace.
          if (ring_full_since_ns_ == 0) ring_full_since_ns_ = t0;
          return;
        }
        if (ring_full_since_ns_ != 0) {
          dispatch_.AddBlocked(t0 - ring_full_since_ns_);
          ring_full_since_ns_ = 0;
        }
      }
      internal::Slot& slot = ring_->slot(current_slot_);
      int64_t count = std::min<int64_t>(samples_per_task_, slot.size - next_offset_);
      int window_set = -1;
      if (windows_) {
        count = AcquireWindows(count, &window_set);
        if (count == 0) return;  // its windows are being read; OnWindowsReady pumps
      }
      const int ticket = idle_tickets_.back();
      idle_tickets_.pop_back();
      // Until the run is submitted its ticket comes back if anything throws (a
      // dataset's Locate, an allocation): StopDispatch waits for every ticket.
      struct TicketGuard {
        std::vector<int>* idle;
        int ticket;
        ~TicketGuard() {
          if (ticket >= 0) idle->push_back(ticket);  // reserved: never allocates
        }
      } guard{&idle_tickets_, ticket};
      Run& run = *runs_[ticket];
      run.slot = current_slot_;
      run.epoch = next_.epoch;
      run.batch = next_.batch;
      run.window_set = window_set;
      if (trace_.enabled()) run.submitted_ns = t0;
      run.count = static_cast<size_t>(count);
      const int64_t first = next_.batch * options_.batch_size + next_offset_;
      for (size_t j = 0; j < run.count; ++j) {
        SampleTask& t = run.samples[j];
        t.plan_position = first + static_cast<int64_t>(j);
        t.batch_position = next_offset_ + static_cast<int64_t>(j);
        t.attempts = 0;
        PrepareSample(run, &t, plan_.SampleAt(next_.epoch, t.plan_position));
      }
      if (pack_run_buffers_) PackRunBuffers(&run);
      next_offset_ += static_cast<int64_t>(run.count);
      if (next_offset_ >= slot.size) {  // the batch is all dispatched
        current_slot_ = -1;
        next_offset_ = 0;
        ++next_.batch;
        dispatch_.Add(dispatch_.items, 1);
      }
      engine_->Submit(&run);
      guard.ticket = -1;  // the run is the engine's; Finish returns the ticket
      dispatch_.AddBusy(internal::NowNanos() - t0);
    }
  } catch (const std::exception& e) {
    SetBackgroundError(InternalError(std::string("dispatch: ") + e.what()));
  } catch (...) {
    SetBackgroundError(InternalError("dispatch: unknown exception"));
  }
}

bool LoaderImpl::ClaimSlot() {
  // Scheduled now, in batch order; nobody reads the slot's fields before its
  // batch is published.
  const int slot_id = slots_->TryClaim();
  if (slot_id < 0) return false;
  // (An elastic resume's epoch may have no batches left: then the next.)
  while (next_.batch >= plan_.batches_in(next_.epoch)) next_ = {next_.epoch + 1, 0};
  internal::Slot& slot = ring_->slot(slot_id);
  slot.epoch = next_.epoch;
  slot.batch = next_.batch;
  slot.size = plan_.batch_size(next_.epoch, next_.batch);
  slot.remaining.store(slot.size, std::memory_order_relaxed);
  slot.ClearErrors();
  current_slot_ = slot_id;
  next_offset_ = 0;
  return true;
}

int64_t LoaderImpl::AcquireWindows(int64_t want, int* set) {
  const int64_t position = next_.batch * options_.batch_size + next_offset_;
  const internal::Segment segment = plan_.SegmentAt(next_.epoch, position);
  *set = windows_->Acquire(next_.epoch, segment);
  if (*set < 0) return 0;
  // A run draws from one segment's windows.
  return std::min(want, segment.end - position);
}

void LoaderImpl::PrepareSample(const Run& run, SampleTask* t, uint64_t sample) {
  const int slot = run.slot;
  t->sample = sample;
  const SampleLocation loc = dataset_->Locate(sample);
  t->memory = loc.memory;
  t->mapped = false;
  t->overflow = false;
  t->path = &dataset_->file_path(loc.file);
  internal::CloseOwnedFile(t);
  t->file = files_.empty() ? nullptr : files_[loc.file].get();
  t->offset = loc.offset;
  t->length = loc.length;
  t->whole_file = loc.whole_file;
  if (direct_reads_) {
    t->buffer = t->arena_buffer;
  } else {
    t->buffer = {ring_->slot(slot).data + t->batch_position * sample_bytes_, sample_bytes_};
  }
  internal::PrepareRead(t);
  if (run.window_set >= 0) {
    // Quasi order: the bytes are in the run's window set, read whole. A refill
    // from beyond it (kSkip near a segment's end) is read on its own.
    Status window_status;
    t->memory = windows_->Find(run.window_set, sample, loc, &window_status);
    if (!window_status.ok()) t->status = std::move(window_status);
    if (t->memory || !t->status.ok()) return;
  }
  if (!maps_.empty()) {
    const std::span<const std::byte> map = maps_[loc.file]->bytes();
    if (loc.offset + loc.length > map.size()) {
      t->status = internal::TruncatedError(*t->path, loc.length, loc.offset,
                                           map.size() > loc.offset ? map.size() - loc.offset : 0);
    } else if (t->buffer.size() < loc.length) {
      DeferToOverflow(t, sample, loc);
    } else {
      t->memory = map.data() + loc.offset;  // copied into t->buffer by the read engine
      t->mapped = true;
    }
    return;
  }
  if (t->buffer.size() <
      internal::ReadBufferCapacity(loc.length, loc.whole_file, t->file_options.direct)) {
    DeferToOverflow(t, sample, loc);
  }
}

void LoaderImpl::DeferToOverflow(SampleTask* t, uint64_t sample, const SampleLocation& loc) {
  if (overflow_ != nullptr &&
      overflow_->buffer(0).size() >=
          internal::ReadBufferCapacity(loc.length, loc.whole_file, t->file_options.direct)) {
    // An outlier: the engines pass it by (its status is not OK), and its
    // decoder reads it through the overflow buffer (CompleteSample).
    t->overflow = true;
    t->status = CancelledError("deferred to the overflow buffer");
    return;
  }
  // Already failed: the engines complete it without reading.
  t->status = InternalError(*t->path + ": sample " + std::to_string(sample) + " needs " +
                            std::to_string(loc.length) +
                            " stored bytes, more than the read buffers the dataset's sizes gave");
}

void LoaderImpl::PackRunBuffers(Run* run) {
  // The run's arena buffers are one region; lay the samples' bytes out back to
  // back in it, so that records adjacent in their file are adjacent in memory
  // too and the engines read them with one read. Each record is at most a
  // buffer's capacity, so they always fit.
  //
  // The reads are issued in file order (the group's request pointers sorted by
  // file and offset), and laid out in that order: a run of a block-order epoch
  // whose positions cover neighbouring records, shuffled, reads them with one
  // read. The samples keep their slot positions; only the I/O order changes.
  std::span<std::byte> region = arena_->run_region(run->ticket, samples_per_task_);
  for (size_t j = 0; j < run->count; ++j) run->pointers[j] = &run->samples[j];
  std::sort(run->pointers.begin(), run->pointers.begin() + static_cast<ptrdiff_t>(run->count),
            [](const internal::ReadRequest* a, const internal::ReadRequest* b) {
              return a->file != b->file ? std::less<>()(a->file, b->file) : a->offset < b->offset;
            });
  size_t cursor = 0;
  for (size_t j = 0; j < run->count; ++j) {
    internal::ReadRequest& t = *run->pointers[j];
    if (!t.status.ok() || t.memory != nullptr) continue;
    t.buffer = region.subspan(cursor, static_cast<size_t>(t.length));
    cursor += static_cast<size_t>(t.length);
  }
}

}  // namespace stoke

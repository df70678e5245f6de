// LoaderImpl, part 3 of 4: completion. Reads done, decoding (on decode threads
// or inline), a run's end, and a slot's publication (loader_impl.h).
#include "loader/loader_impl.h"

#include <algorithm>
#include <cassert>

#include "util/trace.h"

namespace stoke {
namespace {

// Made at load time, so that reporting an exception under memory pressure
// needs no allocation.
const Status* const kEscapedWithoutMemory = new Status(ResourceExhaustedError(
    "an exception escaped a loader thread, and there was no memory to describe it"));

// The Status of the exception being handled, naming `where`. Never throws.
Status EscapedError(const char* where) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    try {
      return ResourceExhaustedError(std::string(where) + ": out of memory (std::bad_alloc)");
    } catch (...) {
    }
  } catch (const std::exception& e) {
    try {
      return InternalError(std::string(where) + " threw: " + e.what());
    } catch (...) {
    }
  } catch (...) {
    try {
      return InternalError(std::string(where) + " threw an exception of a non-standard type");
    } catch (...) {
    }
  }
  return *kEscapedWithoutMemory;
}

}  // namespace

// ---- Completion: read, decode, finish ----

void LoaderImpl::OnReadsDone(internal::ReadGroup* g) {
  Run* run = static_cast<Run*>(g);
  if (trace_.enabled()) {
    trace_.Span("read", run->submitted_ns, internal::NowNanos(), run->epoch, run->batch,
                static_cast<int64_t>(run->count));
  }
  uint64_t requests = 0;
  uint64_t retries = 0;
  for (size_t j = 0; j < run->count; ++j) {
    internal::CloseOwnedFile(&run->samples[j]);  // a per-sample file
    run->samples[j].file = nullptr;
    requests += run->samples[j].http_requests;
    retries += run->samples[j].http_retries;
  }
  if (requests > 0) {
    http_requests_.fetch_add(requests, std::memory_order_relaxed);
    http_retries_.fetch_add(retries, std::memory_order_relaxed);
  }
  if (stopping_.load(std::memory_order_relaxed)) return Finish(run);
  // enqueue fails only when the queue cannot allocate a block: the run is then
  // decoded here rather than lost (its batch would never publish, its ticket
  // never return).
  if (!decoders_.empty() && decode_queue_.enqueue(run)) return;
  // Inline decoding is counted too (as one aggregate), except for a copy.
  DecodeAndFinish(run, dataset_->stored_as_output() ? nullptr : &decode_inline_);
}

void LoaderImpl::DecodeLoop(int index) {
  internal::ThreadCounters& counters = decode_[index];
  while (true) {
    int64_t t0 = internal::NowNanos();
    Run* run;
    decode_queue_.wait_dequeue(run);
    counters.AddBlocked(internal::NowNanos() - t0);
    if (!run) return;
    DecodeAndFinish(run, &counters);
  }
}

void LoaderImpl::DecodeAndFinish(Run* run, internal::ThreadCounters* counters) {
  const int64_t t0 = counters || trace_.enabled() ? internal::NowNanos() : 0;
  {
    internal::TraceRange trace("stoke decode");
    for (size_t j = 0; j < run->count; ++j) {
      // Nothing may escape: this is a read or decode thread, and the run must
      // finish (publishing its batch, returning its ticket) whatever happens.
      try {
        CompleteSample(run, &run->samples[j]);
      } catch (...) {
        RecordEscaped(run, run->samples[j]);
      }
    }
  }
  if (trace_.enabled() && counters) {
    trace_.Span("decode", t0, internal::NowNanos(), run->epoch, run->batch,
                static_cast<int64_t>(run->count));
  }
  if (counters) {
    counters->AddBusy(internal::NowNanos() - t0);
    counters->Add(counters->items, run->count);
    counters->Add(counters->bytes, run->count * sample_bytes_);
  }
  Finish(run);
}

void LoaderImpl::ReadOverflow(SampleTask* t, std::unique_lock<std::mutex>* lock) {
  if (!lock->owns_lock()) *lock = std::unique_lock<std::mutex>(overflow_mu_);
  t->overflow = false;
  t->memory = nullptr;  // a mapped outlier is read as from a file
  t->mapped = false;
  t->file = nullptr;  // opened for this read (OnReadsDone closed the run's)
  t->buffer = overflow_->buffer(0);
  internal::PrepareRead(t);
  internal::ReadBlocking(t);
  internal::CloseOwnedFile(t);
}

void LoaderImpl::CompleteSample(Run* run, SampleTask* t) {
  internal::Slot& slot = ring_->slot(run->slot);
  // Held while this sample's bytes are in the overflow buffer (an outlier's).
  std::unique_lock<std::mutex> overflow_lock;
  while (!stopping_.load(std::memory_order_relaxed)) {
    if (t->overflow) ReadOverflow(t, &overflow_lock);
    if (t->status.ok()) {
      std::span<std::byte> out(slot.data + t->batch_position * sample_bytes_, sample_bytes_);
      int64_t label = 0;
      try {
        t->status =
            dataset_->DecodeSample({t->sample, run->epoch, options_.seed}, t->stored, out, &label);
      } catch (...) {
        t->status = EscapedError("decode");
        t->status = t->status.WithContext(*t->path);
      }
      if (t->status.ok()) {
        slot.labels[t->batch_position] = label;
        slot.indices[t->batch_position] = t->sample;
        return;
      }
    }
    if (options_.on_error == ErrorPolicy::kSkip) {
      slot.RecordSkip(t->sample, t->status);
      if (t->attempts < options_.max_refill_attempts) {
        // Replace it with the next sample of the epoch's global order: a
        // choice that depends on the sample, not on the ranks' split.
        ++t->attempts;
        PrepareSample(*run, t, plan_.RefillAt(run->epoch, t->plan_position, t->attempts));
        if (!internal::CompleteWithoutIo(t)) internal::ReadBlocking(t);
        internal::CloseOwnedFile(t);
        t->file = nullptr;
        continue;
      }
      t->status = DataLossError("gave up after " + std::to_string(t->attempts + 1) +
                                " consecutive bad samples for one batch position "
                                "(LoaderOptions.max_refill_attempts); the last: " +
                                t->status.ToString());
    }
    slot.RecordError(t->batch_position, t->status);
    return;
  }
}

void LoaderImpl::RecordEscaped(Run* run, const SampleTask& t) noexcept {
  const Status error = EscapedError("loader: sample");
  try {
    ring_->slot(run->slot).RecordError(t.batch_position, error.WithContext(*t.path));
  } catch (...) {
    SetBackgroundError(error);  // copies a shared Status: no allocation
  }
}

void LoaderImpl::Finish(Run* run) {
  const int slot_id = run->slot;
  internal::Slot& slot = ring_->slot(slot_id);
  const int ticket = run->ticket;
  const auto count = static_cast<int64_t>(run->count);
  const int window_set = run->window_set;
  if (slot.remaining.fetch_sub(count, std::memory_order_acq_rel) == count) Publish(slot_id);
  // Last: once the ticket is back the run may be reused, and StopDispatch takes
  // every ticket back as proof that no thread still touches the ring. This
  // thread then starts the next run itself: no dispatcher to wake.
  internal::MutexLock lock(&dispatch_mu_);
  if (window_set >= 0) windows_->Release(window_set);
  idle_tickets_.push_back(ticket);
  if (stopping_.load(std::memory_order_relaxed)) {
    if (idle_tickets_.size() == runs_.size()) dispatch_cv_.NotifyAll();
    return;
  }
  PumpLocked();
}

void LoaderImpl::Publish(int slot) {
  const int ready = slots_->Publish(slot);
  if (trace_.enabled()) trace_.Count("batches ready", internal::NowNanos(), ready);
}

void LoaderImpl::AccountSkips(internal::Slot& slot) {
  std::vector<std::pair<uint64_t, Status>> skips;
  slot.TakeSkips(&skips);
  if (skips.empty()) return;
  std::lock_guard<std::mutex> lock(skipped_mu_);
  for (const auto& [index, status] : skips) {
    ++skipped_;
    if (skipped_samples_.size() < kMaxListedSkips) {
      skipped_samples_.push_back({index, status.ToString()});
    }
  }
}

}  // namespace stoke

#include "util/trace_log.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace stoke::internal {
namespace {

constexpr size_t kChunk = 256;  // slots a thread claims at once

std::atomic<uint64_t> g_next_log_id{1};

// The calling thread's current chunk.
struct ThreadChunk {
  uint64_t log = 0;  // the TraceLog's id, 0 for none
  size_t next = 0;
  size_t end = 0;
};
thread_local ThreadChunk t_chunk;

}  // namespace

TraceLog::TraceLog(size_t capacity) : capacity_(capacity), id_(g_next_log_id.fetch_add(1)) {
  if (capacity_ > 0) {
    // Zeroed pages from the kernel: `done` is false everywhere, nothing touched.
    slots_ = static_cast<Slot*>(std::calloc(capacity_, sizeof(Slot)));
    if (!slots_) throw std::bad_alloc();
  }
}

TraceLog::~TraceLog() { std::free(slots_); }

int TraceThreadId() {
  static std::atomic<int> next{1};
  thread_local const int id = next.fetch_add(1);
  return id;
}

void TraceLog::Add(const TraceEvent& event) {
  ThreadChunk& c = t_chunk;
  if (c.log != id_ || c.next == c.end) {
    const size_t begin = next_chunk_.fetch_add(kChunk, std::memory_order_relaxed);
    c = {id_, std::min(begin, capacity_), std::min(begin + kChunk, capacity_)};
    if (c.next == c.end) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  Slot& slot = slots_[c.next++];
  slot.event = event;
  std::atomic_ref<bool>(slot.done).store(true, std::memory_order_release);
}

void TraceLog::Span(const char* stage, int64_t start_ns, int64_t end_ns, int64_t epoch,
                    int64_t batch, int64_t samples) {
  if (!enabled()) return;
  Add({stage, TraceThreadId(), start_ns, end_ns, epoch, batch, false, samples});
}

void TraceLog::Count(const char* name, int64_t at_ns, int64_t value) {
  if (!enabled()) return;
  Add({name, TraceThreadId(), at_ns, at_ns, 0, 0, true, value});
}

std::vector<TraceEvent> TraceLog::Snapshot(uint64_t* dropped) const {
  *dropped = dropped_.load(std::memory_order_relaxed);
  const size_t claimed = std::min(next_chunk_.load(std::memory_order_relaxed), capacity_);
  std::vector<TraceEvent> out;
  for (size_t i = 0; i < claimed; ++i) {
    if (std::atomic_ref<bool>(slots_[i].done).load(std::memory_order_acquire)) {
      out.push_back(slots_[i].event);
    }
  }
  return out;
}

}  // namespace stoke::internal

#include "util/trace_log.h"

namespace stoke::internal {

TraceLog::TraceLog(size_t capacity)
    : capacity_(capacity), slots_(capacity ? new Slot[capacity] : nullptr) {}

int TraceThreadId() {
  static std::atomic<int> next{1};
  thread_local const int id = next.fetch_add(1);
  return id;
}

void TraceLog::Add(const TraceEvent& event) {
  const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
  if (i >= capacity_) return;  // full: counted as dropped
  slots_[i].event = event;
  slots_[i].done.store(true, std::memory_order_release);
}

void TraceLog::Span(const char* stage, int64_t start_ns, int64_t end_ns, int64_t epoch,
                    int64_t batch) {
  if (!enabled()) return;
  Add({stage, TraceThreadId(), start_ns, end_ns, epoch, batch, false, 0});
}

void TraceLog::Count(const char* name, int64_t at_ns, int64_t value) {
  if (!enabled()) return;
  Add({name, TraceThreadId(), at_ns, at_ns, 0, 0, true, value});
}

std::vector<TraceEvent> TraceLog::Snapshot(uint64_t* dropped) const {
  const size_t n = next_.load(std::memory_order_relaxed);
  *dropped = n > capacity_ ? n - capacity_ : 0;
  std::vector<TraceEvent> out;
  for (size_t i = 0; i < std::min(n, capacity_); ++i) {
    if (slots_[i].done.load(std::memory_order_acquire)) out.push_back(slots_[i].event);
  }
  return out;
}

}  // namespace stoke::internal

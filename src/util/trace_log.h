// A fixed buffer of timed spans and counter samples, filled lock-free by the
// loader's threads when LoaderOptions::trace_events > 0, for a Chrome trace.
// Allocated once at open; a full log drops later events and counts them.
//
// Thread safety: Record and Count from any thread; Snapshot from any thread
// returns the events completed so far (a slot is readable once its `done`
// flag is set).
#ifndef STOKE_SRC_UTIL_TRACE_LOG_H_
#define STOKE_SRC_UTIL_TRACE_LOG_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "stoke/stats.h"

namespace stoke::internal {

class TraceLog {
 public:
  explicit TraceLog(size_t capacity);
  bool enabled() const { return capacity_ > 0; }

  // A span of `stage` (a string literal) on the calling thread.
  void Span(const char* stage, int64_t start_ns, int64_t end_ns, int64_t epoch, int64_t batch);
  // A sample of counter `name` (a string literal).
  void Count(const char* name, int64_t at_ns, int64_t value);

  // The recorded events, in no particular order, and how many were dropped.
  std::vector<TraceEvent> Snapshot(uint64_t* dropped) const;

 private:
  struct Slot {
    std::atomic<bool> done{false};
    TraceEvent event;
  };
  void Add(const TraceEvent& event);

  const size_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<size_t> next_{0};
};

// A small number naming the calling thread in traces, assigned on first use.
int TraceThreadId();

}  // namespace stoke::internal

#endif  // STOKE_SRC_UTIL_TRACE_LOG_H_

// A fixed buffer of timed spans and counter samples, filled by the loader's
// threads when LoaderOptions::trace_events > 0, for a Chrome trace. Each thread
// claims chunks of slots with one atomic add and fills them without contention;
// the buffer is calloc'd at open, so pages are touched only as events arrive. A
// full log drops later events and counts them.
//
// Thread safety: Span and Count from any thread; Snapshot from any thread
// returns the events completed so far (a slot is read once its `done` flag is
// set, with release/acquire ordering).
#ifndef STOKE_SRC_UTIL_TRACE_LOG_H_
#define STOKE_SRC_UTIL_TRACE_LOG_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "stoke/stats.h"

namespace stoke::internal {

class TraceLog {
 public:
  explicit TraceLog(size_t capacity);
  ~TraceLog();
  TraceLog(const TraceLog&) = delete;
  TraceLog& operator=(const TraceLog&) = delete;
  bool enabled() const { return capacity_ > 0; }

  // A span of `stage` (a string literal) on the calling thread, over `samples`
  // samples of batch (epoch, batch).
  void Span(const char* stage, int64_t start_ns, int64_t end_ns, int64_t epoch, int64_t batch,
            int64_t samples);
  // A sample of counter `name` (a string literal).
  void Count(const char* name, int64_t at_ns, int64_t value);

  // The recorded events, in no particular order, and how many were dropped.
  std::vector<TraceEvent> Snapshot(uint64_t* dropped) const;

 private:
  struct Slot {
    bool done;  // set last, through std::atomic_ref
    TraceEvent event;
  };
  void Add(const TraceEvent& event);

  const size_t capacity_;
  const uint64_t id_;  // tells this log's thread-local chunks from another's
  Slot* slots_ = nullptr;
  std::atomic<size_t> next_chunk_{0};  // the first slot not yet claimed
  std::atomic<uint64_t> dropped_{0};
};

// A small number naming the calling thread in traces, assigned on first use.
int TraceThreadId();

}  // namespace stoke::internal

#endif  // STOKE_SRC_UTIL_TRACE_LOG_H_

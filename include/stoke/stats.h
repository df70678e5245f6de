// stoke/stats.h: what each stage of a loader did, in physical units.
//
// A LoaderStats is a snapshot taken by Loader::stats(); the counters behind it are
// per-thread and lock-free, so a snapshot taken while batches flow is consistent
// per counter but not across counters (it is a sample, not a transaction).
#ifndef STOKE_STATS_H_
#define STOKE_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace stoke {

struct ThreadStats {
  uint64_t items = 0;          // samples (read, decode) or batches (dispatch)
  uint64_t bytes = 0;          // bytes moved by this thread
  double busy_seconds = 0;     // doing the stage's work (read stage, io_uring: >= 1 read in flight)
  double blocked_seconds = 0;  // waiting for work or for room downstream
};

struct StageStats {
  // "dispatch", "read", "decode" (or "decode/inline"), "copy". The copy stage's
  // items are batches, its bytes those copied from the ring, its busy time the
  // device's: on a GPU, the busier of the bus copies and the dtype conversions,
  // which overlap on two streams (timed by events).
  std::string name;
  std::vector<ThreadStats> threads;
  ThreadStats Total() const;
};

struct SkippedSample {
  uint64_t index = 0;  // the dataset index
  std::string error;   // the Status, as text: names the file and the cause
};

// One event of a loader's trace (LoaderOptions::trace_events): a span of a
// stage's work on one thread, or a counter's value at an instant. Times are
// steady_clock nanoseconds.
struct TraceEvent {
  const char* name = "";  // "read", "decode", "copy", "wait for batch"; or a counter
  int thread = 0;         // small numbers, one per loader or consumer thread
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t epoch = 0;  // the batch the span worked for
  int64_t batch = 0;
  bool counter = false;  // a counter sample: `value` at start_ns
  int64_t value = 0;     // the counter's value, or the samples a span worked on
};

struct LoaderStats {
  std::vector<StageStats> stages;
  uint64_t batches = 0;  // delivered to the consumer
  uint64_t samples = 0;  // in those batches
  uint64_t bytes = 0;    // sample bytes in those batches
  uint64_t skipped = 0;  // bad samples replaced under ErrorPolicy::kSkip
  // The first skipped samples (at most 1000), in the order they were found.
  std::vector<SkippedSample> skipped_samples;
  double consumer_wait_seconds = 0;  // time Next() waited for a batch: the consumer was starved
  // Of the copy stage's work, the time spent converting to float32/float16
  // (the kernel's time on a GPU; 0 for uint8 output).
  double convert_seconds = 0;
  uint64_t ring_bytes = 0;   // memory of the ring's slots
  uint64_t arena_bytes = 0;  // memory of the read buffers
  std::string io_backend;    // "pread", "io_uring", "mmap" or "http"
  // Remote data (s3://, http(s)://): HTTP requests made for samples (retries
  // included; adjacent records and quasi windows take one each), and of those
  // the retries (5xx, 429/SlowDown, resets, timeouts, short bodies).
  uint64_t http_requests = 0;
  uint64_t http_retries = 0;
  std::string device;  // where batches are delivered: "cpu" or "cuda:N"
};

}  // namespace stoke

#endif  // STOKE_STATS_H_

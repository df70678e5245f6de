// Per-thread stage counters: written by their own thread with relaxed atomics,
// read by stats snapshots from any thread. No locks; a snapshot is consistent
// per counter only.
#ifndef STOKE_SRC_UTIL_COUNTERS_H_
#define STOKE_SRC_UTIL_COUNTERS_H_

#include <atomic>
#include <chrono>
#include <cstdint>

#include "stoke/stats.h"

namespace stoke::internal {

using Clock = std::chrono::steady_clock;

inline int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// One thread's counters, on their own cache line so threads don't share one.
struct alignas(64) ThreadCounters {
  std::atomic<uint64_t> items{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<int64_t> busy_ns{0};
  std::atomic<int64_t> blocked_ns{0};

  void Add(std::atomic<uint64_t>& c, uint64_t v) { c.fetch_add(v, std::memory_order_relaxed); }
  void AddBusy(int64_t ns) { busy_ns.fetch_add(ns, std::memory_order_relaxed); }
  void AddBlocked(int64_t ns) { blocked_ns.fetch_add(ns, std::memory_order_relaxed); }
  void Reset() {
    items = 0;
    bytes = 0;
    busy_ns = 0;
    blocked_ns = 0;
  }

  ThreadStats Snapshot() const {
    ThreadStats s;
    s.items = items.load(std::memory_order_relaxed);
    s.bytes = bytes.load(std::memory_order_relaxed);
    s.busy_seconds = static_cast<double>(busy_ns.load(std::memory_order_relaxed)) * 1e-9;
    s.blocked_seconds = static_cast<double>(blocked_ns.load(std::memory_order_relaxed)) * 1e-9;
    return s;
  }
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_UTIL_COUNTERS_H_

#include "stoke/options.h"
#include "stoke/stats.h"

namespace stoke {

std::string_view OrderName(Order order) {
  switch (order) {
    case Order::kSequential:
      return "sequential";
    case Order::kFullShuffle:
      return "full";
    case Order::kBlock:
      return "block";
    case Order::kQuasiRandom:
      return "quasi";
  }
  return "?";
}

std::string_view IoBackendName(IoBackend io) {
  switch (io) {
    case IoBackend::kAuto:
      return "auto";
    case IoBackend::kPread:
      return "pread";
    case IoBackend::kUring:
      return "uring";
    case IoBackend::kMmap:
      return "mmap";
  }
  return "?";
}

ThreadStats StageStats::Total() const {
  ThreadStats t;
  for (const ThreadStats& s : threads) {
    t.items += s.items;
    t.bytes += s.bytes;
    t.busy_seconds += s.busy_seconds;
    t.blocked_seconds += s.blocked_seconds;
  }
  return t;
}

}  // namespace stoke

// NVTX ranges, so that Nsight Systems shows stoke's stages on each thread: a
// TraceRange pushes a range named `name` on construction and pops it on
// destruction. Compiled out (an empty object) without CUDA. `name` must outlive
// the range (a string literal).
#ifndef STOKE_SRC_UTIL_TRACE_H_
#define STOKE_SRC_UTIL_TRACE_H_

#if defined(STOKE_WITH_NVTX)
#include <nvtx3/nvToolsExt.h>
#endif

namespace stoke::internal {

#if defined(STOKE_WITH_NVTX)
class TraceRange {
 public:
  explicit TraceRange(const char* name) { nvtxRangePushA(name); }
  ~TraceRange() { nvtxRangePop(); }
  TraceRange(const TraceRange&) = delete;
  TraceRange& operator=(const TraceRange&) = delete;
};
#else
class TraceRange {
 public:
  explicit TraceRange(const char*) {}
  TraceRange(const TraceRange&) = delete;
  TraceRange& operator=(const TraceRange&) = delete;
};
#endif

}  // namespace stoke::internal

#endif  // STOKE_SRC_UTIL_TRACE_H_

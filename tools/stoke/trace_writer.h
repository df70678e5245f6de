// Writes a loader's trace (Loader::trace) and the consumer's own step spans as
// Chrome trace-event JSON, which Perfetto and chrome://tracing open: one track
// per thread, named after the stage it ran, a span per batch per stage, and
// counters (batches ready in the ring).
#ifndef STOKE_TOOLS_STOKE_TRACE_WRITER_H_
#define STOKE_TOOLS_STOKE_TRACE_WRITER_H_

#include <string>
#include <vector>

#include "stoke/stats.h"
#include "stoke/status.h"

namespace stoke::cli {

// Times are relative to `origin_ns` (steady_clock). IO errors name `path`.
Status WriteChromeTrace(const std::string& path, const std::vector<TraceEvent>& events,
                        int64_t origin_ns, uint64_t dropped);

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_TRACE_WRITER_H_

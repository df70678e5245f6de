// `stoke profile --report FILE`: one self-contained HTML file (inline SVG, no
// scripts, no network) with the verdict, the stage table and four plots:
// throughput over time per stage, ring occupancy over time, the consumer's
// wait over time, and each stage's achieved rate against its capacity and the
// measured ceilings.
#ifndef STOKE_TOOLS_STOKE_REPORT_WRITER_H_
#define STOKE_TOOLS_STOKE_REPORT_WRITER_H_

#include <string>
#include <vector>

#include "profile/verdict.h"
#include "stoke/stats.h"
#include "stoke/status.h"

namespace stoke::cli {

struct ReportInput {
  std::string title;    // the dataset's description
  std::string summary;  // the text report, shown as is
  internal::Verdict verdict;
  internal::Ceilings ceilings;
  int decode_threads = 0;
  std::vector<TraceEvent> events;
  int64_t origin_ns = 0;  // the run's start
  double wall_seconds = 0;
};

// IO errors name `path`.
Status WriteHtmlReport(const std::string& path, const ReportInput& in);

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_REPORT_WRITER_H_

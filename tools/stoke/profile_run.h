// `stoke profile` as parse -> run -> report. The request is what the command
// line asked for; the run fills a plain result (what was delivered, the stage
// statistics, the ceilings and the verdict); the writers read only that.
#ifndef STOKE_TOOLS_STOKE_PROFILE_RUN_H_
#define STOKE_TOOLS_STOKE_PROFILE_RUN_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "command.h"
#include "pipeline_flags.h"
#include "profile/conclusion.h"
#include "profile/verdict.h"
#include "stoke/stoke.h"

namespace stoke::cli {

struct ProfileRequest {
  std::string path;
  Pipeline pipeline;  // the loader's options as asked for
  int64_t epochs = 1;
  int64_t max_batches = 0;  // per epoch; 0: all
  std::string step = "none";
  bool digest = false;
  bool progress = false;  // a live line on a terminal's stderr
  bool ceilings = true;
  bool remeasure = false;
  std::string trace_path, report_path, json_path;  // empty: not written
  // The command line, for the advice's commands.
  std::vector<std::string> args;
  std::set<std::string> valued;  // the flags that take a value

  bool wants_trace() const { return !trace_path.empty() || !report_path.empty(); }
};

struct ProfileResult {
  std::string dataset;           // Describe()
  LoaderOptions loader_options;  // with the loader's automatic choices made
  LoaderStats stats;
  uint64_t samples = 0, batches = 0, bytes = 0;
  double seconds = 0;  // the whole run
  double steady = 0;   // samples/s over the run's second half
  double first_batch_seconds = 0;
  double label_mix = 0;  // LabelMix::Mean
  double peak_rss_bytes = 0;
  std::string digest;  // hex; empty without --digest
  internal::RunFacts facts;
  bool ceilings_cached = false;
  internal::Verdict verdict;
  internal::Conclusion conclusion;
  // With --trace or --report: the loader's events and the step's spans.
  std::vector<TraceEvent> events;
  uint64_t trace_dropped = 0;
  int64_t start_ns = 0;  // the run's origin on the trace clock
};

// Runs the request's loader (and step) over its dataset, then measures the
// ceilings and judges the run.
std::optional<Failure> RunProfile(ProfileRequest& request, ProfileResult* result);

// The printed report; --report embeds it.
std::string ProfileText(const ProfileRequest& request, const ProfileResult& result);
Status WriteProfileJson(const ProfileRequest& request, const ProfileResult& result);
// --trace and --report.
Status WriteProfileTraces(const ProfileRequest& request, const ProfileResult& result,
                          const std::string& text);

// This profile's command line as the user would type it again, on `path`
// (the positional argument replaced), with --shuffle `order` (empty: as given)
// and, for shards, --format shards; without the output flags, and without
// --max-batches: the advice predicts a steady rate, which a run cut to a few
// batches does not reach.
std::string ProfileCommandLine(const ProfileRequest& request, const std::string& path,
                               const std::string& order, bool shards);
// `arg` quoted for a POSIX shell where it needs to be.
std::string Quote(const std::string& arg);

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_PROFILE_RUN_H_

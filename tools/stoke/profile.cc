// `stoke profile`: the usage, the parse, and the command: parse -> run -> report
// (profile_run.cc, profile_report.cc).
#include "profile.h"

#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "command.h"
#include "flags.h"
#include "profile_run.h"

namespace stoke::cli {

namespace {

// printf format: %s is the shared pipeline flags.
const char kProfileUsage[] =
    "usage: stoke profile PATH [options]\n"
    "\n"
    "Runs a loader over the dataset at PATH and reports what each stage did.\n"
    "\n"
    "%s"
    "run:\n"
    "  --epochs N                     epochs to run (default 1)\n"
    "  --max-batches N                stop each epoch after N batches (default: all)\n"
    "  --step none|sleep:T|MODEL      the consumer: nothing (the loader alone), a fixed step\n"
    "                                 time (sleep:5ms, sleep:500us), or a stoke::train step\n"
    "                                 (mlp:784-300-100-10, cnn:32-64-128-10) (default none)\n"
    "  --no-ceilings                  skip measuring the storage, decode and memory ceilings\n"
    "  --remeasure                    measure the ceilings again (they are cached per host,\n"
    "                                 dataset and storage model)\n"
    "  --trace FILE                   write a Chrome trace (opens in Perfetto): a span per\n"
    "                                 batch per stage on every thread, ring occupancy\n"
    "  --report FILE                  write one self-contained HTML report with plots\n"
    "output:\n"
    "  --json FILE                    write the report as JSON\n"
    "  --digest                       hash every batch's bytes and labels, in order\n"
    "  --quiet                        no live progress\n"
    "\n"
    "exit status: 0 success, 1 data or I/O error, 2 usage error\n";

}  // namespace

void PrintProfileUsage(FILE* out) { std::fprintf(out, kProfileUsage, kPipelineUsage); }

std::string Quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t'\"$*?;&|<>()\\") == std::string::npos) return arg;
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string ProfileCommandLine(const ProfileRequest& request, const std::string& path,
                               const std::string& order, bool shards) {
  static const std::set<std::string> kDropped = {"json", "report", "trace", "max-batches"};
  static const std::set<std::string> kDroppedSwitches = {"remeasure", "digest", "quiet"};
  const std::vector<std::string>& args = request.args;
  std::string out = "stoke profile " + Quote(path);
  bool has_order = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!a.starts_with("--")) continue;  // the path
    std::string name = a.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const bool takes_value = request.valued.count(name) > 0;
    if (takes_value && !inline_value && i + 1 < args.size()) value = args[++i];
    if (kDropped.count(name) || kDroppedSwitches.count(name)) continue;
    if (name == "shuffle") {
      has_order = true;
      if (!order.empty()) value = order;
    }
    if (name == "format" && shards) value = "shards";
    out += " --" + name;
    if (takes_value) out += " " + Quote(value);
  }
  if (!has_order && !order.empty()) out += " --shuffle " + order;
  return out;
}

namespace {

// Every error here is a usage error naming its flag.
StatusOr<ProfileRequest> ParseProfile(const std::vector<std::string>& args) {
  ProfileRequest r;
  r.args = args;
  r.valued = PipelineValuedFlags();
  r.valued.insert({"epochs", "max-batches", "json", "step", "trace", "report"});
  std::set<std::string> switches = PipelineSwitches();
  switches.insert({"digest", "quiet", "no-ceilings", "remeasure"});
  STOKE_ASSIGN_OR_RETURN(const Flags flags, Flags::Parse(args, r.valued, switches));
  if (flags.positional().size() != 1) {
    PrintProfileUsage(stderr);
    return InvalidArgumentError("expected exactly one dataset PATH");
  }
  r.path = flags.positional()[0];
  STOKE_RETURN_IF_ERROR(ParsePipelineFlags(flags, 32, "none", &r.pipeline));
  STOKE_ASSIGN_OR_RETURN(r.epochs, flags.Int("epochs", 1, 1, int64_t{1} << 30));
  STOKE_ASSIGN_OR_RETURN(r.max_batches, flags.Int("max-batches", 0, 0, int64_t{1} << 40));
  r.step = flags.String("step", "none");
  r.digest = flags.Has("digest");
  r.progress = !flags.Has("quiet") && isatty(STDERR_FILENO);
  r.ceilings = !flags.Has("no-ceilings");
  r.remeasure = flags.Has("remeasure");
  r.trace_path = flags.String("trace", "");
  r.report_path = flags.String("report", "");
  r.json_path = flags.String("json", "");
  return r;
}

}  // namespace

int ProfileCommand(const std::vector<std::string>& args) {
  auto request = ParseProfile(args);
  if (!request.ok()) return Fail("profile", Failure::Usage(request.status()));
  ProfileResult result;
  if (auto failed = RunProfile(*request, &result)) return Fail("profile", *failed);
  const std::string text = ProfileText(*request, result);
  std::fputs(text.c_str(), stdout);
  if (Status s = WriteProfileTraces(*request, result, text); !s.ok()) {
    return Fail("profile", Failure::Data(s));
  }
  if (!request->json_path.empty()) {
    if (Status s = WriteProfileJson(*request, result); !s.ok()) {
      return Fail("profile", Failure::Data(s));
    }
  }
  return 0;
}

}  // namespace stoke::cli

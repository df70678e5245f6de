#include "profile.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ceilings_cache.h"
#include "cuda/h2d_peak.h"
#include "digest.h"
#include "flags.h"
#include "json.h"
#include "label_mix.h"
#include "pipeline_flags.h"
#include "profile/ceilings.h"
#include "profile/conclusion.h"
#include "profile/verdict.h"
#include "report_writer.h"
#include "step.h"
#include "stoke/stoke.h"
#include "trace_writer.h"
#include "util/counters.h"
#include "util/trace_log.h"

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

namespace {

constexpr int kExitData = 1;

// printf to stdout, and appended to *out.
void Say(std::string* out, const char* format, ...) __attribute__((format(printf, 2, 3)));
void Say(std::string* out, const char* format, ...) {
  char buf[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  std::fputs(buf, stdout);
  *out += buf;
}

// The median size of a few of the dataset's whole-file samples.
uint64_t TypicalFileBytes(const Dataset& d) {
  std::vector<uint64_t> sizes;
  for (uint64_t i = 0; i < std::min<uint64_t>(d.size(), 16); ++i) {
    auto file = d.file_system()->Open(d.file_path(d.Locate(i).file), {});
    if (!file.ok()) continue;
    auto size = (*file)->Size();
    if (size.ok()) sizes.push_back(*size);
  }
  if (sizes.empty()) return d.spec().bytes();
  std::sort(sizes.begin(), sizes.end());
  return sizes[sizes.size() / 2];
}
constexpr int kExitUsage = 2;

int Fail(int code, const Status& status) {
  std::fprintf(stderr, "stoke profile: %s\n", status.ToString().c_str());
  return code;
}

std::string Quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t'\"$*?;&|<>()\\") == std::string::npos) return arg;
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// This profile's command line as the user would type it again, on `path`
// (the positional argument replaced), with --shuffle `order` (empty: as
// given) and, for shards, --format shards; without the output flags, and
// without --max-batches: the advice predicts a steady rate, which a run cut to
// a few batches does not reach. `valued`: the flags that take a value, as
// parsed.
std::string ProfileCommandLine(const std::vector<std::string>& args,
                               const std::set<std::string>& valued, const std::string& path,
                               const std::string& order, bool shards) {
  static const std::set<std::string> kDropped = {"json", "report", "trace", "max-batches"};
  static const std::set<std::string> kDroppedSwitches = {"remeasure", "digest", "quiet"};
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
    const bool takes_value = valued.count(name) > 0;
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

}  // namespace

int ProfileCommand(const std::vector<std::string>& args) {
  std::set<std::string> valued = PipelineValuedFlags();
  valued.insert({"epochs", "max-batches", "json", "step", "trace", "report"});
  std::set<std::string> switches = PipelineSwitches();
  switches.insert({"digest", "quiet", "no-ceilings", "remeasure"});
  auto parsed = Flags::Parse(args, valued, switches);
  if (!parsed.ok()) return Fail(kExitUsage, parsed.status());
  const Flags& flags = *parsed;
  if (flags.positional().size() != 1) {
    PrintProfileUsage(stderr);
    return Fail(kExitUsage, InvalidArgumentError("expected exactly one dataset PATH"));
  }
  const std::string path = flags.positional()[0];

  // 1. Options. Every error here is a usage error naming its flag.
  Pipeline pipeline;
  if (Status s = ParsePipelineFlags(flags, 32, "none", &pipeline); !s.ok()) {
    return Fail(kExitUsage, s);
  }
  if (flags.Has("trace") || flags.Has("report")) {
    pipeline.options.trace_events = uint64_t{1} << 20;  // 48 MiB, touched as used
  }
  const LoaderOptions& o = pipeline.options;
  auto epochs = flags.Int("epochs", 1, 1, int64_t{1} << 30);
  if (!epochs.ok()) return Fail(kExitUsage, epochs.status());
  auto max_batches = flags.Int("max-batches", 0, 0, int64_t{1} << 40);
  if (!max_batches.ok()) return Fail(kExitUsage, max_batches.status());
  const bool digest_on = flags.Has("digest");
  const bool progress = !flags.Has("quiet") && isatty(STDERR_FILENO);

  // 2. The dataset.
  auto dataset = OpenDataset(path, pipeline.split, &pipeline);
  if (!dataset.ok()) {
    return Fail(dataset.status().code() == StatusCode::kInvalidArgument &&
                        dataset.status().message().starts_with("--")
                    ? kExitUsage
                    : kExitData,
                dataset.status());
  }
  const std::string& format = pipeline.format;

  // 3. The loader, and the consumer's step.
  auto opened = Loader::Open(*dataset, o);
  if (!opened.ok()) {
    return Fail(LoaderOpenExit(opened.status()),
                Status(opened.status().code(), CommandSpelling(opened.status().message())));
  }
  Loader& loader = **opened;
  std::fprintf(stderr, "stoke profile: %s\n", loader.dataset().Describe().c_str());
  const std::string step_text = flags.String("step", "none");
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto parsed_step = Step::Parse(step_text, loader.sample_spec(), loader.options().device,
                                 std::max(1, cores - loader.options().decode_threads));
  if (!parsed_step.ok()) {
    const StatusCode code = parsed_step.status().code();
    return Fail(code == StatusCode::kInvalidArgument ? kExitUsage : kExitData,
                parsed_step.status().WithContext("--step"));
  }
  Step& step = **parsed_step;

  // 4. Run.
  Digest digest;
  std::vector<std::byte> host_copy;  // --digest of device batches
  uint64_t samples = 0, batches = 0, bytes = 0;
  // When each batch came, and the samples delivered by then: the steady rate
  // is the run's second half, which leaves out the pipeline's filling (for
  // quasi order, a group of windows read before the first batch).
  std::vector<std::pair<std::chrono::steady_clock::time_point, uint64_t>> arrivals;
  LabelMix label_mix;
  std::vector<TraceEvent> step_spans;
  if (o.trace_events > 0) step_spans.reserve(1 << 16);
  const int64_t start_ns = internal::NowNanos();
  const auto start = std::chrono::steady_clock::now();
  auto last_progress = start;
  std::map<std::string, double> live_busy;  // progress: each stage's busy seconds so far
  double live_wait = 0;
  const int64_t per_epoch = *max_batches > 0
                                ? std::min<int64_t>(*max_batches, loader.batches_per_epoch())
                                : loader.batches_per_epoch();
  arrivals.reserve(static_cast<size_t>(std::min<int64_t>(per_epoch * *epochs, 1 << 20)));
  for (int64_t epoch = 0; epoch < *epochs; ++epoch) {
    const Position at = loader.position();
    if (at.epoch + 1 == epoch && at.batch == loader.batches_per_epoch()) {
      StatusOr<Batch> end_marker = loader.Next();  // keeps what was read ahead
      if (!end_marker.ok()) return Fail(kExitData, end_marker.status());
    } else if (!(at == Position{epoch, 0})) {
      Status s = loader.Seek({epoch, 0});  // --max-batches cut the epoch short
      if (!s.ok()) return Fail(kExitData, s);
    }
    for (int64_t b = 0; b < per_epoch; ++b) {
      StatusOr<Batch> batch = loader.Next();
      if (!batch.ok()) {
        if (progress) std::fputs("\n", stderr);
        return Fail(kExitData, batch.status().WithContext("epoch " + std::to_string(epoch) +
                                                          ", batch " + std::to_string(b)));
      }
      if (digest_on && batch->device().kind != DeviceKind::kCpu) {
        host_copy.resize(std::max(host_copy.size(), batch->bytes()));
        if (Status s = batch->CopyToHost(host_copy); !s.ok()) return Fail(kExitData, s);
        digest.Update(host_copy.data(), batch->bytes());
        digest.Update(batch->labels().data(), batch->labels().size_bytes());
      } else if (digest_on) {
        digest.Update(batch->data(), batch->bytes());
        digest.Update(batch->labels().data(), batch->labels().size_bytes());
      }
      const int64_t step_start = internal::NowNanos();
      if (Status s = step.Run(*batch); !s.ok()) return Fail(kExitData, s.WithContext("--step"));
      if (o.trace_events > 0 && step.bounded() && step_spans.size() < step_spans.capacity()) {
        step_spans.push_back({"step", internal::TraceThreadId(), step_start, internal::NowNanos(),
                              batch->epoch(), batch->index(), false, batch->size()});
      }
      samples += static_cast<uint64_t>(batch->size());
      bytes += batch->bytes();
      ++batches;
      if (arrivals.size() < arrivals.capacity()) {
        arrivals.emplace_back(std::chrono::steady_clock::now(), samples);
      }
      label_mix.Add(batch->labels());
      const auto now = std::chrono::steady_clock::now();
      if (progress && now - last_progress > std::chrono::milliseconds(250)) {
        // Each stage's occupancy over the last interval: busy time per thread.
        const double interval = std::chrono::duration<double>(now - last_progress).count();
        last_progress = now;
        const LoaderStats live = loader.stats();
        std::string occupancy;
        for (const StageStats& stage : live.stages) {
          if (stage.name == "dispatch" || stage.threads.empty()) continue;
          const double busy = stage.Total().busy_seconds;
          double& before = live_busy[stage.name];
          char buf[64];
          std::snprintf(buf, sizeof buf, "  %s %.0f%%", stage.name.c_str(),
                        100 * (busy - before) / (interval * stage.threads.size()));
          occupancy += buf;
          before = busy;
        }
        const double wait = live.consumer_wait_seconds - live_wait;
        live_wait = live.consumer_wait_seconds;
        const double secs = std::chrono::duration<double>(now - start).count();
        std::fprintf(
            stderr,
            "\r  epoch %lld  batch %lld/%lld  %.0f samples/s  %.1f MB/s%s  waiting %.0f%%   ",
            static_cast<long long>(epoch), static_cast<long long>(b + 1),
            static_cast<long long>(per_epoch), samples / secs, bytes / secs / 1e6,
            occupancy.c_str(), 100 * wait / interval);
      }
    }
  }
  const auto end = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(end - start).count();
  const double to_first =
      arrivals.empty() ? seconds : std::chrono::duration<double>(arrivals[0].first - start).count();
  double steady = samples / seconds;
  if (arrivals.size() >= 2) {
    const auto& [mid_at, mid_samples] = arrivals[(arrivals.size() - 1) / 2];
    const auto& [last_at, last_samples] = arrivals.back();
    const double span = std::chrono::duration<double>(last_at - mid_at).count();
    if (span > 0) steady = static_cast<double>(last_samples - mid_samples) / span;
  }
  if (progress) std::fputs("\r\033[K", stderr);
  const LoaderStats stats = loader.stats();
  // What the report needs of the loader; then the loader goes, before the
  // ceilings are measured: its read-ahead would share the storage with them.
  const LoaderOptions loader_options = loader.options();
  const size_t batch_bytes = loader.sample_spec().bytes() * static_cast<size_t>(o.batch_size);
  uint64_t trace_dropped = 0;
  std::vector<TraceEvent> trace_events;
  if (flags.Has("trace") || flags.Has("report")) trace_events = loader.trace(&trace_dropped);
  opened->reset();
  const double peak_rss = PeakRssBytes();

  // The verdict, against ceilings measured now that the run is over.
  internal::RunFacts facts;
  facts.stats = stats;
  facts.wall_seconds = seconds;
  facts.samples = samples;
  facts.has_step = step.bounded();
  facts.step = step_text;
  facts.step_busy_seconds = step.busy_seconds();
  facts.options = loader_options;
  facts.cores = cores;
  const SampleLocation first = (*dataset)->Locate(0);
  facts.stored_bytes_per_sample = first.whole_file ? TypicalFileBytes(**dataset) : first.length;
  facts.file_per_sample = first.whole_file;
  facts.storage_model = pipeline.storage_model;
  facts.jpeg = (*dataset)->decode_is_compute_bound();
  {
    // The commands that follow the advice. Packed shards go beside the data.
    const bool shuffled = o.order != Order::kSequential;
    std::string base = path;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    const std::string shards = base + ".shards";
    facts.rerun_quasi = ProfileCommandLine(args, valued, path, "quasi", false);
    std::string pack = "stoke pack " + Quote(path) + " " + Quote(shards);
    if (format != "auto" && format != "imagefolder") pack += " --format " + format;
    facts.pack = pack;
    facts.rerun_packed = ProfileCommandLine(args, valued, shards, shuffled ? "quasi" : "", true);
  }
  bool ceilings_cached = false;
  if (!flags.Has("no-ceilings")) {
    const std::string key = CeilingsKey((*dataset)->Describe(), pipeline.storage_model);
    std::optional<internal::Ceilings> cached;
    if (!flags.Has("remeasure")) cached = LoadCeilings(key);
    if (cached) {
      facts.ceilings = *cached;
      ceilings_cached = true;
    } else {
      facts.ceilings = internal::MeasureCeilings(**dataset, pipeline.storage_bytes_per_second);
      if (o.device.kind == DeviceKind::kCuda) {
        facts.ceilings.h2d_bytes_per_second =
            internal::MeasurePinnedH2D(o.device.index, batch_bytes);
      }
      StoreCeilings(key, facts.ceilings);
    }
  }
  const internal::Verdict verdict = internal::Judge(facts);

  // 5. Report: printed, and kept for --report.
  std::string report;
  Say(&report, "dataset      %s\n", (*dataset)->Describe().c_str());
  Say(&report, "delivered    %llu samples in %llu batches, %.3f s: %.0f samples/s, %.1f MB/s\n",
      static_cast<unsigned long long>(samples), static_cast<unsigned long long>(batches), seconds,
      samples / seconds, bytes / seconds / 1e6);
  Say(&report,
      "steady       %.0f samples/s over the run's second half; %.3f s to the first batch\n", steady,
      to_first);
  Say(&report,
      "label mix    %.3f: a batch's labels against the run's, mean total-variation distance "
      "(0: mixed as the whole; full shuffle: sampling noise only)\n",
      label_mix.Mean());
  Say(&report, "memory       ring %.1f MiB, read buffers %.1f MiB, peak RSS %.1f MiB\n",
      stats.ring_bytes / 1048576.0, stats.arena_bytes / 1048576.0, peak_rss / 1048576.0);
  Say(&report, "device       %s, %s batches\n", stats.device.c_str(),
      std::string(DTypeName(o.output_dtype)).c_str());
  for (const StageStats& stage : stats.stages) {
    const ThreadStats t = stage.Total();
    if (stage.name == "copy" && t.busy_seconds > 0) {
      Say(&report, "copy         %.1f MB in %.3f s busy: %.2f GB/s\n", t.bytes / 1e6,
          t.busy_seconds, t.bytes / t.busy_seconds / 1e9);
    }
  }
  Say(&report, "consumer     waited %.3f s for data (%.0f%% of the run)\n",
      stats.consumer_wait_seconds, 100.0 * stats.consumer_wait_seconds / seconds);
  if (stats.skipped) {
    Say(&report, "skipped      %llu bad samples, e.g. %s\n",
        static_cast<unsigned long long>(stats.skipped),
        stats.skipped_samples.empty() ? "" : stats.skipped_samples[0].error.c_str());
  }
  Say(&report, "%-14s %7s %12s %12s %10s %10s\n", "stage", "threads", "items", "MB", "busy s",
      "blocked s");
  for (const StageStats& stage : stats.stages) {
    const ThreadStats t = stage.Total();
    std::string name = stage.name == "read" ? "read/" + stats.io_backend : stage.name;
    Say(&report, "%-14s %7zu %12llu %12.1f %10.3f %10.3f\n", name.c_str(), stage.threads.size(),
        static_cast<unsigned long long>(t.items), t.bytes / 1e6, t.busy_seconds, t.blocked_seconds);
  }
  if (digest_on) Say(&report, "digest       %s\n", digest.Hex().c_str());
  const internal::Ceilings& ceil = facts.ceilings;
  if (!flags.Has("no-ceilings")) {
    std::string line;
    char buf[128];
    if (ceil.storage_sequential_bytes_per_second > 0) {
      std::snprintf(
          buf, sizeof buf, "storage %.1f MB/s sequential, %.0f random reads/s (%.0f 8 at a time); ",
          ceil.storage_sequential_bytes_per_second / 1e6, ceil.storage_random_reads_per_second,
          ceil.storage_random_reads_per_second_parallel);
      line += buf;
    }
    if (ceil.decode_samples_per_second_per_core > 0) {
      std::snprintf(buf, sizeof buf, "decode %.0f samples/s per core; ",
                    ceil.decode_samples_per_second_per_core);
      line += buf;
    }
    if (ceil.decode_samples_per_second_per_core_packed > 0) {
      std::snprintf(buf, sizeof buf, "%.0f once packed; ",
                    ceil.decode_samples_per_second_per_core_packed);
      line += buf;
    }
    std::snprintf(buf, sizeof buf, "memory copy %.1f GB/s",
                  ceil.memory_copy_bytes_per_second / 1e9);
    line += buf;
    if (ceil.h2d_bytes_per_second > 0) {
      std::snprintf(buf, sizeof buf, "; pinned H2D %.1f GB/s", ceil.h2d_bytes_per_second / 1e9);
      line += buf;
    }
    Say(&report, "ceilings     %s%s\n", line.c_str(),
        ceilings_cached ? " (cached; --remeasure to measure again)" : "");
  }
  Say(&report, "capacity    ");
  for (const internal::StageCapacity& c : verdict.stages) {
    if (c.capacity > 0) {
      Say(&report, " %s %.0f/s (%.0f%% busy)", c.stage.c_str(), c.capacity, 100 * c.utilisation);
    } else {
      Say(&report, " %s unbounded", c.stage.c_str());
    }
  }
  Say(&report, "\nbottleneck   %s\n", verdict.explanation.c_str());
  for (size_t i = 0; i < verdict.advice.size(); ++i) {
    const internal::Advice& a = verdict.advice[i];
    Say(&report, "advice %zu     %s: about %.0f samples/s (%.1fx)\n", i + 1, a.what.c_str(),
        a.predicted_samples_per_second, a.gain);
    for (const std::string& command : a.commands)
      Say(&report, "               $ %s\n", command.c_str());
  }
  const internal::Conclusion conclusion = internal::Conclude(verdict, facts);
  Say(&report, "in short     %s\n", conclusion.learned.c_str());
  Say(&report, "next         %s\n", conclusion.next.c_str());

  if (flags.Has("trace") || flags.Has("report")) {
    const uint64_t dropped = trace_dropped;
    std::vector<TraceEvent> events = std::move(trace_events);
    events.insert(events.end(), step_spans.begin(), step_spans.end());
    if (flags.Has("trace")) {
      Status s = WriteChromeTrace(flags.String("trace", ""), events, start_ns, dropped);
      if (!s.ok()) return Fail(kExitData, s);
    }
    if (flags.Has("report")) {
      ReportInput in;
      in.title = (*dataset)->Describe();
      in.summary = report;
      in.verdict = verdict;
      in.ceilings = facts.ceilings;
      in.decode_threads = loader_options.decode_threads;
      in.events = std::move(events);
      in.origin_ns = start_ns;
      in.wall_seconds = seconds;
      if (Status s = WriteHtmlReport(flags.String("report", ""), in); !s.ok()) {
        return Fail(kExitData, s);
      }
    }
  }
  if (flags.Has("json")) {
    JsonWriter j;
    j.BeginObject();
    j.Key("dataset").String((*dataset)->Describe());
    j.Key("format").String(format);
    j.Key("io_backend").String(stats.io_backend);
    j.Key("device").String(stats.device);
    j.Key("dtype").String(std::string(DTypeName(o.output_dtype)));
    j.Key("samples").Uint(samples);
    j.Key("batches").Uint(batches);
    j.Key("skipped").Uint(stats.skipped);
    j.Key("seconds").Number(seconds);
    j.Key("samples_per_second").Number(samples / seconds);
    j.Key("steady_samples_per_second").Number(steady);
    j.Key("first_batch_seconds").Number(to_first);
    j.Key("batch_label_mix").Number(label_mix.Mean());
    j.Key("order").String(std::string(OrderName(o.order)));
    j.Key("ring_slots").Int(loader_options.ring_slots);
    j.Key("bytes_per_second").Number(bytes / seconds);
    j.Key("peak_rss_bytes").Uint(static_cast<uint64_t>(peak_rss));
    j.Key("ring_bytes").Uint(stats.ring_bytes);
    j.Key("arena_bytes").Uint(stats.arena_bytes);
    j.Key("consumer_wait_seconds").Number(stats.consumer_wait_seconds);
    j.Key("digest").String(digest_on ? digest.Hex() : "");
    j.Key("skipped_samples").BeginArray();
    for (const SkippedSample& s : stats.skipped_samples) {
      j.BeginObject().Key("index").Uint(s.index).Key("error").String(s.error).EndObject();
    }
    j.EndArray();
    j.Key("step").String(step_text);
    j.Key("bottleneck").String(verdict.bottleneck);
    j.Key("starved_fraction").Number(verdict.starved_fraction);
    j.Key("explanation").String(verdict.explanation);
    j.Key("ceilings").BeginObject();
    j.Key("storage_sequential_bytes_per_second").Number(ceil.storage_sequential_bytes_per_second);
    j.Key("storage_random_reads_per_second").Number(ceil.storage_random_reads_per_second);
    j.Key("storage_random_reads_per_second_parallel")
        .Number(ceil.storage_random_reads_per_second_parallel);
    j.Key("decode_samples_per_second_per_core").Number(ceil.decode_samples_per_second_per_core);
    j.Key("decode_samples_per_second_per_core_packed")
        .Number(ceil.decode_samples_per_second_per_core_packed);
    j.Key("memory_copy_bytes_per_second").Number(ceil.memory_copy_bytes_per_second);
    j.Key("h2d_bytes_per_second").Number(ceil.h2d_bytes_per_second);
    j.Key("cached").Bool(ceilings_cached);
    j.EndObject();
    j.Key("capacities").BeginArray();
    for (const internal::StageCapacity& c : verdict.stages) {
      j.BeginObject().Key("stage").String(c.stage);
      j.Key("samples_per_second").Number(c.samples_per_second);
      j.Key("utilisation").Number(c.utilisation);
      j.Key("capacity").Number(c.capacity).EndObject();
    }
    j.EndArray();
    j.Key("in_short").String(conclusion.learned);
    j.Key("next").String(conclusion.next);
    j.Key("advice").BeginArray();
    for (const internal::Advice& a : verdict.advice) {
      j.BeginObject().Key("what").String(a.what);
      j.Key("predicted_samples_per_second").Number(a.predicted_samples_per_second);
      j.Key("gain").Number(a.gain);
      j.Key("commands").BeginArray();
      for (const std::string& command : a.commands) j.String(command);
      j.EndArray().EndObject();
    }
    j.EndArray();
    j.Key("stages").BeginArray();
    for (const StageStats& stage : stats.stages) {
      const ThreadStats t = stage.Total();
      j.BeginObject();
      j.Key("name").String(stage.name);
      j.Key("threads").Uint(stage.threads.size());
      j.Key("items").Uint(t.items);
      j.Key("bytes").Uint(t.bytes);
      j.Key("busy_seconds").Number(t.busy_seconds);
      j.Key("blocked_seconds").Number(t.blocked_seconds);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
    const std::string json_path = flags.String("json", "");
    std::ofstream out(json_path);
    out << j.str() << "\n";
    if (!out) {
      return Fail(kExitData, ErrnoToStatus(errno, "--json " + json_path + ": cannot write"));
    }
  }
  return 0;
}

}  // namespace stoke::cli

// `stoke profile`, the report: the printed text, the JSON (--json), the Chrome
// trace (--trace) and the HTML report (--report), all from ProfileResult.
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <fstream>

#include "json.h"
#include "profile_run.h"
#include "report_writer.h"
#include "trace_writer.h"

namespace stoke::cli {

namespace {

// printf appended to *out.
void Say(std::string* out, const char* format, ...) __attribute__((format(printf, 2, 3)));
void Say(std::string* out, const char* format, ...) {
  char buf[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  *out += buf;
}

// What was delivered, at what rate, in what memory.
void SayDelivery(const ProfileRequest& request, const ProfileResult& r, std::string* out) {
  const LoaderStats& stats = r.stats;
  const double seconds = r.seconds;
  Say(out, "dataset      %s\n", r.dataset.c_str());
  Say(out, "delivered    %llu samples in %llu batches, %.3f s: %.0f samples/s, %.1f MB/s\n",
      static_cast<unsigned long long>(r.samples), static_cast<unsigned long long>(r.batches),
      seconds, r.samples / seconds, r.bytes / seconds / 1e6);
  if (r.verdict.bottleneck == "too short") {
    // Half of a run this short is a batch or two: its rate measures nothing.
    Say(out,
        "steady       not measured: the run was too short (see bottleneck); %.3f s to the first "
        "batch\n",
        r.first_batch_seconds);
  } else {
    Say(out, "steady       %.0f samples/s over the run's second half; %.3f s to the first batch\n",
        r.steady, r.first_batch_seconds);
  }
  Say(out,
      "label mix    %.3f: a batch's labels against the run's, mean total-variation distance "
      "(0: mixed as the whole; full shuffle: sampling noise only)\n",
      r.label_mix);
  Say(out, "memory       ring %.1f MiB, read buffers %.1f MiB, peak RSS %.1f MiB\n",
      stats.ring_bytes / 1048576.0, stats.arena_bytes / 1048576.0, r.peak_rss_bytes / 1048576.0);
  Say(out, "device       %s, %s batches\n", stats.device.c_str(),
      std::string(DTypeName(request.pipeline.options.output_dtype)).c_str());
  for (const StageStats& stage : stats.stages) {
    const ThreadStats t = stage.Total();
    if (stage.name == "copy" && t.busy_seconds > 0) {
      Say(out, "copy         %.1f MB in %.3f s busy: %.2f GB/s\n", t.bytes / 1e6, t.busy_seconds,
          t.bytes / t.busy_seconds / 1e9);
    }
  }
  Say(out, "consumer     waited %.3f s for data (%.0f%% of the run)\n", stats.consumer_wait_seconds,
      100.0 * stats.consumer_wait_seconds / seconds);
  if (stats.http_requests > 0) {
    // One dataset is one prefix of a store: S3 serves about 5,500 GETs/s per
    // prefix and answers 503 SlowDown past it.
    Say(out,
        "remote       %llu HTTP requests (%llu retries): %.0f requests/s on this prefix, %.1f%% "
        "of S3's 5,500 GETs/s a prefix for this one loader\n",
        static_cast<unsigned long long>(stats.http_requests),
        static_cast<unsigned long long>(stats.http_retries), stats.http_requests / seconds,
        100.0 * stats.http_requests / seconds / 5500.0);
  }
  if (stats.skipped) {
    Say(out, "skipped      %llu bad samples, e.g. %s\n",
        static_cast<unsigned long long>(stats.skipped),
        stats.skipped_samples.empty() ? "" : stats.skipped_samples[0].error.c_str());
  }
}

void SayStages(const ProfileResult& r, std::string* out) {
  Say(out, "%-14s %7s %12s %12s %10s %10s\n", "stage", "threads", "items", "MB", "busy s",
      "blocked s");
  for (const StageStats& stage : r.stats.stages) {
    const ThreadStats t = stage.Total();
    std::string name = stage.name == "read" ? "read/" + r.stats.io_backend : stage.name;
    Say(out, "%-14s %7zu %12llu %12.1f %10.3f %10.3f\n", name.c_str(), stage.threads.size(),
        static_cast<unsigned long long>(t.items), t.bytes / 1e6, t.busy_seconds, t.blocked_seconds);
  }
}

void SayCeilings(const ProfileResult& r, std::string* out) {
  const internal::Ceilings& ceil = r.facts.ceilings;
  std::string line;
  if (ceil.storage_sequential_bytes_per_second > 0) {
    Say(&line, "storage %.1f MB/s sequential, %.0f random reads/s (%.0f 8 at a time); ",
        ceil.storage_sequential_bytes_per_second / 1e6, ceil.storage_random_reads_per_second,
        ceil.storage_random_reads_per_second_parallel);
  }
  if (ceil.remote_first_byte_p50_seconds > 0) {
    Say(&line, "store: first byte %.0f ms (p50), ", ceil.remote_first_byte_p50_seconds * 1e3);
    Say(&line, "%.0f ms (p99), ", ceil.remote_first_byte_p99_seconds * 1e3);
    Say(&line, "%.0f one-sample GETs/s ", ceil.remote_requests_per_second_parallel);
    Say(&line, "%d at a time, ", internal::kRemoteProbeInFlight);
    Say(&line, "%.1f MB/s on one connection; ", ceil.remote_connection_bytes_per_second / 1e6);
  }
  if (ceil.decode_samples_per_second_per_core > 0) {
    Say(&line, "decode %.0f samples/s per core", ceil.decode_samples_per_second_per_core);
    if (ceil.codec_samples_per_second_per_core > 0) {
      Say(&line, " (%.0f in libjpeg alone)", ceil.codec_samples_per_second_per_core);
    }
    Say(&line, "; ");
  }
  if (ceil.decode_samples_per_second_per_core_packed > 0) {
    Say(&line, "%.0f once packed; ", ceil.decode_samples_per_second_per_core_packed);
  }
  if (ceil.decode_samples_per_second_per_core_resized > 0) {
    Say(&line, "%.0f packed at a short side of ", ceil.decode_samples_per_second_per_core_resized);
    Say(&line, "%d; ", ceil.resize_short_side);
  }
  if (ceil.entropy_floor_samples_per_second_per_core > 0) {
    Say(&line, "entropy floor %.0f samples/s per core",
        ceil.entropy_floor_samples_per_second_per_core);
    if (ceil.entropy_floor_samples_per_second_per_core_packed > 0) {
      Say(&line, " (%.0f once packed", ceil.entropy_floor_samples_per_second_per_core_packed);
      if (ceil.entropy_floor_samples_per_second_per_core_resized > 0) {
        Say(&line, ", %.0f at a short side of %d",
            ceil.entropy_floor_samples_per_second_per_core_resized, ceil.resize_short_side);
      }
      Say(&line, ")");
    }
    Say(&line, "; ");
  }
  Say(&line, "memory copy %.1f GB/s", ceil.memory_copy_bytes_per_second / 1e9);
  if (ceil.h2d_bytes_per_second > 0) {
    Say(&line, "; pinned H2D %.1f GB/s", ceil.h2d_bytes_per_second / 1e9);
  }
  Say(out, "ceilings     %s%s\n", line.c_str(),
      r.ceilings_cached ? " (cached; --remeasure to measure again)" : "");
}

void SayVerdict(const ProfileResult& r, std::string* out) {
  const internal::Verdict& verdict = r.verdict;
  if (verdict.bottleneck == "too short") {
    Say(out, "capacity     not judged: the run was too short");
  } else {
    Say(out, "capacity    ");
    for (const internal::StageCapacity& c : verdict.stages) {
      if (c.capacity > 0) {
        Say(out, " %s %.0f/s (%.0f%% busy)", c.stage.c_str(), c.capacity, 100 * c.utilisation);
      } else {
        Say(out, " %s unbounded", c.stage.c_str());
      }
    }
  }
  Say(out, "\nbottleneck   %s\n", verdict.explanation.c_str());
  for (size_t i = 0; i < verdict.advice.size(); ++i) {
    const internal::Advice& a = verdict.advice[i];
    Say(out, "advice %zu     %s: about %.0f samples/s (%.1fx)\n", i + 1, a.what.c_str(),
        a.predicted_samples_per_second, a.gain);
    for (const std::string& command : a.commands)
      Say(out, "               $ %s\n", command.c_str());
  }
  Say(out, "in short     %s\n", r.conclusion.learned.c_str());
  Say(out, "next         %s\n", r.conclusion.next.c_str());
}

void JsonCeilings(const ProfileResult& r, JsonWriter& j) {
  const internal::Ceilings& ceil = r.facts.ceilings;
  j.Key("ceilings").BeginObject();
  j.Key("storage_sequential_bytes_per_second").Number(ceil.storage_sequential_bytes_per_second);
  j.Key("remote_first_byte_p50_seconds").Number(ceil.remote_first_byte_p50_seconds);
  j.Key("remote_first_byte_p99_seconds").Number(ceil.remote_first_byte_p99_seconds);
  j.Key("remote_requests_per_second_parallel").Number(ceil.remote_requests_per_second_parallel);
  j.Key("remote_connection_bytes_per_second").Number(ceil.remote_connection_bytes_per_second);
  j.Key("storage_random_reads_per_second").Number(ceil.storage_random_reads_per_second);
  j.Key("storage_random_reads_per_second_parallel")
      .Number(ceil.storage_random_reads_per_second_parallel);
  j.Key("decode_samples_per_second_per_core").Number(ceil.decode_samples_per_second_per_core);
  j.Key("decode_samples_per_second_per_core_packed")
      .Number(ceil.decode_samples_per_second_per_core_packed);
  j.Key("decode_samples_per_second_per_core_resized")
      .Number(ceil.decode_samples_per_second_per_core_resized);
  j.Key("resize_short_side").Number(ceil.resize_short_side);
  j.Key("entropy_floor_samples_per_second_per_core")
      .Number(ceil.entropy_floor_samples_per_second_per_core);
  j.Key("entropy_floor_samples_per_second_per_core_packed")
      .Number(ceil.entropy_floor_samples_per_second_per_core_packed);
  j.Key("entropy_floor_samples_per_second_per_core_resized")
      .Number(ceil.entropy_floor_samples_per_second_per_core_resized);
  j.Key("codec_samples_per_second_per_core").Number(ceil.codec_samples_per_second_per_core);
  j.Key("memory_copy_bytes_per_second").Number(ceil.memory_copy_bytes_per_second);
  j.Key("h2d_bytes_per_second").Number(ceil.h2d_bytes_per_second);
  j.Key("cached").Bool(r.ceilings_cached);
  j.EndObject();
}

void JsonVerdict(const ProfileResult& r, JsonWriter& j) {
  const internal::Verdict& verdict = r.verdict;
  j.Key("bottleneck").String(verdict.bottleneck);
  j.Key("starved_fraction").Number(verdict.starved_fraction);
  j.Key("explanation").String(verdict.explanation);
  JsonCeilings(r, j);
  j.Key("capacities").BeginArray();
  for (const internal::StageCapacity& c : verdict.stages) {
    j.BeginObject().Key("stage").String(c.stage);
    j.Key("samples_per_second").Number(c.samples_per_second);
    j.Key("utilisation").Number(c.utilisation);
    j.Key("capacity").Number(c.capacity).EndObject();
  }
  j.EndArray();
  j.Key("in_short").String(r.conclusion.learned);
  j.Key("next").String(r.conclusion.next);
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
}

void JsonStages(const ProfileResult& r, JsonWriter& j) {
  j.Key("stages").BeginArray();
  for (const StageStats& stage : r.stats.stages) {
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
}

}  // namespace

std::string ProfileText(const ProfileRequest& request, const ProfileResult& r) {
  std::string out;
  SayDelivery(request, r, &out);
  SayStages(r, &out);
  if (request.digest) Say(&out, "digest       %s\n", r.digest.c_str());
  if (request.ceilings) SayCeilings(r, &out);
  SayVerdict(r, &out);
  return out;
}

Status WriteProfileJson(const ProfileRequest& request, const ProfileResult& r) {
  const LoaderOptions& o = request.pipeline.options;
  const LoaderStats& stats = r.stats;
  JsonWriter j;
  j.BeginObject();
  j.Key("dataset").String(r.dataset);
  j.Key("format").String(request.pipeline.format);
  j.Key("io_backend").String(stats.io_backend);
  j.Key("device").String(stats.device);
  j.Key("dtype").String(std::string(DTypeName(o.output_dtype)));
  j.Key("samples").Uint(r.samples);
  j.Key("batches").Uint(r.batches);
  j.Key("skipped").Uint(stats.skipped);
  j.Key("http_requests").Uint(stats.http_requests);
  j.Key("http_retries").Uint(stats.http_retries);
  j.Key("http_requests_per_second").Number(stats.http_requests / r.seconds);
  j.Key("seconds").Number(r.seconds);
  j.Key("samples_per_second").Number(r.samples / r.seconds);
  j.Key("steady_samples_per_second").Number(r.steady);
  j.Key("first_batch_seconds").Number(r.first_batch_seconds);
  j.Key("batch_label_mix").Number(r.label_mix);
  j.Key("order").String(std::string(OrderName(o.order)));
  j.Key("ring_slots").Int(r.loader_options.ring_slots);
  j.Key("bytes_per_second").Number(r.bytes / r.seconds);
  j.Key("peak_rss_bytes").Uint(static_cast<uint64_t>(r.peak_rss_bytes));
  j.Key("ring_bytes").Uint(stats.ring_bytes);
  j.Key("arena_bytes").Uint(stats.arena_bytes);
  j.Key("consumer_wait_seconds").Number(stats.consumer_wait_seconds);
  j.Key("digest").String(r.digest);
  j.Key("skipped_samples").BeginArray();
  for (const SkippedSample& s : stats.skipped_samples) {
    j.BeginObject().Key("index").Uint(s.index).Key("error").String(s.error).EndObject();
  }
  j.EndArray();
  j.Key("step").String(request.step);
  JsonVerdict(r, j);
  JsonStages(r, j);
  j.EndObject();
  std::ofstream out(request.json_path);
  out << j.str() << "\n";
  if (!out) return ErrnoToStatus(errno, "--json " + request.json_path + ": cannot write");
  return Status::Ok();
}

Status WriteProfileTraces(const ProfileRequest& request, const ProfileResult& r,
                          const std::string& text) {
  if (!request.trace_path.empty()) {
    STOKE_RETURN_IF_ERROR(
        WriteChromeTrace(request.trace_path, r.events, r.start_ns, r.trace_dropped));
  }
  if (request.report_path.empty()) return Status::Ok();
  ReportInput in;
  in.title = r.dataset;
  in.summary = text;
  in.verdict = r.verdict;
  in.ceilings = r.facts.ceilings;
  in.decode_threads = r.loader_options.decode_threads;
  in.events = r.events;
  in.origin_ns = r.start_ns;
  in.wall_seconds = r.seconds;
  return WriteHtmlReport(request.report_path, in);
}

}  // namespace stoke::cli

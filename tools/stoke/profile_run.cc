// `stoke profile`, the run: open the dataset, the loader and the step, consume
// the epochs with a live progress line, then measure the ceilings and judge.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <thread>

#include "ceilings_cache.h"
#include "cuda/h2d_peak.h"
#include "digest.h"
#include "io/remote_file.h"
#include "label_mix.h"
#include "profile/ceilings.h"
#include "profile_run.h"
#include "step.h"
#include "util/counters.h"
#include "util/trace_log.h"

namespace stoke::cli {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
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

// What the run opens: the dataset, a loader over it, and the consumer's step.
struct Opened {
  std::shared_ptr<Dataset> dataset;
  std::unique_ptr<Loader> loader;
  std::unique_ptr<Step> step;
  int cores = 1;
};

std::optional<Failure> Open(ProfileRequest& request, Opened* out) {
  Pipeline& pipeline = request.pipeline;
  auto dataset = OpenDataset(request.path, pipeline.split, &pipeline);
  if (!dataset.ok()) {
    const Status& s = dataset.status();
    const bool usage = s.code() == StatusCode::kInvalidArgument && s.message().starts_with("--");
    return Failure{usage ? kExitUsage : kExitData, s};
  }
  out->dataset = *dataset;
  auto loader = Loader::Open(out->dataset, pipeline.options);
  if (!loader.ok()) {
    const Status& s = loader.status();
    return Failure{LoaderOpenExit(s), Status(s.code(), CommandSpelling(s.message()))};
  }
  out->loader = std::move(loader).value();
  std::fprintf(stderr, "stoke profile: %s\n", out->loader->dataset().Describe().c_str());
  out->cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const LoaderOptions& o = out->loader->options();
  auto step = Step::Parse(request.step, out->loader->sample_spec(), o.device,
                          std::max(1, out->cores - o.decode_threads));
  if (!step.ok()) {
    const bool usage = step.status().code() == StatusCode::kInvalidArgument;
    return Failure{usage ? kExitUsage : kExitData, step.status().WithContext("--step")};
  }
  out->step = std::move(step).value();
  return std::nullopt;
}

// The live line on stderr: position, rates, and each stage's occupancy (busy
// time per thread) over the last quarter second.
class Progress {
 public:
  Progress(bool on, Clock::time_point start) : on_(on), start_(start), last_(start) {}

  void Update(const Loader& loader, int64_t epoch, int64_t batch, int64_t per_epoch,
              uint64_t samples, uint64_t bytes) {
    const auto now = Clock::now();
    if (!on_ || now - last_ <= std::chrono::milliseconds(250)) return;
    const double interval = Seconds(last_, now);
    last_ = now;
    const LoaderStats live = loader.stats();
    std::string occupancy;
    for (const StageStats& stage : live.stages) {
      if (stage.name == "dispatch" || stage.threads.empty()) continue;
      const double busy = stage.Total().busy_seconds;
      double& before = busy_[stage.name];
      char buf[64];
      std::snprintf(buf, sizeof buf, "  %s %.0f%%", stage.name.c_str(),
                    100 * (busy - before) / (interval * stage.threads.size()));
      occupancy += buf;
      before = busy;
    }
    const double wait = live.consumer_wait_seconds - wait_;
    wait_ = live.consumer_wait_seconds;
    const double secs = Seconds(start_, now);
    std::fprintf(stderr,
                 "\r  epoch %lld  batch %lld/%lld  %.0f samples/s  %.1f MB/s%s  waiting %.0f%%   ",
                 static_cast<long long>(epoch), static_cast<long long>(batch + 1),
                 static_cast<long long>(per_epoch), samples / secs, bytes / secs / 1e6,
                 occupancy.c_str(), 100 * wait / interval);
  }
  void Break() const {
    if (on_) std::fputs("\n", stderr);
  }
  void Clear() const {
    if (on_) std::fputs("\r\033[K", stderr);
  }

 private:
  const bool on_;
  const Clock::time_point start_;
  Clock::time_point last_;
  std::map<std::string, double> busy_;  // each stage's busy seconds so far
  double wait_ = 0;
};

// What consuming the epochs gathers.
struct Consumed {
  uint64_t samples = 0, batches = 0, bytes = 0;
  Digest digest;
  std::vector<std::byte> host_copy;  // --digest of device batches
  LabelMix label_mix;
  // When each batch came, and the samples delivered by then.
  std::vector<std::pair<Clock::time_point, uint64_t>> arrivals;
  std::vector<TraceEvent> step_spans;
};

Status DigestBatch(const Batch& batch, Consumed* c) {
  if (batch.device().kind != DeviceKind::kCpu) {
    c->host_copy.resize(std::max(c->host_copy.size(), batch.bytes()));
    STOKE_RETURN_IF_ERROR(batch.CopyToHost(c->host_copy));
    c->digest.Update(c->host_copy.data(), batch.bytes());
  } else {
    c->digest.Update(batch.data(), batch.bytes());
  }
  c->digest.Update(batch.labels().data(), batch.labels().size_bytes());
  return Status::Ok();
}

// Where epoch `epoch` must start from: a --max-batches cut leaves the loader
// mid-epoch; an epoch read to its end needs only the end marker (which keeps
// what was read ahead).
Status StartEpoch(Loader& loader, int64_t epoch) {
  const Position at = loader.position();
  if (at.epoch + 1 == epoch && at.batch == loader.batches_per_epoch()) {
    return loader.Next().status();
  }
  if (at == Position{epoch, 0}) return Status::Ok();
  return loader.Seek({epoch, 0});
}

std::optional<Failure> Consume(const ProfileRequest& request, Opened& run, Clock::time_point start,
                               Consumed* c) {
  Loader& loader = *run.loader;
  Step& step = *run.step;
  const bool traced = loader.options().trace_events > 0;
  if (traced) c->step_spans.reserve(1 << 16);
  const int64_t per_epoch = request.max_batches > 0
                                ? std::min<int64_t>(request.max_batches, loader.batches_per_epoch())
                                : loader.batches_per_epoch();
  c->arrivals.reserve(static_cast<size_t>(std::min<int64_t>(per_epoch * request.epochs, 1 << 20)));
  Progress progress(request.progress, start);
  for (int64_t epoch = 0; epoch < request.epochs; ++epoch) {
    if (Status s = StartEpoch(loader, epoch); !s.ok()) return Failure::Data(s);
    for (int64_t b = 0; b < per_epoch; ++b) {
      StatusOr<Batch> batch = loader.Next();
      if (!batch.ok()) {
        progress.Break();
        return Failure::Data(batch.status().WithContext("epoch " + std::to_string(epoch) +
                                                        ", batch " + std::to_string(b)));
      }
      if (request.digest) {
        if (Status s = DigestBatch(*batch, c); !s.ok()) return Failure::Data(s);
      }
      const int64_t step_start = internal::NowNanos();
      if (Status s = step.Run(*batch); !s.ok()) return Failure::Data(s.WithContext("--step"));
      if (traced && step.bounded() && c->step_spans.size() < c->step_spans.capacity()) {
        c->step_spans.push_back({"step", internal::TraceThreadId(), step_start,
                                 internal::NowNanos(), batch->epoch(), batch->index(), false,
                                 batch->size()});
      }
      c->samples += static_cast<uint64_t>(batch->size());
      c->bytes += batch->bytes();
      ++c->batches;
      if (c->arrivals.size() < c->arrivals.capacity()) {
        c->arrivals.emplace_back(Clock::now(), c->samples);
      }
      c->label_mix.Add(batch->labels());
      progress.Update(loader, epoch, b, per_epoch, c->samples, c->bytes);
    }
  }
  progress.Clear();
  return std::nullopt;
}

// The rate over the run's second half, which leaves out the pipeline's filling
// (for quasi order, a group of windows read before the first batch).
double SteadyRate(const Consumed& c, double seconds) {
  double steady = c.samples / seconds;
  if (c.arrivals.size() >= 2) {
    const auto& [mid_at, mid_samples] = c.arrivals[(c.arrivals.size() - 1) / 2];
    const auto& [last_at, last_samples] = c.arrivals.back();
    const double span = Seconds(mid_at, last_at);
    if (span > 0) steady = static_cast<double>(last_samples - mid_samples) / span;
  }
  return steady;
}

// The facts the verdict reads, and the commands that follow its advice
// (packed shards go beside the data).
void GatherFacts(const ProfileRequest& request, const Dataset& dataset, const Opened& run,
                 ProfileResult* r) {
  internal::RunFacts& facts = r->facts;
  const LoaderOptions& o = request.pipeline.options;
  facts.stats = r->stats;
  facts.wall_seconds = r->seconds;
  facts.samples = r->samples;
  facts.steady_samples_per_second = r->steady;
  facts.has_step = run.step->bounded();
  facts.step = request.step;
  facts.step_busy_seconds = run.step->busy_seconds();
  facts.options = r->loader_options;
  facts.cores = run.cores;
  const SampleLocation first = dataset.Locate(0);
  facts.stored_bytes_per_sample = first.whole_file ? TypicalFileBytes(dataset) : first.length;
  facts.file_per_sample = first.whole_file;
  facts.storage_model = request.pipeline.storage_model;
  facts.jpeg = dataset.decode_is_compute_bound();
  facts.remote = dataset.file_system() == internal::RemoteFileSystem();
  const bool shuffled = o.order != Order::kSequential;
  std::string base = request.path;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const std::string shards = base + ".shards";
  facts.rerun_quasi = ProfileCommandLine(request, request.path, "quasi", false);
  const std::string& format = request.pipeline.format;
  std::string pack = "stoke pack " + Quote(request.path) + " " + Quote(shards);
  if (format != "auto" && format != "imagefolder") pack += " --format " + format;
  facts.pack = pack;
  facts.rerun_packed = ProfileCommandLine(request, shards, shuffled ? "quasi" : "", true);
  if (const int side = internal::ResizeShortSideFor(dataset.spec()); side > 0 && facts.jpeg) {
    const std::string resized = base + ".s" + std::to_string(side);
    facts.pack_resized = "stoke pack " + Quote(request.path) + " " + Quote(resized) +
                         " --short-side " + std::to_string(side);
    if (format != "auto" && format != "imagefolder") facts.pack_resized += " --format " + format;
    facts.rerun_resized = ProfileCommandLine(request, resized, shuffled ? "quasi" : "", true);
  }
}

// The ceilings: cached per host, dataset and storage model, or measured now
// (the loader is gone: its read-ahead would share the storage with them).
void Ceilings(const ProfileRequest& request, const Dataset& dataset, size_t batch_bytes,
              ProfileResult* r) {
  if (!request.ceilings) return;
  const Pipeline& pipeline = request.pipeline;
  const std::string key = CeilingsKey(dataset.Describe(), pipeline.storage_model);
  std::optional<internal::Ceilings> cached;
  if (!request.remeasure) cached = LoadCeilings(key);
  if (cached) {
    r->facts.ceilings = *cached;
    r->ceilings_cached = true;
    return;
  }
  r->facts.ceilings = internal::MeasureCeilings(dataset, pipeline.storage_bytes_per_second);
  const DeviceSpec device = pipeline.options.device;
  if (device.kind == DeviceKind::kCuda) {
    r->facts.ceilings.h2d_bytes_per_second = internal::MeasurePinnedH2D(device.index, batch_bytes);
  }
  StoreCeilings(key, r->facts.ceilings);
}

}  // namespace

std::optional<Failure> RunProfile(ProfileRequest& request, ProfileResult* r) {
  if (request.wants_trace()) {
    request.pipeline.options.trace_events = uint64_t{1} << 20;  // 48 MiB, touched as used
  }
  Opened run;
  if (auto failed = Open(request, &run)) return failed;
  Consumed c;
  r->start_ns = internal::NowNanos();
  const auto start = Clock::now();
  if (auto failed = Consume(request, run, start, &c)) return failed;
  r->seconds = Seconds(start, Clock::now());
  r->samples = c.samples;
  r->batches = c.batches;
  r->bytes = c.bytes;
  r->first_batch_seconds = c.arrivals.empty() ? r->seconds : Seconds(start, c.arrivals[0].first);
  r->steady = SteadyRate(c, r->seconds);
  r->label_mix = c.label_mix.Mean();
  if (request.digest) r->digest = c.digest.Hex();
  // What the report needs of the loader; then the loader goes, before the
  // ceilings are measured.
  Loader& loader = *run.loader;
  r->dataset = run.dataset->Describe();
  r->stats = loader.stats();
  r->loader_options = loader.options();
  const size_t batch_bytes =
      loader.sample_spec().bytes() * static_cast<size_t>(request.pipeline.options.batch_size);
  if (request.wants_trace()) {
    r->events = loader.trace(&r->trace_dropped);
    r->events.insert(r->events.end(), c.step_spans.begin(), c.step_spans.end());
  }
  const int64_t batches_per_epoch = loader.batches_per_epoch();
  run.loader.reset();
  r->peak_rss_bytes = PeakRssBytes();
  GatherFacts(request, *run.dataset, run, r);
  r->facts.batches_per_epoch = batches_per_epoch;
  Ceilings(request, *run.dataset, batch_bytes, r);
  r->verdict = internal::Judge(r->facts);
  r->conclusion = internal::Conclude(r->verdict, r->facts);
  return std::nullopt;
}

}  // namespace stoke::cli

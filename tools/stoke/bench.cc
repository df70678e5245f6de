#include "bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "dataset/stored.h"
#include "io/page_cache.h"
#include "json.h"
#include "pipeline_flags.h"
#include "step.h"

namespace stoke::cli {
namespace {

const char kBenchUsage[] =
    "usage: stoke bench [PATH] [options]\n"
    "\n"
    "Measures one dataset, cold, on each location and storage model given: raw reads in\n"
    "plan order (1 and 8 in flight, with their p50/p99 latency) and the full pipeline\n"
    "(io_uring where allowed, and pread), for the data as it is and, with --pack, as\n"
    "packed shards (written once per location, beside the data). The page cache is\n"
    "emptied of the dataset's files with posix_fadvise(DONTNEED) before every pass.\n"
    "\n"
    "  --data LABEL=PATH     a location, e.g. hdd=/mnt/hdd/x ssd=/mnt/ssd/x ram=/dev/shm/x\n"
    "                        (repeat; a lone PATH is --data data=PATH)\n"
    "  --model M             also read the first location through storage model M\n"
    "                        (hdd, sata-ssd, nvme, ram, or BW,LATENCY,SEEK[,PARALLEL]; repeat)\n"
    "  --pack                also pack each location into shards and measure those\n"
    "  --samples N           samples per pass (default 1000, at most the dataset)\n"
    "  --need N              the samples/s the training step needs: each row gets a verdict\n"
    "  --step none|sleep:T|MODEL  measure the need from this step on the first batches\n"
    "  --json FILE           every row as JSON\n"
    "  --report FILE         an HTML page with a bar chart of every row\n"
    "  dataset, image and loader options: as for stoke profile (--format, --size,\n"
    "  --shuffle (default full), --batch, --read-threads, --decode-threads, ...)\n"
    "\n"
    "exit status: 0 success, 1 data or I/O error, 2 usage error\n";

int Fail(int code, const Status& status) {
  std::fprintf(stderr, "stoke bench: %s\n", status.ToString().c_str());
  return code;
}

void EvictFiles(const Dataset& d) {
  for (uint32_t f = 0; f < d.file_count(); ++f) internal::EvictFromPageCache(d.file_path(f));
}

struct Row {
  std::string location, model, layout, pass;
  double mb_per_second = 0;
  double samples_per_second = 0;
  double p50_ms = 0, p99_ms = 0;  // raw passes
  std::string verdict;
};

// Raw reads of the first `n` samples of the plan's order, `threads` at a time.
Row RawPass(const Dataset& d, const std::vector<uint64_t>& order, int threads) {
  std::vector<double> latency(order.size());
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> bytes{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      std::vector<std::byte> buf;
      for (size_t k; (k = next.fetch_add(1)) < order.size();) {
        const auto r0 = std::chrono::steady_clock::now();
        if (internal::ReadStoredSample(d, order[k], &buf).ok()) bytes += buf.size();
        latency[k] =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r0)
                .count();
      }
    });
  }
  for (std::thread& t : pool) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::sort(latency.begin(), latency.end());
  Row r;
  r.pass = "raw reads, " + std::to_string(threads) + " in flight";
  r.mb_per_second = static_cast<double>(bytes.load()) / s / 1e6;
  r.samples_per_second = static_cast<double>(order.size()) / s;
  r.p50_ms = latency[latency.size() / 2];
  r.p99_ms = latency[std::min(latency.size() - 1, latency.size() * 99 / 100)];
  return r;
}

// The loader over the first `samples` samples (whole batches), cold.
StatusOr<Row> PipelinePass(std::shared_ptr<Dataset> d, LoaderOptions o, IoBackend io,
                           uint64_t samples) {
  o.io = io;
  STOKE_ASSIGN_OR_RETURN(auto loader, Loader::Open(d, o));
  const int64_t batches = std::max<int64_t>(
      1, std::min<int64_t>(loader->batches_per_epoch(),
                           static_cast<int64_t>(samples) / std::max<int64_t>(o.batch_size, 1)));
  uint64_t delivered = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t b = 0; b < batches; ++b) {
    STOKE_ASSIGN_OR_RETURN(Batch batch, loader->Next());
    delivered += static_cast<uint64_t>(batch.size());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const LoaderStats stats = loader->stats();
  Row r;
  r.pass = std::string("pipeline, ") + (stats.io_backend.empty() ? "?" : stats.io_backend);
  r.samples_per_second = static_cast<double>(delivered) / s;
  uint64_t read_bytes = 0;
  for (const StageStats& st : stats.stages) {
    if (st.name == "read") read_bytes = st.Total().bytes;
  }
  r.mb_per_second = static_cast<double>(read_bytes) / s / 1e6;
  return r;
}

std::string HtmlReport(const std::vector<Row>& rows, double need) {
  double top = need;
  for (const Row& r : rows) top = std::max(top, r.samples_per_second);
  top = std::max(top, 1.0);
  const int row_height = 22, width = 900, label = 430;
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(width) +
                    "' height='" + std::to_string(30 + row_height * static_cast<int>(rows.size())) +
                    "'>";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const int y = 10 + row_height * static_cast<int>(i);
    const double w = std::max(1.0, (width - label - 90) * r.samples_per_second / top);
    char value[64];
    std::snprintf(value, sizeof value, "%.0f/s", r.samples_per_second);
    svg += "<text x='" + std::to_string(label - 6) + "' y='" + std::to_string(y + 14) +
           "' font-size='11' text-anchor='end'>" + r.location + " " + r.model + " " + r.layout +
           ": " + r.pass + "</text><rect x='" + std::to_string(label) + "' y='" +
           std::to_string(y + 3) + "' width='" + std::to_string(static_cast<int>(w)) +
           "' height='15' fill='" + (r.pass.starts_with("raw") ? "#1f77b4" : "#ff7f0e") +
           "'/><text x='" + std::to_string(label + static_cast<int>(w) + 4) + "' y='" +
           std::to_string(y + 14) + "' font-size='11'>" + value + "</text>";
  }
  if (need > 0) {
    const int x = label + static_cast<int>((width - label - 90) * need / top);
    svg += "<line x1='" + std::to_string(x) + "' x2='" + std::to_string(x) + "' y1='5' y2='" +
           std::to_string(20 + row_height * static_cast<int>(rows.size())) +
           "' stroke='#d62728' stroke-dasharray='4'/>";
  }
  svg += "</svg>";
  return "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>stoke bench</title>"
         "<style>body{font-family:sans-serif;margin:24px}</style></head><body><h1>stoke bench</h1>"
         "<p>Samples per second, cold cache: raw reads (blue) and the full pipeline (orange)" +
         std::string(need > 0 ? "; the dashed line is the need" : "") + ".</p>" + svg +
         "</body></html>\n";
}

}  // namespace

void PrintBenchUsage(FILE* out) { std::fputs(kBenchUsage, out); }

int BenchCommand(const std::vector<std::string>& args) {
  std::set<std::string> valued = PipelineValuedFlags();
  valued.insert({"data", "model", "samples", "need", "step", "json", "report"});
  std::set<std::string> switches = PipelineSwitches();
  switches.insert("pack");
  // --data and --model repeat: collect them before Flags keeps the last.
  std::vector<std::pair<std::string, std::string>> locations;
  std::vector<std::string> models;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--data" || args[i] == "--model") {
      if (args[i] == "--model") {
        models.push_back(args[i + 1]);
        continue;
      }
      const size_t eq = args[i + 1].find('=');
      if (eq == std::string::npos || eq == 0) {
        return Fail(2, InvalidArgumentError("--data: '" + args[i + 1] + "' is not LABEL=PATH"));
      }
      locations.emplace_back(args[i + 1].substr(0, eq), args[i + 1].substr(eq + 1));
    }
  }
  auto parsed = Flags::Parse(args, valued, switches);
  if (!parsed.ok()) return Fail(2, parsed.status());
  const Flags& flags = *parsed;
  for (const std::string& p : flags.positional()) locations.emplace_back("data", p);
  if (locations.empty()) {
    PrintBenchUsage(stderr);
    return Fail(2, InvalidArgumentError("name a dataset: PATH or --data LABEL=PATH"));
  }
  Pipeline base;
  if (Status s = ParsePipelineFlags(flags, 32, "full", &base); !s.ok()) return Fail(2, s);
  auto samples = flags.Int("samples", 1000, 1, int64_t{1} << 40);
  if (!samples.ok()) return Fail(2, samples.status());
  double need = 0;
  if (flags.Has("need")) {
    auto n = flags.Int("need", 0, 1, int64_t{1} << 40);
    if (!n.ok()) return Fail(2, n.status());
    need = static_cast<double>(*n);
  }
  if (need == 0 && flags.Has("step")) {
    // The need, measured: the samples/s the step consumes on the first batches.
    Pipeline p;
    if (Status s = ParsePipelineFlags(flags, 32, "full", &p); !s.ok()) return Fail(2, s);
    auto d = OpenDataset(locations[0].second, p.split, &p);
    if (!d.ok()) return Fail(1, d.status());
    auto loader = Loader::Open(*d, p.options);
    if (!loader.ok()) return Fail(LoaderOpenExit(loader.status()), loader.status());
    auto step =
        Step::Parse(flags.String("step", "none"), (*loader)->sample_spec(), p.options.device, 1);
    if (!step.ok()) return Fail(2, step.status().WithContext("--step"));
    uint64_t stepped = 0;
    for (int b = 0; b < 6; ++b) {
      auto batch = (*loader)->Next();
      if (!batch.ok()) return Fail(1, batch.status());
      if (!*batch) break;
      if (Status s = (*step)->Run(*batch); !s.ok()) return Fail(1, s.WithContext("--step"));
      stepped += static_cast<uint64_t>(batch->size());
    }
    if ((*step)->bounded() && (*step)->busy_seconds() > 0) {
      need = static_cast<double>(stepped) / (*step)->busy_seconds();
      std::fprintf(stderr, "stoke bench: the step consumes %.0f samples/s: that is the need\n",
                   need);
    }
  }
  std::vector<StorageModel> storage_models;
  for (const std::string& m : models) {
    auto model = ParseStorageModel(m);
    if (!model.ok()) return Fail(2, model.status().WithContext("--model"));
    storage_models.push_back(*model);
  }

  std::vector<Row> rows;
  // Every (location, storage model) pair: the real device, and the models on
  // the first location.
  struct Target {
    std::string label, path;
    const StorageModel* model;
  };
  std::vector<Target> targets;
  for (const auto& [label, path] : locations) targets.push_back({label, path, nullptr});
  for (const StorageModel& m : storage_models) {
    targets.push_back({locations[0].first, locations[0].second, &m});
  }
  for (const Target& target : targets) {
    std::vector<std::pair<std::string, std::string>> layouts = {{"as stored", target.path}};
    if (flags.Has("pack")) {
      const std::string shards = target.path + ".stoke-shards";
      std::error_code ec;
      if (!std::filesystem::exists(shards, ec)) {
        Pipeline p;
        if (Status s = ParsePipelineFlags(flags, 32, "full", &p); !s.ok()) return Fail(2, s);
        auto d = OpenDataset(target.path, p.split, &p);
        if (!d.ok()) return Fail(1, d.status());
        auto packed = Pack(**d, shards, {});
        if (!packed.ok()) return Fail(1, packed.status().WithContext("--pack"));
        std::fprintf(stderr, "stoke bench: packed %s into %s\n", target.path.c_str(),
                     shards.c_str());
      }
      layouts.emplace_back("shards", shards);
    }
    for (const auto& [layout, path] : layouts) {
      Pipeline p;
      if (Status s = ParsePipelineFlags(flags, 32, "full", &p); !s.ok()) return Fail(2, s);
      if (layout == "shards") p.format = "shards";
      if (target.model) {
        p.storage = NewModelledFileSystem(DefaultFileSystem(), *target.model);
        p.storage_model = target.model->name;
      }
      auto d = OpenDataset(path, p.split, &p);
      if (!d.ok()) return Fail(1, d.status());
      const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(*samples), (*d)->size());
      // The plan's order for the raw passes: the loader's, read out.
      LoaderOptions o = p.options;
      std::vector<uint64_t> order;
      {
        LoaderOptions plain = o;
        plain.decode_threads = 0;
        auto probe = Loader::Open(*d, plain);
        if (!probe.ok()) return Fail(LoaderOpenExit(probe.status()), probe.status());
        while (order.size() < n) {
          auto b = (*probe)->Next();
          if (!b.ok()) return Fail(1, b.status());
          if (!*b) break;
          order.insert(order.end(), b->indices().begin(), b->indices().end());
        }
        order.resize(std::min<size_t>(order.size(), n));
      }
      auto tag = [&](Row r) {
        r.location = target.label;
        r.model = target.model ? "model " + target.model->name : "real";
        r.layout = layout;
        if (need > 0 && r.pass.starts_with("pipeline")) {
          char verdict[64];
          std::snprintf(verdict, sizeof verdict, "short of the need by %.1f%%",
                        100 * (1 - r.samples_per_second / need));
          r.verdict = r.samples_per_second >= need ? "meets the need" : verdict;
        }
        rows.push_back(r);
      };
      for (int threads : {1, 8}) {
        EvictFiles(**d);
        tag(RawPass(**d, order, threads));
      }
      for (IoBackend io : {IoBackend::kAuto, IoBackend::kPread}) {
        EvictFiles(**d);
        auto r = PipelinePass(*d, o, io, n);
        if (!r.ok()) return Fail(1, r.status());
        tag(*r);
      }
    }
  }

  std::printf(
      "stoke bench: cold passes (page cache emptied of the dataset's files with "
      "posix_fadvise), %lld samples each\n",
      static_cast<long long>(*samples));
  std::printf("%-10s %-18s %-10s %-26s %10s %11s %8s %8s  %s\n", "location", "device", "layout",
              "pass", "MB/s", "samples/s", "p50 ms", "p99 ms", need > 0 ? "verdict" : "");
  for (const Row& r : rows) {
    std::printf("%-10s %-18s %-10s %-26s %10.1f %11.0f", r.location.c_str(), r.model.c_str(),
                r.layout.c_str(), r.pass.c_str(), r.mb_per_second, r.samples_per_second);
    if (r.pass.starts_with("raw")) {
      std::printf(" %8.2f %8.2f", r.p50_ms, r.p99_ms);
    } else {
      std::printf(" %8s %8s", "", "");
    }
    std::printf("  %s\n", r.verdict.c_str());
  }
  if (flags.Has("json")) {
    JsonWriter j;
    j.BeginObject().Key("need").Number(need).Key("rows").BeginArray();
    for (const Row& r : rows) {
      j.BeginObject().Key("location").String(r.location).Key("device").String(r.model);
      j.Key("layout").String(r.layout).Key("pass").String(r.pass);
      j.Key("mb_per_second").Number(r.mb_per_second);
      j.Key("samples_per_second").Number(r.samples_per_second);
      j.Key("p50_ms").Number(r.p50_ms).Key("p99_ms").Number(r.p99_ms);
      j.Key("verdict").String(r.verdict).EndObject();
    }
    j.EndArray().EndObject();
    std::ofstream out(flags.String("json", ""));
    out << j.str() << "\n";
    if (!out) return Fail(1, ErrnoToStatus(errno, "--json: cannot write"));
  }
  if (flags.Has("report")) {
    std::ofstream out(flags.String("report", ""));
    out << HtmlReport(rows, need);
    if (!out) return Fail(1, ErrnoToStatus(errno, "--report: cannot write"));
  }
  if (need > 0) {
    for (const Row& r : rows) {
      if (r.pass.starts_with("pipeline") && r.samples_per_second >= need) return 0;
    }
    return 1;
  }
  return 0;
}

}  // namespace stoke::cli

#include "bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <thread>

#include "command.h"
#include "dataset/stored.h"
#include "flags.h"
#include "io/page_cache.h"
#include "json.h"
#include "label_mix.h"
#include "log_axis.h"
#include "pipeline_flags.h"
#include "step.h"

namespace stoke::cli {
namespace {

const char kBenchUsage[] =
    "usage: stoke bench [PATH] [options]\n"
    "\n"
    "Answers \"where should my data live, in which layout and order\": on each location\n"
    "and storage model given, raw reads in plan order (1 and 8 in flight, with their\n"
    "p50/p99 latency) and the full pipeline, for the data as it is and, with --pack, as\n"
    "packed shards (written once per location, beside the data). Pipeline passes run in\n"
    "the --shuffle order and, where samples lie in large files (shards, IDX, CIFAR,\n"
    "tars), in quasi-random order too; each is a steady rate (after a warm-up batch,\n"
    "for --min-seconds) with its batch label mix and the read backend it used. A summary\n"
    "table and one sentence per location end the report. The page cache is emptied of\n"
    "the dataset's files (posix_fadvise) before every pass on a real location; under a\n"
    "storage model the model is the device, and the cache is left as it is.\n"
    "\n"
    "  --data LABEL=PATH     a location, e.g. hdd=/mnt/hdd/x ssd=/mnt/ssd/x ram=/dev/shm/x\n"
    "                        s3=s3://bucket/x web=https://host/x (repeat; a lone PATH\n"
    "                        is --data data=PATH)\n"
    "  --model M             also read the first location through storage model M\n"
    "                        (hdd, sata-ssd, nvme, s3, ram, or BW,LATENCY,SEEK[,PARALLEL];\n"
    "                        repeat)\n"
    "  --pack                also pack each location into shards and measure those\n"
    "  --pack-short-side N   and also packed at a short side of N (stoke pack\n"
    "                        --short-side N: for training at N or below), as layout\n"
    "                        shards-N; implies --pack\n"
    "  --samples N           samples per raw pass (default 1000, at most the dataset)\n"
    "  --min-seconds S       each pipeline pass runs this long after its warm-up batch\n"
    "                        (default 3)\n"
    "  --need N              the samples/s the training step needs: each row gets a verdict\n"
    "  --step none|sleep:T|MODEL  measure the need from this step on the first batches\n"
    "  --json FILE           every row as JSON\n"
    "  --report FILE         an HTML page with a bar chart of every row (log scale)\n"
    "  dataset, image and loader options: as for stoke profile (--format, --size,\n"
    "  --shuffle (default full), --batch, --read-threads, --decode-threads, ...)\n"
    "\n"
    "exit status: 0 success, 1 data or I/O error, 2 usage error\n";

void EvictFiles(const Dataset& d) {
  for (uint32_t f = 0; f < d.file_count(); ++f) internal::EvictFromPageCache(d.file_path(f));
}

struct Row {
  std::string location, model, layout, pass;
  std::string order;  // pipeline passes: the sample order
  double mb_per_second = 0;
  double samples_per_second = 0;
  double p50_ms = 0, p99_ms = 0;  // raw passes
  double label_mix = -1;          // pipeline passes
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

// The loader, cold: one warm-up batch (the pipeline filling; for quasi order,
// its first group of windows), then batches, across epochs, for at least
// `min_seconds`. The rate is that steady part's.
StatusOr<Row> PipelinePass(std::shared_ptr<Dataset> d, LoaderOptions o, double min_seconds) {
  STOKE_ASSIGN_OR_RETURN(auto loader, Loader::Open(d, o));
  LabelMix mix;
  auto next = [&]() -> StatusOr<int64_t> {
    STOKE_ASSIGN_OR_RETURN(Batch batch, loader->Next());
    if (!batch) {
      STOKE_ASSIGN_OR_RETURN(batch, loader->Next());  // the epoch ended: the next one
    }
    mix.Add(batch.labels());
    return batch.size();
  };
  STOKE_RETURN_IF_ERROR(next().status());
  auto read_bytes = [&] {
    uint64_t bytes = 0;
    for (const StageStats& st : loader->stats().stages) {
      if (st.name == "read") bytes = st.Total().bytes;
    }
    return bytes;
  };
  const uint64_t read_before = read_bytes();
  uint64_t delivered = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double s = 0;
  do {
    STOKE_ASSIGN_OR_RETURN(const int64_t n, next());
    delivered += static_cast<uint64_t>(n);
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (s < min_seconds);
  const LoaderStats stats = loader->stats();
  Row r;
  r.order = std::string(OrderName(o.order));
  r.pass = "pipeline, " + r.order + ", " + (stats.io_backend.empty() ? "?" : stats.io_backend);
  r.samples_per_second = static_cast<double>(delivered) / s;
  r.mb_per_second = static_cast<double>(read_bytes() - read_before) / s / 1e6;
  r.label_mix = mix.Mean();
  return r;
}

std::string HtmlReport(const std::vector<Row>& rows, double need) {
  std::vector<double> values = {need};
  for (const Row& r : rows) values.push_back(r.samples_per_second);
  const LogAxis axis = LogAxis::Over(values);
  const int row_height = 22, width = 980, label = 470, plot = width - label - 90;
  auto x_of = [&](double v) { return label + static_cast<int>(plot * axis.Fraction(v)); };
  const int height = 40 + row_height * static_cast<int>(rows.size());
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(width) +
                    "' height='" + std::to_string(height) + "'>";
  for (double decade : axis.Decades()) {
    const int x = x_of(decade);
    char tick[32];
    std::snprintf(tick, sizeof tick, "%.0f/s", decade);
    svg += "<line x1='" + std::to_string(x) + "' x2='" + std::to_string(x) + "' y1='5' y2='" +
           std::to_string(height - 20) + "' stroke='#ddd'/><text x='" + std::to_string(x) +
           "' y='" + std::to_string(height - 6) + "' font-size='10' text-anchor='middle'>" + tick +
           "</text>";
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const int y = 10 + row_height * static_cast<int>(i);
    const int w = std::max(1, x_of(r.samples_per_second) - label);
    char value[96];
    if (r.label_mix >= 0) {
      std::snprintf(value, sizeof value, "%.0f/s, mix %.2f", r.samples_per_second, r.label_mix);
    } else {
      std::snprintf(value, sizeof value, "%.0f/s", r.samples_per_second);
    }
    svg += "<text x='" + std::to_string(label - 6) + "' y='" + std::to_string(y + 14) +
           "' font-size='11' text-anchor='end'>" + r.location + " " + r.model + " " + r.layout +
           ": " + r.pass + "</text><rect x='" + std::to_string(label) + "' y='" +
           std::to_string(y + 3) + "' width='" + std::to_string(w) + "' height='15' fill='" +
           (r.pass.starts_with("raw") ? "#1f77b4" : "#ff7f0e") + "'/><text x='" +
           std::to_string(label + w + 4) + "' y='" + std::to_string(y + 14) + "' font-size='11'>" +
           value + "</text>";
  }
  if (need > 0) {
    const int x = x_of(need);
    svg += "<line x1='" + std::to_string(x) + "' x2='" + std::to_string(x) + "' y1='5' y2='" +
           std::to_string(height - 20) + "' stroke='#d62728' stroke-dasharray='4'/>";
  }
  svg += "</svg>";
  return "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>stoke bench</title>"
         "<style>body{font-family:sans-serif;margin:24px}</style></head><body><h1>stoke bench</h1>"
         "<p>Samples per second on a log scale: raw reads, cold (blue), and the full pipeline's "
         "steady rate with its batch label mix (orange)" +
         std::string(need > 0 ? "; the dashed line is the need" : "") + ".</p>" + svg +
         "</body></html>\n";
}

void PrintRows(const std::vector<Row>& rows, int64_t samples, double min_seconds, double need) {
  std::printf(
      "stoke bench: raw passes of %lld samples, cold (page cache emptied of the dataset's "
      "files with posix_fadvise, except under a storage model); pipeline passes steady, "
      "%.1f s after a warm-up batch\n",
      static_cast<long long>(samples), min_seconds);
  std::printf("%-10s %-18s %-10s %-42s %9s %10s %7s %7s %6s  %s\n", "location", "device", "layout",
              "pass", "MB/s", "samples/s", "p50 ms", "p99 ms", "mix", need > 0 ? "verdict" : "");
  for (const Row& r : rows) {
    std::printf("%-10s %-18s %-10s %-42s %9.1f %10.0f", r.location.c_str(), r.model.c_str(),
                r.layout.c_str(), r.pass.c_str(), r.mb_per_second, r.samples_per_second);
    if (r.pass.starts_with("raw")) {
      std::printf(" %7.2f %7.2f %6s", r.p50_ms, r.p99_ms, "");
    } else {
      std::printf(" %7s %7s %6.3f", "", "", r.label_mix);
    }
    std::printf("  %s\n", r.verdict.c_str());
  }
}

// Location by layout and order: the best pipeline row of each, and one
// sentence per location that says what to do.
void PrintSummary(const std::vector<Row>& rows, double need) {
  std::printf(
      "\nsummary: steady samples/s of the pipeline, and its batch label mix (0: every "
      "batch mixed as the whole; full shuffle: sampling noise)\n");
  std::printf("%-30s %-10s %-11s %10s %7s  %s\n", "location", "layout", "order", "samples/s", "mix",
              need > 0 ? "verdict" : "");
  std::vector<std::string> places;
  for (const Row& r : rows) {
    const std::string place = r.location + " " + r.model;
    if (std::find(places.begin(), places.end(), place) == places.end()) places.push_back(place);
  }
  for (const std::string& place : places) {
    // One cell per (layout, order): its faster backend.
    std::vector<const Row*> cells;
    for (const Row& r : rows) {
      if (r.location + " " + r.model != place || r.label_mix < 0) continue;
      auto same = std::find_if(cells.begin(), cells.end(), [&](const Row* c) {
        return c->layout == r.layout && c->order == r.order;
      });
      if (same == cells.end()) {
        cells.push_back(&r);
      } else if (r.samples_per_second > (*same)->samples_per_second) {
        *same = &r;
      }
    }
    if (cells.empty()) continue;
    double best_mix = 1;
    for (const Row* c : cells) best_mix = std::min(best_mix, c->label_mix);
    const Row* best = nullptr;
    const Row* as_stored = nullptr;
    for (const Row* c : cells) {
      std::printf("%-30s %-10s %-11s %10.0f %7.3f  %s\n", place.c_str(), c->layout.c_str(),
                  c->order.c_str(), c->samples_per_second, c->label_mix, c->verdict.c_str());
      if (c->layout == "as stored" && !as_stored) as_stored = c;
      // The fastest whose batches still mix: within 0.15 of the best mix here.
      if (c->label_mix <= best_mix + 0.15 &&
          (!best || c->samples_per_second > best->samples_per_second)) {
        best = c;
      }
    }
    std::string advice = place + ": read the data ";
    if (best->layout == "shards") {
      advice += "packed into shards (stoke pack)";
    } else if (best->layout.rfind("shards-", 0) == 0) {
      const std::string side = best->layout.substr(7);
      advice += "packed into shards at a short side of " + side + " (stoke pack --short-side " +
                side + "; the pixels beyond it are gone from that copy)";
    } else {
      advice += "as it is stored";
    }
    advice += best->order == "quasi" ? ", in quasi-random order (--shuffle quasi)"
                                     : ", in " + best->order + " order";
    char figures[160];
    std::snprintf(figures, sizeof figures, ": %.0f samples/s, label mix %.3f",
                  best->samples_per_second, best->label_mix);
    advice += figures;
    if (as_stored && as_stored != best && as_stored->samples_per_second > 0) {
      std::snprintf(figures, sizeof figures, " (%.1fx the data as stored in %s order)",
                    best->samples_per_second / as_stored->samples_per_second,
                    as_stored->order.c_str());
      advice += figures;
    }
    if (need > 0) {
      advice += best->samples_per_second >= need
                    ? "; that meets the need"
                    : "; even that falls short of the need: a faster location, or preload";
    }
    std::printf("=> %s\n", advice.c_str());
  }
}

// What the command line asked for.
struct BenchRequest {
  Flags flags;  // each pass parses its pipeline from these
  std::vector<std::pair<std::string, std::string>> locations;  // label, path
  std::vector<StorageModel> models;
  int64_t samples = 1000;
  double min_seconds = 3;
  double need = 0;  // samples/s; 0: none given (--step may measure it)
  bool pack = false;
  int pack_short_side = 0;  // 0: no resized shards
  std::string step, json_path, report_path;
};

// Every pass's pipeline: the flags parsed again (they parsed once already).
StatusOr<Pipeline> PipelineOf(const BenchRequest& request) {
  Pipeline p;
  STOKE_RETURN_IF_ERROR(ParsePipelineFlags(request.flags, 32, "full", &p));
  return p;
}

StatusOr<double> ParseSeconds(const Flags& flags, const std::string& name, double fallback) {
  if (!flags.Has(name)) return fallback;
  const std::string text = flags.String(name, "");
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != 0 || !(seconds >= 0) || seconds > 86400) {
    return InvalidArgumentError("--" + name + ": '" + text +
                                "' is not a number of seconds in [0, 86400]");
  }
  return seconds;
}

// Every error here is a usage error naming its flag.
StatusOr<BenchRequest> ParseBench(const std::vector<std::string>& args) {
  std::set<std::string> valued = PipelineValuedFlags();
  valued.insert({"data", "model", "samples", "min-seconds", "need", "step", "json", "report",
                 "pack-short-side"});
  std::set<std::string> switches = PipelineSwitches();
  switches.insert("pack");
  BenchRequest r;
  // --data and --model repeat: collect them before Flags keeps the last.
  std::vector<std::string> models;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--model") models.push_back(args[i + 1]);
    if (args[i] != "--data") continue;
    const size_t eq = args[i + 1].find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError("--data: '" + args[i + 1] + "' is not LABEL=PATH");
    }
    r.locations.emplace_back(args[i + 1].substr(0, eq), args[i + 1].substr(eq + 1));
  }
  STOKE_ASSIGN_OR_RETURN(r.flags, Flags::Parse(args, valued, switches));
  for (const std::string& p : r.flags.positional()) r.locations.emplace_back("data", p);
  if (r.locations.empty()) {
    PrintBenchUsage(stderr);
    return InvalidArgumentError("name a dataset: PATH or --data LABEL=PATH");
  }
  STOKE_RETURN_IF_ERROR(PipelineOf(r).status());
  STOKE_ASSIGN_OR_RETURN(r.samples, r.flags.Int("samples", 1000, 1, int64_t{1} << 40));
  STOKE_ASSIGN_OR_RETURN(r.min_seconds, ParseSeconds(r.flags, "min-seconds", 3));
  if (r.flags.Has("need")) {
    STOKE_ASSIGN_OR_RETURN(const int64_t need, r.flags.Int("need", 0, 1, int64_t{1} << 40));
    r.need = static_cast<double>(need);
  }
  for (const std::string& m : models) {
    auto model = ParseStorageModel(m);
    if (!model.ok()) return model.status().WithContext("--model");
    r.models.push_back(*model);
  }
  STOKE_ASSIGN_OR_RETURN(const int64_t short_side, r.flags.Int("pack-short-side", 0, 1, 65535));
  r.pack_short_side = static_cast<int>(short_side);
  r.pack = r.flags.Has("pack") || r.pack_short_side > 0;
  r.step = r.flags.String("step", "");
  if (r.need > 0 && !r.step.empty()) {
    return InvalidArgumentError(
        "--need and --step both say what the training step needs: --need gives it, --step "
        "measures it; pass one");
  }
  r.json_path = r.flags.String("json", "");
  r.report_path = r.flags.String("report", "");
  return r;
}

// The need, measured: the samples/s the --step consumes on the first batches
// of the first location.
std::optional<Failure> MeasureNeed(BenchRequest& request) {
  if (request.need > 0 || request.step.empty()) return std::nullopt;
  auto p = PipelineOf(request);
  if (!p.ok()) return Failure::Usage(p.status());
  auto d = OpenDataset(request.locations[0].second, p->split, &*p);
  if (!d.ok()) return Failure::Data(d.status());
  auto loader = Loader::Open(*d, p->options);
  if (!loader.ok()) return Failure{LoaderOpenExit(loader.status()), loader.status()};
  auto step = Step::Parse(request.step, (*loader)->sample_spec(), p->options.device, 1);
  if (!step.ok()) return Failure::Usage(step.status().WithContext("--step"));
  uint64_t stepped = 0;
  for (int b = 0; b < 6; ++b) {
    auto batch = (*loader)->Next();
    if (!batch.ok()) return Failure::Data(batch.status());
    if (!*batch) break;
    if (Status s = (*step)->Run(*batch); !s.ok()) return Failure::Data(s.WithContext("--step"));
    stepped += static_cast<uint64_t>(batch->size());
  }
  if ((*step)->bounded() && (*step)->busy_seconds() > 0) {
    request.need = static_cast<double>(stepped) / (*step)->busy_seconds();
    std::fprintf(stderr, "stoke bench: the step consumes %.0f samples/s: that is the need\n",
                 request.need);
  }
  return std::nullopt;
}

// A location, read as it is or through a storage model.
struct Target {
  std::string label, path;
  const StorageModel* model;  // null: the real device
};

// Packs the target's data into shards beside it, once (at a short side of
// `short_side` when it is not 0); returns their path.
StatusOr<std::string> PackBeside(const BenchRequest& request, const Target& target,
                                 int short_side) {
  const std::string shards =
      target.path + ".stoke-shards" + (short_side > 0 ? "-s" + std::to_string(short_side) : "");
  std::error_code ec;
  if (std::filesystem::exists(shards, ec)) return shards;
  STOKE_ASSIGN_OR_RETURN(Pipeline p, PipelineOf(request));
  STOKE_ASSIGN_OR_RETURN(auto d, OpenDataset(target.path, p.split, &p));
  PackOptions options;
  if (short_side > 0) {
    options.resize = PackOptions::Resize::kShortSide;
    options.resize_pixels = short_side;
  }
  auto packed = Pack(*d, shards, options);
  if (!packed.ok()) return packed.status().WithContext("--pack");
  std::fprintf(stderr, "stoke bench: packed %s into %s\n", target.path.c_str(), shards.c_str());
  return shards;
}

// The plan's order for the raw passes, its first `n` samples: the loader's,
// read out.
std::optional<Failure> ReadOrder(const std::shared_ptr<Dataset>& d, LoaderOptions o, uint64_t n,
                                 std::vector<uint64_t>* order) {
  o.decode_threads = 0;
  auto probe = Loader::Open(d, o);
  if (!probe.ok()) return Failure{LoaderOpenExit(probe.status()), probe.status()};
  while (order->size() < n) {
    auto b = (*probe)->Next();
    if (!b.ok()) return Failure::Data(b.status());
    if (!*b) break;
    order->insert(order->end(), b->indices().begin(), b->indices().end());
  }
  order->resize(std::min<size_t>(order->size(), n));
  return std::nullopt;
}

// One layout of one target: raw reads 1 and 8 at a time, then the pipeline in
// the order asked for (and quasi-random where samples lie in large files; and
// pread beside what auto chose).
std::optional<Failure> BenchLayout(const BenchRequest& request, const Target& target,
                                   const std::string& layout, const std::string& path,
                                   std::vector<Row>* rows) {
  auto p = PipelineOf(request);
  if (!p.ok()) return Failure::Usage(p.status());
  if (layout == "shards") p->format = "shards";
  if (target.model) UseStorageModel(*target.model, request.flags, &*p);
  auto d = OpenDataset(path, p->split, &*p);
  if (!d.ok()) return Failure::Data(d.status());
  const LoaderOptions& o = p->options;
  std::vector<uint64_t> order;
  const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(request.samples), (*d)->size());
  if (auto failed = ReadOrder(*d, o, n, &order)) return failed;
  auto tag = [&](Row r) {
    r.location = target.label;
    r.model = target.model ? "model " + target.model->name : "real";
    r.layout = layout;
    if (request.need > 0 && r.pass.starts_with("pipeline")) {
      char verdict[64];
      std::snprintf(verdict, sizeof verdict, "short of the need by %.1f%%",
                    100 * (1 - r.samples_per_second / request.need));
      r.verdict = r.samples_per_second >= request.need ? "meets the need" : verdict;
    }
    rows->push_back(r);
  };
  // Under a storage model the model is the device: evicting would add the
  // real disk's cold reads to it.
  auto evict = [&] {
    if (!target.model) EvictFiles(**d);
  };
  for (int threads : {1, 8}) {
    evict();
    tag(RawPass(**d, order, threads));
  }
  std::vector<Order> orders = {o.order};
  if (o.order != Order::kQuasiRandom && !(*d)->Locate(0).whole_file) {
    orders.push_back(Order::kQuasiRandom);
  }
  for (Order pass_order : orders) {
    LoaderOptions po = o;
    po.order = pass_order;
    evict();
    auto r = PipelinePass(*d, po, request.min_seconds);
    if (!r.ok()) return Failure::Data(r.status());
    tag(*r);
    if (pass_order == o.order && o.io == IoBackend::kAuto && !r->pass.ends_with("pread")) {
      po.io = IoBackend::kPread;
      evict();
      auto again = PipelinePass(*d, po, request.min_seconds);
      if (!again.ok()) return Failure::Data(again.status());
      tag(*again);
    }
  }
  return std::nullopt;
}

// Every (location, storage model) pair: the real devices, and the models on
// the first location; as stored, and packed with --pack.
std::optional<Failure> RunBench(const BenchRequest& request, std::vector<Row>* rows) {
  std::vector<Target> targets;
  for (const auto& [label, path] : request.locations) targets.push_back({label, path, nullptr});
  for (const StorageModel& m : request.models) {
    targets.push_back({request.locations[0].first, request.locations[0].second, &m});
  }
  for (const Target& target : targets) {
    std::vector<std::pair<std::string, std::string>> layouts = {{"as stored", target.path}};
    if (request.pack) {
      auto shards = PackBeside(request, target, 0);
      if (!shards.ok()) return Failure::Data(shards.status());
      layouts.emplace_back("shards", *shards);
    }
    if (request.pack_short_side > 0) {
      auto shards = PackBeside(request, target, request.pack_short_side);
      if (!shards.ok()) return Failure::Data(shards.status());
      layouts.emplace_back("shards-" + std::to_string(request.pack_short_side), *shards);
    }
    for (const auto& [layout, path] : layouts) {
      if (auto failed = BenchLayout(request, target, layout, path, rows)) return failed;
    }
  }
  return std::nullopt;
}

Status WriteBenchJson(const std::string& path, const std::vector<Row>& rows, double need) {
  JsonWriter j;
  j.BeginObject().Key("need").Number(need).Key("rows").BeginArray();
  for (const Row& r : rows) {
    j.BeginObject().Key("location").String(r.location).Key("device").String(r.model);
    j.Key("layout").String(r.layout).Key("pass").String(r.pass);
    j.Key("mb_per_second").Number(r.mb_per_second);
    j.Key("samples_per_second").Number(r.samples_per_second);
    j.Key("p50_ms").Number(r.p50_ms).Key("p99_ms").Number(r.p99_ms);
    j.Key("order").String(r.order);
    if (r.label_mix >= 0) j.Key("batch_label_mix").Number(r.label_mix);
    j.Key("verdict").String(r.verdict).EndObject();
  }
  j.EndArray().EndObject();
  std::ofstream out(path);
  out << j.str() << "\n";
  if (!out) return ErrnoToStatus(errno, "--json: cannot write");
  return Status::Ok();
}

}  // namespace

void PrintBenchUsage(FILE* out) { std::fputs(kBenchUsage, out); }

int BenchCommand(const std::vector<std::string>& args) {
  auto request = ParseBench(args);
  if (!request.ok()) return Fail("bench", Failure::Usage(request.status()));
  if (auto failed = MeasureNeed(*request)) return Fail("bench", *failed);
  std::vector<Row> rows;
  if (auto failed = RunBench(*request, &rows)) return Fail("bench", *failed);
  const double need = request->need;
  PrintRows(rows, request->samples, request->min_seconds, need);
  PrintSummary(rows, need);
  if (!request->json_path.empty()) {
    if (Status s = WriteBenchJson(request->json_path, rows, need); !s.ok()) {
      return Fail("bench", Failure::Data(s));
    }
  }
  if (!request->report_path.empty()) {
    std::ofstream out(request->report_path);
    out << HtmlReport(rows, need);
    if (!out) return Fail("bench", Failure::Data(ErrnoToStatus(errno, "--report: cannot write")));
  }
  if (need == 0) return 0;
  // The exit status says whether any pipeline pass met the need.
  for (const Row& r : rows) {
    if (r.pass.starts_with("pipeline") && r.samples_per_second >= need) return 0;
  }
  return kExitData;
}

}  // namespace stoke::cli

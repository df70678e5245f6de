#include "profile/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace stoke::internal {
namespace {

// The lowest capacity among stages other than `except`; infinity if none bounds.
double OthersCapacity(const std::vector<StageCapacity>& stages, const std::string& except) {
  double lowest = std::numeric_limits<double>::infinity();
  for (const StageCapacity& s : stages) {
    if (s.stage != except && s.capacity > 0) lowest = std::min(lowest, s.capacity);
  }
  return lowest;
}

// Each stage's rate, use and capacity over the run, and the consumer's.
std::vector<StageCapacity> Capacities(const RunFacts& f, double wall, double achieved) {
  std::vector<StageCapacity> stages;
  for (const StageStats& stage : f.stats.stages) {
    if (stage.name == "dispatch") continue;
    const ThreadStats t = stage.Total();
    const bool inline_decode = stage.name == "decode/inline";
    const double threads =
        inline_decode ? f.options.read_threads : static_cast<double>(stage.threads.size());
    const double items =
        stage.name == "copy" ? static_cast<double>(f.samples) : static_cast<double>(t.items);
    StageCapacity c;
    c.stage = inline_decode ? "decode" : stage.name;
    c.samples_per_second = items / wall;
    c.utilisation = std::clamp(t.busy_seconds / (threads * wall), 0.0, 1.0);
    c.capacity = t.busy_seconds > 0 ? items / (t.busy_seconds / threads) : 0;
    stages.push_back(c);
  }
  StageCapacity consumer;
  consumer.stage = "consumer";
  consumer.samples_per_second = achieved;
  if (f.has_step && f.step_busy_seconds > 0) {
    consumer.utilisation = std::clamp(f.step_busy_seconds / wall, 0.0, 1.0);
    consumer.capacity = static_cast<double>(f.samples) / f.step_busy_seconds;
  }
  stages.push_back(consumer);
  return stages;
}

// The ring bounds the run when every slot is claimed (dispatch waiting for
// one) while the consumer waits for data and no stage is near full use: the
// work in flight, capped at ring_slots batches, is too little to keep the
// threads busy. If so, sets the verdict, with its advice, and returns true.
bool JudgeRing(const RunFacts& f, const StageCapacity& worst, double others, double achieved,
               double wall, Verdict* v) {
  double ring_full = 0;
  for (const StageStats& stage : f.stats.stages) {
    if (stage.name == "dispatch") ring_full = stage.Total().blocked_seconds / wall;
  }
  double busiest = 0;
  for (const StageCapacity& s : v->stages) busiest = std::max(busiest, s.utilisation);
  // Both fractions are of the whole run: together above 1.3 they overlap for
  // at least 30% of it (a consumer-bound run whose start was starved has the
  // ring full only after). A run of a few ring-fulls is all start.
  const bool long_run =
      f.stats.batches >= 4 * static_cast<uint64_t>(std::max(f.options.ring_slots, 1));
  if (long_run && v->starved_fraction + ring_full > 1.3 && busiest < 0.7 &&
      f.options.ring_slots > 0) {
    v->bottleneck = "ring";
    v->explanation =
        FormatFigures(
            "the ring bounds the run: its %.0f slots of %.0f samples were all claimed %.0f%% "
            "of the run",
            f.options.ring_slots, static_cast<double>(f.options.batch_size),
            100 * std::min(ring_full, 1.0)) +
        FormatFigures(
            " while the busiest stage was %.0f%% busy; the consumer waited %.0f%% of the run "
            "for data",
            100 * busiest, 100 * v->starved_fraction);
    const double more =
        std::max(4.0 * f.options.ring_slots, f.options.ring_slots / std::max(busiest, 0.05));
    const double predicted = std::min(worst.capacity, others);
    if (predicted > achieved * 1.05 && std::isfinite(predicted)) {
      v->advice.push_back(
          {FormatFigures("raise --ring-slots from %.0f to %.0f (or leave it 0, automatic), "
                         "so that more batches are filled at once",
                         f.options.ring_slots, std::ceil(more)),
           predicted,
           predicted / achieved,
           {}});
    }
    return true;
  }
  return false;
}

// The verdict's sentence for a bounding stage, in physical units.
std::string Sentence(const RunFacts& f, const StageCapacity& worst, const Verdict& v, double bps) {
  const Ceilings& ceil = f.ceilings;
  std::string e = v.bottleneck + " bounds the run: " +
                  FormatFigures("%.0f samples/s at %.0f%% busy (capacity %.0f samples/s)",
                                worst.samples_per_second, 100 * worst.utilisation, worst.capacity);
  if (v.bottleneck == "read") {
    e += FormatFigures(", %.1f MB/s of stored data", worst.samples_per_second * bps / 1e6);
    if (ceil.storage_sequential_bytes_per_second > 0) {
      e += FormatFigures(
          " against a storage ceiling of %.1f MB/s sequential, %.0f "
          "random reads/s",
          ceil.storage_sequential_bytes_per_second / 1e6, ceil.storage_random_reads_per_second);
    }
    if (!f.storage_model.empty()) e += " (storage model " + f.storage_model + ")";
  } else if (v.bottleneck == "decode" && ceil.decode_samples_per_second_per_core > 0) {
    e += FormatFigures(
        " on %.0f thread(s); one core decodes %.0f samples/s",
        f.options.decode_threads > 0 ? f.options.decode_threads : f.options.read_threads,
        ceil.decode_samples_per_second_per_core);
    const double floor = ceil.entropy_floor_samples_per_second_per_core;
    if (floor > 0) {
      const double share = ceil.decode_samples_per_second_per_core / floor;
      e += FormatFigures(
          ", %.2f of the entropy floor (%.0f samples/s: Huffman decoding alone of "
          "what the crops need)",
          share, floor);
      const double codec = ceil.codec_samples_per_second_per_core;
      if (codec > 0) {
        // A sample's decode time in parts: each what-if does a part of the
        // next one's work (noise can make a difference negative: none).
        const double whole = 1e6 / ceil.decode_samples_per_second_per_core;
        const double entropy = std::min(whole, 1e6 / floor);
        const double in_libjpeg = std::clamp(1e6 / codec, entropy, whole);
        e += FormatFigures(
            "; of its %.0f us a sample, %.0f go to Huffman decoding, %.0f to the rest of "
            "libjpeg's decode (IDCT) and %.0f to resampling to the output and colour "
            "conversion",
            whole, entropy, in_libjpeg - entropy, whole - in_libjpeg);
      }
      if (share >= 0.8) e += "; only fewer bytes per image, or another decoder, go faster";
    }
  } else if (v.bottleneck == "consumer" && f.has_step) {
    e += FormatFigures(
        "; its step takes %.2f ms per batch",
        f.step_busy_seconds * 1e3 / std::max(1.0, static_cast<double>(f.stats.batches)));
  }
  e += FormatFigures("; the consumer waited %.0f%% of the run for data", 100 * v.starved_fraction);
  if (v.bottleneck == "consumer") e += " (the input pipeline keeps up)";
  return e;
}

// Adds a verdict's advice, each predicted rate capped by what the other
// stages allow.
struct Advisor {
  const RunFacts& f;
  Verdict& v;
  const StageCapacity& worst;
  double others;    // the lowest capacity of the other stages
  double achieved;  // samples/s, > 0
  double bps;       // stored bytes per sample, >= 1

  // `cap`: what the other stages allow after the change (default: as now).
  void Add(const std::string& what, double predicted, double cap = -1) {
    predicted = std::min(predicted, cap < 0 ? others : cap);
    if (!(predicted > achieved * 1.05) || !std::isfinite(predicted)) return;
    v.advice.push_back({what, predicted, predicted / achieved, {}});
  }

  void Decode() {
    const Ceilings& ceil = f.ceilings;
    const LoaderOptions& o = f.options;
    const double unpacked = ceil.decode_samples_per_second_per_core;
    const double packed = ceil.decode_samples_per_second_per_core_packed;
    if (unpacked > 0 && packed > unpacked) {
      const size_t before = v.advice.size();
      Add(FormatFigures(
              "pack the JPEGs into shards (stoke pack rewrites them with restart markers, "
              "losslessly, so that crops decode only what they cover): one core decodes "
              "%.0f samples/s instead of %.0f",
              packed, unpacked),
          worst.capacity * packed / unpacked);
      if (v.advice.size() > before && !f.pack.empty()) {
        v.advice.back().commands = {f.pack, f.rerun_packed};
      }
    }
    const double resized = ceil.decode_samples_per_second_per_core_resized;
    if (unpacked > 0 && resized > std::max(unpacked, packed) && ceil.resize_short_side > 0) {
      const size_t before = v.advice.size();
      Add(FormatFigures("pack the JPEGs at the resolution training uses (stoke pack --short-side "
                        "%.0f: they are larger than the output needs; the pixels beyond a short "
                        "side of %.0f are gone from the packed copy, the source is untouched): "
                        "one core decodes %.0f samples/s instead of %.0f",
                        ceil.resize_short_side, ceil.resize_short_side, resized, unpacked),
          worst.capacity * resized / unpacked);
      if (v.advice.size() > before && !f.pack_resized.empty()) {
        v.advice.back().commands = {f.pack_resized, f.rerun_resized};
      }
    }
    const int threads = o.decode_threads > 0 ? o.decode_threads : o.read_threads;
    if (o.decode_threads < f.cores) {
      Add(FormatFigures("raise --decode-threads from %.0f to %.0f (one per core)", o.decode_threads,
                        f.cores),
          worst.capacity * f.cores / std::max(threads, 1));
    }
  }

  // The capacity of the stages other than reading once the files are packed:
  // decoding `speedup` times faster.
  double PackedCapacity(double speedup) const {
    const Ceilings& ceil = f.ceilings;
    const LoaderOptions& o = f.options;
    const double unpacked = ceil.decode_samples_per_second_per_core;
    const double packed = ceil.decode_samples_per_second_per_core_packed;
    double cap = std::numeric_limits<double>::infinity();
    for (const StageCapacity& s : v.stages) {
      if (s.stage == "read" || s.capacity <= 0) continue;
      double capacity = s.capacity;
      if (s.stage == "decode") {
        capacity *= speedup;
        // A decoder idle most of the run (waiting on reads) decodes each
        // sample cold: its measured capacity is far below what it does when
        // busy (868 against 1850 samples/s a thread here). Then take one
        // core's measured rate per thread, the threads sharing the cores
        // with one core's worth of reading, dispatch and consumer.
        const double threads = o.decode_threads > 0 ? o.decode_threads : o.read_threads;
        const double per_core = f.jpeg && packed > 0 ? packed : unpacked;
        if (s.utilisation < 0.5 && per_core > 0) {
          capacity = per_core * std::min(threads, static_cast<double>(f.cores)) *
                     std::min(1.0, f.cores / (threads + 1));
        }
      }
      cap = std::min(cap, capacity);
    }
    return cap;
  }

  void Read() {
    const Ceilings& ceil = f.ceilings;
    const LoaderOptions& o = f.options;
    const double window_bytes = static_cast<double>(o.window_bytes);
    const double windows = f.remote ? RemoteWindowReadRate(ceil, bps, window_bytes, o.read_threads)
                                    : WindowReadRate(ceil, bps, window_bytes);
    const bool shuffled = o.order != Order::kSequential;
    if (f.file_per_sample && windows > 0) {
      // Packed, the run reads windows of records; JPEGs also decode faster
      // (restart markers), so the decode stage's capacity grows with them.
      const double unpacked = ceil.decode_samples_per_second_per_core;
      const double packed = ceil.decode_samples_per_second_per_core_packed;
      const double speedup = f.jpeg && unpacked > 0 && packed > unpacked ? packed / unpacked : 1;
      const double cap = PackedCapacity(speedup);
      const size_t before = v.advice.size();
      Add(std::string("pack the small files into shards (stoke pack) and read them ") +
              (shuffled ? "in quasi-random order (--shuffle quasi): windows of "
                        : "in order: windows of ") +
              FormatFigures("%.0f MiB read whole, at the storage's sequential rate",
                            static_cast<double>(o.window_bytes) / 1048576),
          windows, cap);
      if (v.advice.size() > before && !f.pack.empty()) {
        v.advice.back().commands = {f.pack, f.rerun_packed};
      }
    } else if (shuffled && o.order != Order::kQuasiRandom && windows > 0 &&
               ceil.storage_random_reads_per_second < 0.5 * windows) {
      const size_t before = v.advice.size();
      Add(FormatFigures("read in quasi-random order (--shuffle quasi): windows of %.0f MiB of "
                        "consecutive records read whole, each batch drawn from %.0f of them",
                        static_cast<double>(o.window_bytes) / 1048576, o.group_windows),
          windows);
      if (v.advice.size() > before && !f.rerun_quasi.empty()) {
        v.advice.back().commands = {f.rerun_quasi};
      }
    }
    // A remote store in quasi order: a window per read thread in flight; more
    // of them keep more connections streaming.
    if (f.remote && o.order == Order::kQuasiRandom && windows > 0) {
      Add(FormatFigures("keep more windows in flight (--read-threads %.0f): each window is one GET "
                        "of %.0f MiB that waits %.0f ms for its first byte and streams at one "
                        "connection's %.0f MB/s",
                        2.0 * o.read_threads, window_bytes / 1048576,
                        ceil.remote_first_byte_p50_seconds * 1e3,
                        ceil.remote_connection_bytes_per_second / 1e6),
          2 * windows);
    }
    // A remote store: by Little's law, the requests in flight a rate needs are
    // the rate times the time to the first byte.
    const double latency = ceil.remote_first_byte_p50_seconds;
    if (f.remote && latency > 0 && o.order != Order::kQuasiRandom) {
      const double target = std::min(others, 1e6);
      const double in_flight = o.reads_in_flight > 0 ? o.reads_in_flight : 256;
      const double needed = std::ceil(target * latency * 1.5);
      if (std::isfinite(target) && needed > in_flight) {
        Add(FormatFigures(
                "keep more requests in flight (--reads-in-flight %.0f): the store answers "
                "in %.0f ms (p50), so %.0f in flight deliver at most %.0f samples/s",
                needed, latency * 1e3, in_flight, in_flight / latency),
            std::min(target,
                     ceil.remote_requests_per_second_parallel * needed / kRemoteProbeInFlight));
      }
    }
    // More requests in flight help only a device that serves several at once:
    // the ceiling measured 8 at a time against 1 at a time says whether it does.
    const double parallel = ceil.storage_random_reads_per_second_parallel;
    if (!f.remote && parallel > 1.5 * ceil.storage_random_reads_per_second) {
      Add(FormatFigures("raise --read-threads from %.0f to %.0f, or --reads-in-flight: the storage "
                        "serves %.0f random reads/s 8 at a time",
                        o.read_threads, 4.0 * o.read_threads, parallel),
          std::min(worst.capacity * 4, parallel));
    }
    if (ceil.memory_copy_bytes_per_second > 0) {
      Add("move the data to RAM (or a faster disk): the page cache, or a tmpfs copy",
          ceil.memory_copy_bytes_per_second / bps);
    }
  }

  void Copy() {
    const LoaderOptions& o = f.options;
    if (o.device.kind == DeviceKind::kCpu && o.output_dtype != DType::kUint8) {
      Add("deliver uint8 and convert on the GPU (--device cuda): the conversion leaves the CPU "
          "and 2-4x fewer bytes cross the bus",
          worst.capacity * (o.output_dtype == DType::kFloat32 ? 4 : 2));
    }
  }
};

}  // namespace

std::string FormatFigures(const char* fmt, double a, double b, double c, double d) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

double RemoteWindowReadRate(const Ceilings& c, double bps, double window_bytes, int threads) {
  const double latency = c.remote_first_byte_p50_seconds;
  const double bw = c.remote_connection_bytes_per_second;
  if (latency <= 0 || bw <= 0 || bps <= 0 || threads < 1) return 0;
  return threads * (window_bytes / bps) / (latency + window_bytes / bw);
}

double WindowReadRate(const Ceilings& c, double bps, double window_bytes) {
  const double bw = c.storage_sequential_bytes_per_second;
  const double random = c.storage_random_reads_per_second;
  if (bw <= 0 || random <= 0 || bps <= 0) return 0;
  const double overhead = std::max(0.0, 1 / random - bps / bw);
  return (window_bytes / bps) / (window_bytes / bw + overhead);
}

// The batches a run needs to be judged: the minimum count, or as many as fill
// the minimum time at this run's rate, whichever is more.
uint64_t BatchesToJudge(const RunFacts& f, double wall) {
  const double per_second = static_cast<double>(f.stats.batches) / wall;
  return std::max<uint64_t>(kMinJudgedBatches,
                            static_cast<uint64_t>(std::ceil(kMinJudgedSeconds * per_second)));
}

Verdict Judge(const RunFacts& f) {
  Verdict v;
  const double wall = std::max(f.wall_seconds, 1e-9);
  v.achieved_samples_per_second = static_cast<double>(f.samples) / wall;
  v.starved_fraction = std::clamp(f.stats.consumer_wait_seconds / wall, 0.0, 1.0);
  if (f.stats.batches < kMinJudgedBatches || f.wall_seconds < kMinJudgedSeconds) {
    // Rates over a few batches or milliseconds are the pipeline filling and the
    // timer's resolution: no capacities, no bottleneck, no advice.
    const uint64_t need = BatchesToJudge(f, wall);
    v.bottleneck = "too short";
    v.explanation = FormatFigures(
        "the run was too short to judge (batches delivered: %.0f, in %.3f s); a verdict needs at "
        "least %.0f batches and %.2f s",
        static_cast<double>(f.stats.batches), f.wall_seconds, static_cast<double>(need),
        kMinJudgedSeconds);
    const auto per_epoch = static_cast<double>(f.batches_per_epoch);
    if (f.batches_per_epoch > 0 && static_cast<double>(need) <= per_epoch) {
      v.explanation +=
          FormatFigures(" (within an epoch of %.0f batches: --max-batches %.0f or more)", per_epoch,
                        static_cast<double>(need));
    } else if (f.batches_per_epoch > 0) {
      const double epochs = std::ceil(static_cast<double>(need) / per_epoch);
      v.explanation += FormatFigures(" (%.0f epochs of this dataset's %.0f batches: --epochs %.0f)",
                                     epochs, per_epoch, epochs);
    }
    return v;
  }
  v.stages = Capacities(f, wall, v.achieved_samples_per_second);

  // The bottleneck: the lowest capacity; with none bounded, the busiest.
  StageCapacity* worst = nullptr;
  for (StageCapacity& s : v.stages) {
    if (s.capacity > 0 && (!worst || s.capacity < worst->capacity)) worst = &s;
  }
  if (!worst) {
    // No stage recorded busy time (samples copied from memory, no step): the
    // consumer's waiting tells whether the input side is the limit.
    for (StageCapacity& s : v.stages) {
      if (s.stage == (v.starved_fraction > 0.5 ? "read" : "consumer")) worst = &s;
    }
    v.bottleneck = worst ? worst->stage : "consumer";
    v.explanation =
        v.bottleneck + FormatFigures(
                           " bounds the run at %.0f samples/s, by elimination: no stage "
                           "recorded busy time; the consumer waited %.0f%% of the run for data",
                           v.achieved_samples_per_second, 100 * v.starved_fraction);
    return v;
  }
  // The bounding stage's busy time includes the run's start (first touches of
  // the ring's pages, cold caches): its capacity is at least the rate the run
  // sustained once filled, which predictions scale.
  if (f.steady_samples_per_second > worst->capacity) {
    worst->capacity = f.steady_samples_per_second;
  }
  v.bottleneck = worst->stage;
  const double others = OthersCapacity(v.stages, v.bottleneck);
  const double bps = static_cast<double>(std::max<uint64_t>(f.stored_bytes_per_sample, 1));
  const double achieved = std::max(v.achieved_samples_per_second, 1e-9);
  if (JudgeRing(f, *worst, others, achieved, wall, &v)) return v;
  v.explanation = Sentence(f, *worst, v, bps);
  Advisor advisor{f, v, *worst, others, achieved, bps};
  if (v.bottleneck == "decode") {
    advisor.Decode();
  } else if (v.bottleneck == "read") {
    advisor.Read();
  } else if (v.bottleneck == "copy") {
    advisor.Copy();
  }
  std::sort(v.advice.begin(), v.advice.end(),
            [](const Advice& a, const Advice& b) { return a.gain > b.gain; });
  return v;
}

}  // namespace stoke::internal

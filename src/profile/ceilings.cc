#include "profile/ceilings.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "dataset/stored.h"
#include "decode/jpeg_decoder.h"
#include "decode/jpeg_resample.h"
#include "decode/jpeg_restart.h"
#include "io/http_client.h"
#include "io/page_cache.h"
#include "io/remote_file.h"
#include "util/mutex.h"

namespace stoke::internal {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kBudget = std::chrono::milliseconds(1000);
constexpr size_t kChunk = 1 << 20;
constexpr uint64_t kMaxBytes = uint64_t{256} << 20;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double MemoryCopy() {
  std::vector<std::byte> a(64 << 20, std::byte{1}), b(64 << 20);
  double best = 0;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), a.size());
    best = std::max(best, static_cast<double>(a.size()) / Seconds(t0));
  }
  return best;
}

void MeasureDecode(const Dataset& d, Ceilings* c) {
  if (d.stored_as_output()) return;
  std::vector<std::vector<std::byte>> stored;
  std::vector<std::byte> bytes;
  for (uint64_t i = 0; i < std::min<uint64_t>(d.size(), 64); ++i) {
    if (ReadStoredSample(d, i, &bytes).ok()) stored.push_back(bytes);
  }
  if (stored.empty()) return;
  std::vector<std::byte> out(d.spec().bytes());
  // Samples/s on this core, decoded (or, with `what_if`, only entropy-decoded:
  // the floor, or only as far as the codec goes), of the samples as stored or
  // as rewritten; those that fail are not counted (0: none decoded).
  using WhatIf = Dataset::DecodeContext::WhatIf;
  auto rate = [&](const std::vector<std::vector<std::byte>>& samples, WhatIf what_if,
                  bool rewritten) {
    uint64_t decoded = 0;
    const auto t0 = Clock::now();
    do {
      for (size_t i = 0; i < samples.size(); ++i) {
        int64_t label = 0;
        const Dataset::DecodeContext ctx{i, 0, 0, rewritten, what_if};
        decoded += d.DecodeSample(ctx, samples[i], out, &label).ok() ? 1 : 0;
      }
    } while (Clock::now() - t0 < kBudget / (what_if == WhatIf::kWhole ? 2 : 4));
    return static_cast<double>(decoded) / Seconds(t0);
  };
  c->decode_samples_per_second_per_core = rate(stored, WhatIf::kWhole, false);
  if (!d.decode_is_compute_bound()) return;
  c->entropy_floor_samples_per_second_per_core = rate(stored, WhatIf::kEntropyOnly, false);
  c->codec_samples_per_second_per_core = rate(stored, WhatIf::kCodecOnly, false);
  // As `stoke pack` would store them: rewritten with restart markers, unless
  // they can be cut already (or cannot be rewritten).
  std::vector<std::vector<std::byte>> packed(stored.size());
  size_t rewritten = 0;
  RestartLayout layout;
  for (size_t i = 0; i < stored.size(); ++i) {
    if (!layout.Parse(stored[i]) && AddRestartMarkers(stored[i], &packed[i]).ok()) {
      ++rewritten;
    } else {
      packed[i] = stored[i];
    }
  }
  if (rewritten > 0) {
    c->decode_samples_per_second_per_core_packed = rate(packed, WhatIf::kWhole, true);
    c->entropy_floor_samples_per_second_per_core_packed = rate(packed, WhatIf::kEntropyOnly, true);
  }
  // Larger than the output needs (more than half of them above the chosen
  // short side): as `stoke pack --short-side` would store them.
  const int side = ResizeShortSideFor(d.spec());
  if (side == 0) return;
  JpegDecoder decoder;
  std::vector<int> short_sides;
  for (const std::vector<std::byte>& jpeg : stored) {
    JpegHeader header;
    if (decoder.Begin(jpeg, uint64_t{1} << 28, &header).ok()) {
      short_sides.push_back(std::min(header.width, header.height));
    }
  }
  if (short_sides.empty()) return;
  std::nth_element(short_sides.begin(), short_sides.begin() + short_sides.size() / 2,
                   short_sides.end());
  if (short_sides[short_sides.size() / 2] <= side) return;
  ResampleJpegOptions resample;
  resample.pixels = side;
  std::vector<std::vector<std::byte>> resized(stored.size());
  for (size_t i = 0; i < stored.size(); ++i) {
    StatusOr<bool> done = ResampleJpeg(stored[i], resample, &decoder, &resized[i]);
    if (!done.ok() || !*done) resized[i] = packed[i];
  }
  c->decode_samples_per_second_per_core_resized = rate(resized, WhatIf::kWhole, true);
  c->entropy_floor_samples_per_second_per_core_resized = rate(resized, WhatIf::kEntropyOnly, true);
  c->resize_short_side = side;
}

void MeasureStorage(const Dataset& d, bool modelled, Ceilings* c) {
  if (d.Locate(0).memory) return;  // in memory: no storage
  // Cold reads, from the device: the page cache is emptied of the files first.
  // Under a storage model the model is the device, and the loader's runs read
  // through whatever the page cache holds: evicting would add the real disk's
  // cold reads to the model's.
  auto evict = [&](const std::string& path) {
    if (!modelled) EvictFromPageCache(path);
  };
  // Sequential: the first files' bytes in order, in big reads.
  uint64_t bytes = 0;
  auto t0 = Clock::now();
  for (uint32_t f = 0; f < d.file_count() && bytes < kMaxBytes && Clock::now() - t0 < kBudget;
       ++f) {
    evict(d.file_path(f));
    auto file = d.file_system()->Open(d.file_path(f), {});
    if (!file.ok()) continue;
    std::vector<std::byte> chunk(kChunk);
    for (uint64_t offset = 0; bytes < kMaxBytes && Clock::now() - t0 < kBudget;) {
      auto n = (*file)->ReadAt(offset, chunk);
      if (!n.ok() || *n == 0) break;
      offset += *n;
      bytes += *n;
    }
  }
  if (bytes > 0) c->storage_sequential_bytes_per_second = static_cast<double>(bytes) / Seconds(t0);
  // Random: single samples at random, cold.
  std::mt19937_64 random(7);
  std::vector<uint64_t> picks;
  for (int i = 0; i < 256; ++i) picks.push_back(random() % d.size());
  if (d.file_count() > 64) {
    for (uint64_t i : picks) evict(d.file_path(d.Locate(i).file));
  } else {
    for (uint32_t f = 0; f < d.file_count(); ++f) evict(d.file_path(f));
  }
  uint64_t reads = 0;
  std::vector<std::byte> sample;
  t0 = Clock::now();
  for (size_t k = 0; k < picks.size() / 2; ++k) {
    if (Clock::now() - t0 >= kBudget) break;
    if (ReadStoredSample(d, picks[k], &sample).ok()) ++reads;
  }
  if (reads > 0) c->storage_random_reads_per_second = static_cast<double>(reads) / Seconds(t0);
  // The other half, 8 at a time: does the device serve requests in parallel?
  std::atomic<uint64_t> parallel_reads{0};
  std::atomic<size_t> next{picks.size() / 2};
  t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (size_t k; (k = next.fetch_add(1)) < picks.size() && Clock::now() - t0 < kBudget;) {
        std::vector<std::byte> own;
        if (ReadStoredSample(d, picks[k], &own).ok()) parallel_reads.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (parallel_reads > 0) {
    c->storage_random_reads_per_second_parallel =
        static_cast<double>(parallel_reads.load()) / Seconds(t0);
  }
}

// Counts completed GETs; Wait blocks until `n` have completed.
class Countdown final : public HttpDone {
 public:
  void OnHttpDone(HttpTransfer*) override {
    MutexLock lock(&mu_);
    ++done_;
    cv_.NotifyAll();
  }
  void Wait(size_t n) {
    MutexLock lock(&mu_);
    while (done_ < n) cv_.Wait(&mu_);
  }

 private:
  Mutex mu_;
  CondVar cv_;
  size_t done_ STOKE_GUARDED_BY(mu_) = 0;
};

// The store's latency and parallel rate, with GETs of one sample each.
void MeasureRemote(const Dataset& d, Ceilings* c) {
  if (d.file_system() != RemoteFileSystem() || d.Locate(0).memory || d.Locate(0).whole_file) return;
  std::vector<std::unique_ptr<RandomAccessFile>> files(d.file_count());
  auto file_of = [&](uint32_t f) -> RemoteFile* {
    if (!files[f]) {
      auto opened = d.file_system()->Open(d.file_path(f), {});
      if (!opened.ok()) return nullptr;
      files[f] = std::move(opened).value();
    }
    return dynamic_cast<RemoteFile*>(files[f].get());
  };
  std::mt19937_64 random(11);
  auto prepare = [&](HttpTransfer* t, std::vector<std::byte>* buffer) {
    const SampleLocation loc = d.Locate(random() % d.size());
    RemoteFile* file = file_of(loc.file);
    if (file == nullptr || loc.length == 0) return false;
    buffer->resize(loc.length);
    t->url = file->url();
    t->signing = file->signing();
    t->offset = loc.offset;
    t->dst = *buffer;
    return true;
  };
  HttpClient* client = SharedHttpClient();
  // 1. One at a time: the time to the first byte.
  std::vector<double> first_bytes;
  std::vector<std::byte> buffer;
  const auto t0 = Clock::now();
  for (int i = 0; i < 64 && Clock::now() - t0 < 2 * kBudget; ++i) {
    HttpTransfer t;
    if (!prepare(&t, &buffer) || !client->Fetch(&t).ok() || t.retries > 0) continue;
    first_bytes.push_back(static_cast<double>(t.first_byte_ns) * 1e-9);
  }
  if (first_bytes.empty()) return;
  std::sort(first_bytes.begin(), first_bytes.end());
  c->remote_first_byte_p50_seconds = first_bytes[first_bytes.size() / 2];
  c->remote_first_byte_p99_seconds = first_bytes[(first_bytes.size() * 99) / 100];
  // 2. kRemoteProbeInFlight at a time, rounds until the budget is spent.
  std::vector<HttpTransfer> transfers(kRemoteProbeInFlight);
  std::vector<std::vector<std::byte>> buffers(kRemoteProbeInFlight);
  uint64_t requests = 0;
  const auto t1 = Clock::now();
  while (Clock::now() - t1 < kBudget) {
    Countdown countdown;
    size_t started = 0;
    for (int i = 0; i < kRemoteProbeInFlight; ++i) {
      HttpTransfer& t = transfers[static_cast<size_t>(i)];
      if (!prepare(&t, &buffers[static_cast<size_t>(i)])) continue;
      t.done = &countdown;
      client->Submit(&t);
      ++started;
    }
    countdown.Wait(started);
    for (size_t i = 0; i < started; ++i) requests += transfers[i].status.ok() ? 1 : 0;
    if (started == 0) break;
  }
  if (requests > 0) {
    c->remote_requests_per_second_parallel = static_cast<double>(requests) / Seconds(t1);
  }
  // 3. One connection's bandwidth: one GET of up to 16 MiB of the first file.
  if (RemoteFile* file = file_of(0)) {
    const uint64_t size = *file->Size();
    buffer.resize(static_cast<size_t>(std::min<uint64_t>(size, uint64_t{16} << 20)));
    HttpTransfer t;
    t.url = file->url();
    t.signing = file->signing();
    t.dst = buffer;
    const auto t2 = Clock::now();
    if (!buffer.empty() && client->Fetch(&t).ok()) {
      const double streaming = Seconds(t2) - static_cast<double>(t.first_byte_ns) * 1e-9;
      if (streaming > 0) {
        c->remote_connection_bytes_per_second = static_cast<double>(buffer.size()) / streaming;
      }
    }
  }
}

}  // namespace

int ResizeShortSideFor(const SampleSpec& spec) {
  if (spec.shape.size() != 3 || spec.dtype != DType::kUint8) return 0;
  const int64_t height = spec.channels_last ? spec.shape[0] : spec.shape[1];
  const int64_t width = spec.channels_last ? spec.shape[1] : spec.shape[2];
  return static_cast<int>((std::min(height, width) * 8 + 6) / 7);
}

Ceilings MeasureCeilings(const Dataset& dataset, double device_bytes_per_second) {
  Ceilings c;
  c.memory_copy_bytes_per_second = MemoryCopy();
  MeasureDecode(dataset, &c);
  MeasureStorage(dataset, device_bytes_per_second > 0, &c);
  MeasureRemote(dataset, &c);
  if (device_bytes_per_second > 0 && c.storage_sequential_bytes_per_second > 0) {
    c.storage_sequential_bytes_per_second = device_bytes_per_second;
  }
  return c;
}

}  // namespace stoke::internal

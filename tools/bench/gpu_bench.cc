// gpu_bench: does stoke keep a GPU fed?
//
// On batches of BATCH samples of 3x224x224 uint8 held in host memory (so that
// storage is not the question), it measures in one run on one GPU:
//   peak:    cudaMemcpyAsync of one batch from pinned memory, repeated: the
//            bus's host-to-device rate for this transfer size;
//   device:  a device-to-device copy, for the memory bandwidth a one-pass
//            conversion kernel can reach;
//   host fill: the read threads' memcpy of samples into pinned memory, alone
//            and beside H2D copies (the host's memory bandwidth is shared);
//   pipeline: a stoke loader on device cuda delivering those batches to a
//            consumer that only makes its stream wait on them, its ring's
//            slots left unfilled, so that the rate is the pipeline's own: the
//            ring, the copy engine, the bus and, for float16, the conversion
//            kernel on its own stream (target: delivered >= 0.9 of the peak);
//            the kernel's time per batch and its memory rate;
//   filled:  the same with the read threads copying every sample into its
//            slot, as a dataset held in pageable memory needs (reported; bound
//            by the host's memory bandwidth on machines like the H100 host);
//   overlap: a synthetic step that reads its batch and keeps every SM busy for
//            STEP_US, fed by stoke, against the same step on a batch already
//            resident on the GPU (target: within 5% when the step is longer
//            than a batch's copy);
// for uint8 batches and for float16 ones (uint8 over the bus, converted and
// normalised on the GPU).
//
// usage: gpu_bench [BATCH] [STEP_US] [STEPS] [--read-threads N] [--ring-slots N]
//        (default 256 3000 200, one read thread per core, 6 ring slots)
// Without a visible GPU it says so and exits 0.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "spin_kernel.h"
#include "stoke/stoke.h"

namespace {

using Clock = std::chrono::steady_clock;

// How the read threads put a sample's bytes into the pinned slot: memcpy, as
// any dataset held in memory does, or not at all (the pipeline's own rate: the
// ring, the copy engine, the bus and the conversion, without the host's copy).
enum class Fill { kMemcpy, kNone };
struct Tuning {
  int read_threads = 0;  // 0: one per core
  int ring_slots = 6;
} g_tuning;

#define CHECK_CUDA(call)                                                                           \
  do {                                                                                             \
    const cudaError_t e = (call);                                                                  \
    if (e != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "gpu_bench: %s: %s at %s:%d\n", #call, cudaGetErrorString(e), __FILE__, \
                   __LINE__);                                                                      \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (false)

void CheckOk(const stoke::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "gpu_bench: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

// Samples of random bytes in one block of host memory.
class MemoryDataset final : public stoke::Dataset {
 public:
  MemoryDataset(uint64_t samples, std::vector<int64_t> shape) : samples_(samples) {
    spec_.shape = std::move(shape);
    spec_.channels_last = false;
    bytes_.resize(samples * spec_.bytes());
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i + 8 <= bytes_.size(); i += 8) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      std::memcpy(&bytes_[i], &x, 8);
    }
  }
  uint64_t size() const override { return samples_; }
  const stoke::SampleSpec& spec() const override { return spec_; }
  uint32_t file_count() const override { return 1; }
  const std::string& file_path(uint32_t) const override { return name_; }
  stoke::FileSystem* file_system() const override { return stoke::DefaultFileSystem(); }
  stoke::SampleLocation Locate(uint64_t index) const override {
    stoke::SampleLocation loc;
    loc.memory = bytes_.data() + index * spec_.bytes();
    loc.length = spec_.bytes();
    return loc;
  }
  bool stored_as_output() const override { return true; }
  stoke::Status Decode(uint64_t index, stoke::Span<const std::byte> stored,
                       stoke::Span<std::byte> out, int64_t* label) const override {
    if (fill_.load(std::memory_order_relaxed) == Fill::kMemcpy) {
      std::memcpy(out.data(), stored.data(), out.size());  // into the pinned slot
    }
    *label = static_cast<int64_t>(index % 1000);
    return stoke::Status::Ok();
  }
  // Between loaders only.
  void set_fill(Fill fill) { fill_.store(fill); }
  std::string Describe() const override {
    return "memory: " + std::to_string(samples_) + " samples of " + spec_.ToString();
  }

 private:
  uint64_t samples_;
  stoke::SampleSpec spec_;
  std::vector<std::byte> bytes_;
  std::string name_ = "<memory>";
  std::atomic<Fill> fill_{Fill::kMemcpy};
};

// The next batch, across epoch ends.
stoke::Batch NextBatch(stoke::Loader& loader) {
  while (true) {
    auto b = loader.Next();
    CheckOk(b.status(), "Loader::Next");
    if (*b) return std::move(b).value();
  }
}

// The best of three rounds (after one to warm up) of 20 copies of `bytes` from
// `from` to `to` on `stream`, in GB/s of `bytes_per_copy` each.
double BestCopyRate(void* to, const void* from, size_t bytes, cudaMemcpyKind kind,
                    double bytes_per_copy, cudaStream_t stream) {
  cudaEvent_t start, end;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&end));
  double best = 0;
  for (int round = 0; round < 4; ++round) {
    constexpr int kCopies = 20;
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < kCopies; ++i) {
      CHECK_CUDA(cudaMemcpyAsync(to, from, bytes, kind, stream));
    }
    CHECK_CUDA(cudaEventRecord(end, stream));
    CHECK_CUDA(cudaEventSynchronize(end));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, end));
    if (round > 0) best = std::max(best, kCopies * bytes_per_copy / (ms * 1e6));
  }
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  return best;
}

double PeakGbps(size_t bytes) {
  void* host = nullptr;
  void* device = nullptr;
  CHECK_CUDA(cudaHostAlloc(&host, bytes, cudaHostAllocPortable));
  CHECK_CUDA(cudaMalloc(&device, bytes));
  std::memset(host, 1, bytes);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const double best =
      BestCopyRate(device, host, bytes, cudaMemcpyHostToDevice, static_cast<double>(bytes), stream);
  cudaStreamDestroy(stream);
  cudaFree(device);
  cudaFreeHost(host);
  return best;
}

// The read threads' ceiling: `threads` threads copying samples of `data` into
// one pinned batch with memcpy for `seconds`, optionally while the bus reads that
// batch (a copy stream looping H2D), as the loader's copies do. GB/s filled.
double HostFillGbps(const MemoryDataset& data, int64_t batch, int threads, bool with_bus,
                    double seconds) {
  const size_t sample = data.spec().bytes();
  const size_t bytes = static_cast<size_t>(batch) * sample;
  void* pinned = nullptr;
  void* device = nullptr;
  CHECK_CUDA(cudaHostAlloc(&pinned, bytes, cudaHostAllocPortable));
  CHECK_CUDA(cudaMalloc(&device, bytes));
  std::memset(pinned, 0, bytes);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> filled{0};
  std::vector<std::thread> pool;
  const auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      uint64_t done = 0;
      uint64_t k = static_cast<uint64_t>(t) * 7919;
      while (!stop.load(std::memory_order_relaxed)) {
        const uint64_t index = (k * 2654435761u) % data.size();
        const auto* src = static_cast<const std::byte*>(data.Locate(index).memory);
        auto* dst = static_cast<std::byte*>(pinned) + (k % static_cast<uint64_t>(batch)) * sample;
        std::memcpy(dst, src, sample);
        done += sample;
        k += static_cast<uint64_t>(threads);
      }
      filled.fetch_add(done);
    });
  }
  while (std::chrono::duration<double>(Clock::now() - t0).count() < seconds) {
    if (with_bus) {
      CHECK_CUDA(cudaMemcpyAsync(device, pinned, bytes, cudaMemcpyHostToDevice, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  stop = true;
  for (std::thread& t : pool) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  cudaStreamDestroy(stream);
  cudaFree(device);
  cudaFreeHost(pinned);
  return static_cast<double>(filled.load()) / elapsed / 1e9;
}

// Device-to-device copy rate over `bytes`, counting bytes read plus written:
// the memory bandwidth a one-pass kernel can reach.
double DeviceCopyGbps(size_t bytes) {
  void* a = nullptr;
  void* b = nullptr;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMemset(a, 3, bytes));
  const double best =
      BestCopyRate(b, a, bytes, cudaMemcpyDeviceToDevice, 2.0 * static_cast<double>(bytes), 0);
  cudaFree(a);
  cudaFree(b);
  return best;
}

stoke::LoaderOptions Options(int64_t batch, stoke::DType dtype) {
  stoke::LoaderOptions o;
  o.batch_size = batch;
  o.order = stoke::Order::kFullShuffle;
  o.device = {stoke::DeviceKind::kCuda, 0};
  o.output_dtype = dtype;
  if (dtype != stoke::DType::kUint8) {
    o.normalize_mean = {0.485f, 0.456f, 0.406f};
    o.normalize_std = {0.229f, 0.224f, 0.225f};
  }
  o.ring_slots = g_tuning.ring_slots;
  o.device_buffers = 3;
  o.read_threads = g_tuning.read_threads > 0
                       ? g_tuning.read_threads
                       : static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  o.io = stoke::IoBackend::kPread;
  o.memory_budget_bytes = uint64_t{8} << 30;
  return o;
}

struct LoaderRate {
  double delivered_gbps = 0;  // uint8 bytes delivered per second of wall time
  double copy_gbps = 0;       // bytes over the copy stage's busy time
  double convert_ms = 0;      // the conversion kernel's time per batch
};

LoaderRate MeasureLoader(std::shared_ptr<stoke::Dataset> data, int64_t batch, stoke::DType dtype,
                         int batches) {
  auto loader = stoke::Loader::Open(data, Options(batch, dtype));
  CheckOk(loader.status(), "Loader::Open");
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int i = 0; i < 4; ++i) {  // warm up: threads running, ring full
    stoke::Batch b = NextBatch(**loader);
    CheckOk(b.MakeStreamWait(stream), "MakeStreamWait");
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const stoke::LoaderStats before = (*loader)->stats();
  const auto t0 = Clock::now();
  uint64_t bytes = 0;
  for (int i = 0; i < batches; ++i) {
    stoke::Batch b = NextBatch(**loader);
    CheckOk(b.MakeStreamWait(stream), "MakeStreamWait");
    bytes += static_cast<uint64_t>(b.size()) * data->spec().bytes();
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const stoke::LoaderStats after = (*loader)->stats();
  LoaderRate r;
  r.delivered_gbps = bytes / seconds / 1e9;
  const stoke::ThreadStats c0 = before.stages.back().Total();
  const stoke::ThreadStats c1 = after.stages.back().Total();
  if (c1.busy_seconds > c0.busy_seconds) {
    r.copy_gbps = (c1.bytes - c0.bytes) / (c1.busy_seconds - c0.busy_seconds) / 1e9;
  }
  r.convert_ms = (after.convert_seconds - before.convert_seconds) * 1e3 / batches;
  cudaStreamDestroy(stream);
  return r;
}

// Milliseconds per step: fed by stoke (loader non-null) or on a resident batch.
double StepMs(stoke::Loader* loader, const uint8_t* resident, size_t bytes, int64_t step_ns,
              int steps, int blocks) {
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned long long* sink = nullptr;
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&sink), sizeof(unsigned long long)));
  auto step = [&] {
    if (loader == nullptr) {
      CHECK_CUDA(LaunchSpinStep(resident, bytes, step_ns, sink, blocks, stream));
      return;
    }
    stoke::Batch b = NextBatch(*loader);
    CheckOk(b.MakeStreamWait(stream), "MakeStreamWait");
    CHECK_CUDA(LaunchSpinStep(b.data<uint8_t>(), b.bytes(), step_ns, sink, blocks, stream));
  };  // released as soon as its step is queued
  for (int i = 0; i < 5; ++i) step();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) step();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / steps;
  cudaFree(sink);
  cudaStreamDestroy(stream);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<const char*> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--read-threads" && i + 1 < argc) {
      g_tuning.read_threads = std::atoi(argv[++i]);
    } else if (arg == "--ring-slots" && i + 1 < argc) {
      g_tuning.ring_slots = std::atoi(argv[++i]);
    } else {
      positional.push_back(argv[i]);
    }
  }
  const auto pos = [&](size_t k) { return k < positional.size() ? positional[k] : nullptr; };
  const int64_t batch = pos(0) ? std::atoll(pos(0)) : 256;
  const int64_t step_us = pos(1) ? std::atoll(pos(1)) : 3000;
  const int steps = pos(2) ? std::atoi(pos(2)) : 200;
  if (batch < 1 || step_us < 0 || steps < 1 || positional.size() > 3 || g_tuning.read_threads < 0 ||
      g_tuning.ring_slots < 2) {
    std::fprintf(stderr,
                 "usage: gpu_bench [BATCH] [STEP_US] [STEPS] [--read-threads N] [--ring-slots N] "
                 "(ring slots >= 2)\n");
    return 2;
  }
  if (stoke::CudaDeviceCount() == 0) {
    std::printf("gpu_bench: no CUDA device is visible; nothing to measure\n");
    return 0;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const std::vector<int64_t> shape = {3, 224, 224};
  auto data = std::make_shared<MemoryDataset>(static_cast<uint64_t>(batch) * 8, shape);
  const size_t batch_bytes = static_cast<size_t>(batch) * data->spec().bytes();
  const int threads = g_tuning.read_threads > 0
                          ? g_tuning.read_threads
                          : static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  std::printf(
      "gpu_bench: %s (%d SMs), batches of %lld x 3x224x224 uint8 = %.1f MB, %u host "
      "threads; loader: %d read threads, %d ring slots\n",
      prop.name, prop.multiProcessorCount, static_cast<long long>(batch), batch_bytes / 1e6,
      std::thread::hardware_concurrency(), threads, g_tuning.ring_slots);

  const double peak = PeakGbps(batch_bytes);
  const double copy_ms = batch_bytes / (peak * 1e9) * 1e3;
  std::printf("peak         pinned cudaMemcpyAsync H2D: %.2f GB/s (%.2f ms per batch)\n", peak,
              copy_ms);
  const double d2d = DeviceCopyGbps(batch_bytes * 3);
  std::printf("device       cudaMemcpyAsync D2D of %.1f MB: %.0f GB/s (bytes read + written)\n",
              batch_bytes * 3 / 1e6, d2d);
  const double fill_alone = HostFillGbps(*data, batch, threads, false, 0.5);
  const double fill_beside = HostFillGbps(*data, batch, threads, true, 0.5);
  std::printf(
      "host fill    %d threads memcpy samples into pinned memory: %.1f GB/s alone, "
      "%.1f GB/s beside H2D copies of it\n",
      threads, fill_alone, fill_beside);

  bool pass = true;
  void* resident = nullptr;
  CHECK_CUDA(cudaMalloc(&resident, batch_bytes * 2));  // room for a float16 batch
  CHECK_CUDA(cudaMemset(resident, 1, batch_bytes * 2));
  for (stoke::DType dtype : {stoke::DType::kUint8, stoke::DType::kFloat16}) {
    const char* name = dtype == stoke::DType::kUint8 ? "uint8" : "float16";
    // The pipeline's own rate, judged: the ring's slots are not filled.
    data->set_fill(Fill::kNone);
    const LoaderRate rate = MeasureLoader(data, batch, dtype, std::max(steps * 5, 500));
    const double ratio = rate.delivered_gbps / peak;
    std::printf(
        "pipeline %-7s delivered %.2f GB/s (%.2f of peak) %s; copy stage %.2f GB/s while busy\n",
        name, rate.delivered_gbps, ratio, ratio >= 0.9 ? "PASS" : "FAIL", rate.copy_gbps);
    pass = pass && ratio >= 0.9;
    if (dtype != stoke::DType::kUint8) {
      // Each input byte read once, each output element written once.
      const double moved = static_cast<double>(batch_bytes) * 3;
      const double gbps = rate.convert_ms > 0 ? moved / (rate.convert_ms * 1e6) : 0.0;
      std::printf(
          "convert  %-7s kernel %.3f ms per batch: %.0f GB/s (%.2f of the D2D copy rate), "
          "beside a bus copy of %.3f ms\n",
          name, rate.convert_ms, gbps, gbps / d2d, copy_ms);
    }
    // The same with the read threads copying every sample into its slot, as a
    // dataset held in pageable memory needs: that copy and the bus share the
    // host's memory bandwidth. Reported, not judged.
    data->set_fill(Fill::kMemcpy);
    const LoaderRate filled = MeasureLoader(data, batch, dtype, std::max(steps * 5, 500));
    std::printf(
        "filled   %-7s delivered %.2f GB/s (%.2f of peak); copy stage %.2f GB/s while busy "
        "(%.2f of peak)\n",
        name, filled.delivered_gbps, filled.delivered_gbps / peak, filled.copy_gbps,
        filled.copy_gbps / peak);

    auto loader = stoke::Loader::Open(data, Options(batch, dtype));
    CheckOk(loader.status(), "Loader::Open");
    const size_t out_bytes = batch_bytes * (dtype == stoke::DType::kUint8 ? 1 : 2);
    const int blocks = prop.multiProcessorCount;
    const double resident_ms = StepMs(nullptr, static_cast<const uint8_t*>(resident), out_bytes,
                                      step_us * 1000, steps, blocks);
    const double stoke_ms =
        StepMs(loader->get(), nullptr, out_bytes, step_us * 1000, steps, blocks);
    const double overlap = stoke_ms / resident_ms;
    const bool applies = step_us / 1000.0 > copy_ms;
    std::printf("overlap  %-7s step %lld us: resident %.3f ms, stoke %.3f ms per step: %.3fx %s\n",
                name, static_cast<long long>(step_us), resident_ms, stoke_ms, overlap,
                !applies ? "(step shorter than the copy: not judged)"
                         : (overlap <= 1.05 ? "PASS" : "FAIL"));
    if (applies) pass = pass && overlap <= 1.05;
  }
  cudaFree(resident);
  std::printf("gpu_bench: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}

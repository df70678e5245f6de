// gpu_bench: does stoke keep a GPU fed?
//
// On batches of BATCH samples of 3x224x224 uint8 held in host memory (so that
// storage is not the question), it measures in one run on one GPU:
//   peak:    cudaMemcpyAsync of one batch from pinned memory, repeated: the
//            bus's host-to-device rate for this transfer size;
//   loader:  a stoke loader on device cuda delivering those batches to a
//            consumer that only makes its stream wait on them: the delivered
//            rate, and the copy stage's rate while copying (bytes over the
//            copy stream's busy time), each against the peak (target >= 0.9);
//   overlap: a synthetic step that reads its batch and keeps every SM busy for
//            STEP_US, fed by stoke, against the same step on a batch already
//            resident on the GPU (target: within 5% when the step is longer
//            than a batch's copy);
// for uint8 batches and for float16 ones (uint8 over the bus, converted and
// normalised on the copy stream).
//
// usage: gpu_bench [BATCH] [STEP_US] [STEPS]   (default 256 3000 200)
// Without a visible GPU it says so and exits 0.
#include <cuda_runtime_api.h>

#include <algorithm>
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
  stoke::Status Decode(uint64_t index, std::span<const std::byte>, std::span<std::byte>,
                       int64_t* label) const override {
    *label = static_cast<int64_t>(index % 1000);
    return stoke::Status::Ok();
  }
  std::string Describe() const override {
    return "memory: " + std::to_string(samples_) + " samples of " + spec_.ToString();
  }

 private:
  uint64_t samples_;
  stoke::SampleSpec spec_;
  std::vector<std::byte> bytes_;
  std::string name_ = "<memory>";
};

// The next batch, across epoch ends.
stoke::Batch NextBatch(stoke::Loader& loader) {
  while (true) {
    auto b = loader.Next();
    CheckOk(b.status(), "Loader::Next");
    if (*b) return std::move(b).value();
  }
}

double PeakGbps(size_t bytes) {
  void* host = nullptr;
  void* device = nullptr;
  CHECK_CUDA(cudaHostAlloc(&host, bytes, cudaHostAllocPortable));
  CHECK_CUDA(cudaMalloc(&device, bytes));
  std::memset(host, 1, bytes);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, end;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&end));
  double best = 0;
  for (int round = 0; round < 4; ++round) {  // the first warms up
    constexpr int kCopies = 20;
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < kCopies; ++i) {
      CHECK_CUDA(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
    }
    CHECK_CUDA(cudaEventRecord(end, stream));
    CHECK_CUDA(cudaEventSynchronize(end));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, end));
    if (round > 0) best = std::max(best, kCopies * static_cast<double>(bytes) / (ms * 1e6));
  }
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  cudaStreamDestroy(stream);
  cudaFree(device);
  cudaFreeHost(host);
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
  o.ring_slots = 6;
  o.device_buffers = 3;
  o.read_threads = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  o.io = stoke::IoBackend::kPread;
  o.memory_budget_bytes = uint64_t{8} << 30;
  return o;
}

struct LoaderRate {
  double delivered_gbps = 0;  // uint8 bytes delivered per second of wall time
  double copy_gbps = 0;       // bytes over the copy stream's busy time
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
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 256;
  const int64_t step_us = argc > 2 ? std::atoll(argv[2]) : 3000;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 200;
  if (batch < 1 || step_us < 0 || steps < 1) {
    std::fprintf(stderr, "usage: gpu_bench [BATCH] [STEP_US] [STEPS]\n");
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
  std::printf(
      "gpu_bench: %s (%d SMs), batches of %lld x 3x224x224 uint8 = %.1f MB, %u host "
      "threads\n",
      prop.name, prop.multiProcessorCount, static_cast<long long>(batch), batch_bytes / 1e6,
      std::thread::hardware_concurrency());

  const double peak = PeakGbps(batch_bytes);
  const double copy_ms = batch_bytes / (peak * 1e9) * 1e3;
  std::printf("peak         pinned cudaMemcpyAsync H2D: %.2f GB/s (%.2f ms per batch)\n", peak,
              copy_ms);

  bool pass = true;
  void* resident = nullptr;
  CHECK_CUDA(cudaMalloc(&resident, batch_bytes * 2));  // room for a float16 batch
  CHECK_CUDA(cudaMemset(resident, 1, batch_bytes * 2));
  for (stoke::DType dtype : {stoke::DType::kUint8, stoke::DType::kFloat16}) {
    const char* name = dtype == stoke::DType::kUint8 ? "uint8" : "float16";
    const LoaderRate rate = MeasureLoader(data, batch, dtype, std::max(steps, 50));
    const double ratio = rate.copy_gbps / peak;
    std::printf(
        "loader %-7s delivered %.2f GB/s (%.2f of peak); copy stage %.2f GB/s while "
        "copying (%.2f of peak) %s\n",
        name, rate.delivered_gbps, rate.delivered_gbps / peak, rate.copy_gbps, ratio,
        ratio >= 0.9 ? "PASS" : "FAIL");
    pass = pass && ratio >= 0.9;

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
    std::printf("overlap %-7s step %lld us: resident %.3f ms, stoke %.3f ms per step: %.3fx %s\n",
                name, static_cast<long long>(step_us), resident_ms, stoke_ms, overlap,
                !applies ? "(step shorter than the copy: not judged)"
                         : (overlap <= 1.05 ? "PASS" : "FAIL"));
    if (applies) pass = pass && overlap <= 1.05;
  }
  cudaFree(resident);
  std::printf("gpu_bench: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}

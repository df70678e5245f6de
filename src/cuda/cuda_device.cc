// The CUDA device: pinned ring slots, a non-blocking copy stream, delivery
// buffers in device memory, and per buffer a "copied" event (the consumer's
// stream waits on it) and a "consumed" event (the copy stream waits on it before
// refilling the buffer). Compiled only when STOKE_WITH_CUDA is on.
#include <cuda_runtime_api.h>

#include <atomic>
#include <string>
#include <vector>

#include "cuda/convert_kernel.h"
#include "cuda/cuda_status.h"
#include "cuda/pinned_memory.h"
#include "device/device.h"
#include "util/trace.h"

namespace stoke::internal {

Status CudaError(const char* call, cudaError_t error, const char* file, int line) {
  cudaGetLastError();  // reported here; clear it
  std::string message = std::string(call) + ": " + cudaGetErrorName(error) + " (" +
                        cudaGetErrorString(error) + ") at " + file + ":" + std::to_string(line);
  switch (error) {
    case cudaErrorMemoryAllocation:
      return ResourceExhaustedError(std::move(message));
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
      return UnavailableError(std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

namespace {

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int index, HostMemory* pinned) : index_(index), pinned_(pinned) {}

  ~CudaDevice() override {
    // The engine drained the stream before this; nothing is in flight.
    cudaSetDevice(index_);
    for (Buffer& b : buffers_) {
      cudaFree(b.data);
      cudaFree(b.staging);
      cudaFree(b.labels);
      if (b.copied) cudaEventDestroy(b.copied);
      if (b.consumed) cudaEventDestroy(b.consumed);
    }
    for (Timing& t : timings_) {
      if (t.start) cudaEventDestroy(t.start);
      if (t.end) cudaEventDestroy(t.end);
    }
    if (stream_) cudaStreamDestroy(stream_);
    cudaGetLastError();
  }

  Status Init() {
    STOKE_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
    STOKE_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return Status::Ok();
  }

  DeviceSpec spec() const override { return {DeviceKind::kCuda, index_}; }
  HostMemory* slot_memory() override { return pinned_; }

  uint64_t BytesFor(int buffers, int64_t batch_size, const ConvertPlan& plan) const override {
    const uint64_t staging = plan.converts() ? plan.in_sample_bytes : 0;
    return static_cast<uint64_t>(buffers) * static_cast<uint64_t>(batch_size) *
           (plan.out_sample_bytes + staging + sizeof(int64_t));
  }

  Status Prepare(int buffers, int64_t batch_size, const ConvertPlan& plan) override {
    plan_ = plan;
    args_.channels = static_cast<int>(plan.channels);
    args_.pixels = plan.pixels;
    args_.channels_last = plan.channels_last;
    args_.half = plan.dtype == DType::kFloat16;
    args_.in_sample_bytes = plan.in_sample_bytes;
    for (int c = 0; c < args_.channels; ++c) {
      args_.scale[c] = plan.scale[c];
      args_.bias[c] = plan.bias[c];
    }
    STOKE_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
    const auto n = static_cast<size_t>(batch_size);
    buffers_.resize(static_cast<size_t>(buffers));
    for (Buffer& b : buffers_) {
      STOKE_CUDA_RETURN_IF_ERROR(cudaMalloc(&b.data, n * plan.out_sample_bytes));
      if (plan.converts()) {
        STOKE_CUDA_RETURN_IF_ERROR(cudaMalloc(&b.staging, n * plan.in_sample_bytes));
      }
      STOKE_CUDA_RETURN_IF_ERROR(cudaMalloc(&b.labels, n * sizeof(int64_t)));
      STOKE_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&b.copied, cudaEventDisableTiming));
      STOKE_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&b.consumed, cudaEventDisableTiming));
    }
    // Copies in flight never outnumber the ring's slots; twice the buffers
    // covers the usual ring. A pair reused before its copy completed goes
    // untimed (see busy_seconds).
    timings_.resize(static_cast<size_t>(2 * buffers + 8));
    for (Timing& t : timings_) {
      STOKE_CUDA_RETURN_IF_ERROR(cudaEventCreate(&t.start));
      STOKE_CUDA_RETURN_IF_ERROR(cudaEventCreate(&t.end));
    }
    return Status::Ok();
  }

  Status Enqueue(const CopyJob& job) override {
    TraceRange trace("stoke copy");
    STOKE_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
    Buffer& b = buffers_[job.buffer];
    Timing& t = timings_[next_timing_];
    Harvest(t);
    next_timing_ = (next_timing_ + 1) % timings_.size();
    const auto n = static_cast<size_t>(job.samples);
    // 1. Refill only after the buffer's last consumer has finished (on the GPU).
    STOKE_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, b.consumed, 0));
    STOKE_CUDA_RETURN_IF_ERROR(cudaEventRecord(t.start, stream_));
    // 2. Copy the slot (uint8 into the staging buffer when converting).
    void* target = plan_.converts() ? b.staging : b.data;
    STOKE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(target, job.data, n * plan_.in_sample_bytes,
                                               cudaMemcpyHostToDevice, stream_));
    STOKE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.labels, job.labels, n * sizeof(int64_t),
                                               cudaMemcpyHostToDevice, stream_));
    // 3. Convert on the copy stream.
    if (plan_.converts()) {
      STOKE_CUDA_RETURN_IF_ERROR(LaunchConvert(args_, static_cast<const uint8_t*>(b.staging),
                                               job.samples, b.data, stream_));
    }
    STOKE_CUDA_RETURN_IF_ERROR(cudaEventRecord(t.end, stream_));
    STOKE_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.copied, stream_));
    // 4. Last, so that a failure above never leaves a callback behind: the slot
    // goes back once the stream reaches here.
    STOKE_CUDA_RETURN_IF_ERROR(cudaLaunchHostFunc(stream_, job.host_done, job.arg));
    t.pending = true;
    return Status::Ok();
  }

  void* data(int buffer) const override { return buffers_[buffer].data; }
  const int64_t* labels(int buffer) const override {
    return static_cast<const int64_t*>(buffers_[buffer].labels);
  }

  Status MakeStreamWait(int buffer, CUstream_st* stream) override {
    STOKE_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, buffers_[buffer].copied, 0));
    return Status::Ok();
  }

  Status MarkConsumed(int buffer, CUstream_st* stream) override {
    STOKE_CUDA_RETURN_IF_ERROR(cudaEventRecord(buffers_[buffer].consumed, stream));
    return Status::Ok();
  }

  Status CopyToHost(int buffer, void* out, size_t bytes) override {
    STOKE_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
    STOKE_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(buffers_[buffer].copied));
    STOKE_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(out, buffers_[buffer].data, bytes, cudaMemcpyDeviceToHost));
    return Status::Ok();
  }

  Status Drain() override {
    STOKE_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
    STOKE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    for (Timing& t : timings_) Harvest(t);
    return Status::Ok();
  }

  // Counts copies whose timing events were harvested: on the engine's thread
  // when their pair comes round again, and at Drain. A pair whose copy had not
  // completed when it came round again is dropped, so this may undercount.
  double busy_seconds() const override {
    return static_cast<double>(busy_ns_.load(std::memory_order_relaxed)) * 1e-9;
  }

 private:
  struct Buffer {
    void* data = nullptr;
    void* staging = nullptr;  // converting only: the uint8 copy
    void* labels = nullptr;
    cudaEvent_t copied = nullptr;
    cudaEvent_t consumed = nullptr;
  };
  struct Timing {
    cudaEvent_t start = nullptr;
    cudaEvent_t end = nullptr;
    bool pending = false;  // recorded, not yet harvested
  };

  void Harvest(Timing& t) {
    if (!t.pending) return;
    t.pending = false;
    float ms = 0;
    if (cudaEventQuery(t.end) == cudaSuccess &&
        cudaEventElapsedTime(&ms, t.start, t.end) == cudaSuccess) {
      busy_ns_.fetch_add(static_cast<int64_t>(static_cast<double>(ms) * 1e6),
                         std::memory_order_relaxed);
    }
    cudaGetLastError();  // cudaErrorNotReady is not an error here
  }

  const int index_;
  HostMemory* const pinned_;
  cudaStream_t stream_ = nullptr;
  ConvertPlan plan_;
  KernelConvertArgs args_;
  std::vector<Buffer> buffers_;
  std::vector<Timing> timings_;  // a ring; the engine's thread only
  size_t next_timing_ = 0;
  std::atomic<int64_t> busy_ns_{0};
};

}  // namespace

StatusOr<std::unique_ptr<Device>> MakeCudaDevice(int index) {
  const int count = CudaDeviceCount();
  if (count == 0) {
    return UnavailableError("no CUDA device is visible (CUDA_VISIBLE_DEVICES, driver, or no GPU)");
  }
  if (index >= count) {
    return UnavailableError("CUDA device " + std::to_string(index) +
                            " does not exist: " + std::to_string(count) + " visible");
  }
  STOKE_ASSIGN_OR_RETURN(HostMemory * pinned, PinnedHostMemory());
  auto device = std::make_unique<CudaDevice>(index, pinned);
  STOKE_RETURN_IF_ERROR(device->Init());
  return std::unique_ptr<Device>(std::move(device));
}

}  // namespace stoke::internal

namespace stoke {

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace stoke

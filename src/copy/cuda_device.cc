// The CUDA device: pinned ring slots; a non-blocking copy stream for the bus
// and a second one for the conversion kernel, so that batch k converts while
// batch k+1 crosses the bus; delivery buffers in device memory, and per buffer
// a "copied" event (the consumer's stream waits on it) and a "consumed" event
// (the copy stream waits on it before refilling the buffer); and a completion
// thread that hands each slot back once its bus copy is done. Compiled only
// when STOKE_WITH_CUDA is on.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "copy/convert_kernel.h"
#include "copy/device.h"
#include "cuda/cuda_status.h"
#include "cuda/pinned_memory.h"
#include "util/mutex.h"
#include "util/thread_role.h"
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

// Makes `device` the calling thread's current CUDA device for its scope, and
// restores the one before: the legacy default stream (a null stream) is the
// current device's, and a batch may be released on any thread (batch.h),
// whose current device need not be the loader's.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) status_ = cudaSetDevice(device);
    if (previous_ == device) previous_ = -1;  // nothing to restore
  }
  ~CurrentDevice() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;
  cudaError_t status() const { return status_; }

 private:
  int previous_ = -1;
  cudaError_t status_ = cudaSuccess;
};

// OK, or the CUDA error of `call` (its text) at `line` of this file.
Status CudaCall(cudaError_t error, const char* call, int line) {
  return error == cudaSuccess ? Status::Ok() : CudaError(call, error, __FILE__, line);
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int index, HostMemory* pinned) : index_(index), pinned_(pinned) {}

  ~CudaDevice() override {
    // The engine drained the streams before this; nothing is in flight.
    {
      MutexLock lock(&done_mu_);
      stopping_ = true;
    }
    done_cv_.NotifyAll();
    if (completer_.joinable()) completer_.join();
    MutexLock lock(&done_mu_);  // the completer has exited: for the analysis
    cudaSetDevice(index_);
    for (Buffer& b : buffers_) {
      cudaFree(b.data);
      cudaFree(b.staging);
      cudaFree(b.labels);
      for (cudaEvent_t e : {b.staged, b.copied, b.consumed}) {
        if (e) cudaEventDestroy(e);
      }
    }
    for (Timing& t : copy_timings_.pairs) t.Destroy();
    for (Timing& t : convert_timings_.pairs) t.Destroy();
    while (!pending_.empty()) cudaEventDestroy(pending_.Pop().event);
    for (cudaEvent_t e : spare_events_) cudaEventDestroy(e);
    if (copy_stream_) cudaStreamDestroy(copy_stream_);
    if (convert_stream_) cudaStreamDestroy(convert_stream_);
    cudaGetLastError();
  }

  Status Init() {
    STOKE_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
    STOKE_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
    STOKE_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&convert_stream_, cudaStreamNonBlocking));
    completer_ = std::thread([this] {
      MarkStokeThread();
      CompleteLoop();
    });
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
        STOKE_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&b.staged, cudaEventDisableTiming));
      }
      STOKE_CUDA_RETURN_IF_ERROR(cudaMalloc(&b.labels, n * sizeof(int64_t)));
      STOKE_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&b.copied, cudaEventDisableTiming));
      STOKE_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&b.consumed, cudaEventDisableTiming));
    }
    // Copies in flight never outnumber the ring's slots; twice the buffers
    // covers the usual ring. A pair reused before its copy completed goes
    // untimed (see busy_seconds).
    STOKE_RETURN_IF_ERROR(copy_timings_.Create(2 * buffers + 8));
    if (plan.converts()) STOKE_RETURN_IF_ERROR(convert_timings_.Create(2 * buffers + 8));
    return Status::Ok();
  }

  Status Enqueue(const CopyJob& job) override {
    TraceRange trace("stoke copy");
    STOKE_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
    Buffer& b = buffers_[job.buffer];
    const auto n = static_cast<size_t>(job.samples);
    const bool converts = plan_.converts();
    // 1. Refill only after the buffer's last consumer has finished (on the GPU)
    // and, converting, after the buffer's last conversion read its staging.
    STOKE_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(copy_stream_, b.consumed, 0));
    if (converts) STOKE_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(copy_stream_, b.copied, 0));
    // 2. Copy the slot over the bus (uint8 into the staging buffer when converting).
    Timing& copy = copy_timings_.Next();
    STOKE_CUDA_RETURN_IF_ERROR(cudaEventRecord(copy.start, copy_stream_));
    STOKE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(converts ? b.staging : b.data, job.data,
                                               n * plan_.in_sample_bytes, cudaMemcpyHostToDevice,
                                               copy_stream_));
    STOKE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.labels, job.labels, n * sizeof(int64_t),
                                               cudaMemcpyHostToDevice, copy_stream_));
    STOKE_CUDA_RETURN_IF_ERROR(cudaEventRecord(copy.end, copy_stream_));
    // 3. Convert on a stream of its own, so that the next batch's copy runs over
    // the bus while this one converts.
    if (converts) {
      STOKE_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.staged, copy_stream_));
      STOKE_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(convert_stream_, b.staged, 0));
      Timing& convert = convert_timings_.Next();
      STOKE_CUDA_RETURN_IF_ERROR(cudaEventRecord(convert.start, convert_stream_));
      STOKE_CUDA_RETURN_IF_ERROR(LaunchConvert(args_, static_cast<const uint8_t*>(b.staging),
                                               job.samples, b.data, convert_stream_));
      STOKE_CUDA_RETURN_IF_ERROR(cudaEventRecord(convert.end, convert_stream_));
      STOKE_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.copied, convert_stream_));
      convert.pending = true;
    } else {
      STOKE_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.copied, copy_stream_));
    }
    copy.pending = true;
    // 4. Last, so that a failure above never leaves a completion behind: the
    // slot goes back once the bus copy is done. The completion thread waits for
    // it; a host function on the stream would hold the next copy back while it
    // ran.
    return QueueCompletion(job);
  }

  void* data(int buffer) const override { return buffers_[buffer].data; }
  const int64_t* labels(int buffer) const override {
    return static_cast<const int64_t*>(buffers_[buffer].labels);
  }

  Status MakeStreamWait(int buffer, CUstream_st* stream) override {
    const CurrentDevice device(index_);  // a null stream is this device's
    STOKE_CUDA_RETURN_IF_ERROR(device.status());
    STOKE_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, buffers_[buffer].copied, 0));
    return Status::Ok();
  }

  Status JoinStreams(int buffer, CUstream_st* into, CUstream_st* from) override {
    // The buffer's consumed event, recorded on `from` and waited on by `into`;
    // MarkConsumed then records it on `into`, after both streams' work.
    const CurrentDevice device(index_);
    STOKE_CUDA_RETURN_IF_ERROR(device.status());
    STOKE_CUDA_RETURN_IF_ERROR(cudaEventRecord(buffers_[buffer].consumed, from));
    STOKE_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(into, buffers_[buffer].consumed, 0));
    return Status::Ok();
  }

  Status MarkConsumed(int buffer, CUstream_st* stream) override {
    const CurrentDevice device(index_);  // a null stream is this device's
    STOKE_CUDA_RETURN_IF_ERROR(device.status());
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
    // Every queued completion is waited for, even after an error: the
    // completion thread calls each one's host_done (a failed device no longer
    // reads the slot), and the engine frees what host_done's argument points to
    // once Drain returns. The first error is returned after that.
    Status first = CudaCall(cudaSetDevice(index_), "cudaSetDevice", __LINE__);
    if (first.ok())
      first = CudaCall(cudaStreamSynchronize(copy_stream_), "cudaStreamSynchronize(copy_stream_)",
                       __LINE__);
    if (first.ok()) {
      first = CudaCall(cudaStreamSynchronize(convert_stream_),
                       "cudaStreamSynchronize(convert_stream_)", __LINE__);
    }
    Status completion;
    {
      MutexLock lock(&done_mu_);
      while (!pending_.empty()) done_cv_.Wait(&done_mu_);
      completion = std::exchange(completion_error_, Status::Ok());
    }
    if (!first.ok()) return first;
    copy_timings_.HarvestAll(&copy_ns_);
    convert_timings_.HarvestAll(&convert_ns_);
    return completion;
  }

  // The stage is a pipeline of the bus copy and the conversion: its busy time
  // is the busier of the two, timed by events on their streams and counted
  // when their pair comes round again or at Drain. A pair whose work had not
  // completed when it came round again is dropped, so this may undercount.
  double busy_seconds() const override {
    return static_cast<double>(std::max(copy_ns_.load(std::memory_order_relaxed),
                                        convert_ns_.load(std::memory_order_relaxed))) *
           1e-9;
  }
  double convert_seconds() const override {
    return static_cast<double>(convert_ns_.load(std::memory_order_relaxed)) * 1e-9;
  }

 private:
  struct Buffer {
    void* data = nullptr;
    void* staging = nullptr;  // converting only: the uint8 copy
    void* labels = nullptr;
    cudaEvent_t staged = nullptr;  // converting only: the staging copy is done
    cudaEvent_t copied = nullptr;  // data and labels are ready
    cudaEvent_t consumed = nullptr;
  };
  struct Timing {
    cudaEvent_t start = nullptr;
    cudaEvent_t end = nullptr;
    bool pending = false;  // recorded, not yet harvested
    void Destroy() {
      if (start) cudaEventDestroy(start);
      if (end) cudaEventDestroy(end);
    }
  };
  // A ring of event pairs timing one stream's work; the engine's thread only.
  struct Timings {
    explicit Timings(std::atomic<int64_t>* into) : total(into) {}
    std::vector<Timing> pairs;
    size_t next = 0;
    std::atomic<int64_t>* const total;

    Status Create(int count) {
      pairs.resize(static_cast<size_t>(count));
      for (Timing& t : pairs) {
        STOKE_CUDA_RETURN_IF_ERROR(cudaEventCreate(&t.start));
        STOKE_CUDA_RETURN_IF_ERROR(cudaEventCreate(&t.end));
      }
      return Status::Ok();
    }
    Timing& Next() {
      Timing& t = pairs[next];
      Harvest(t, total);
      next = (next + 1) % pairs.size();
      return t;
    }
    void HarvestAll(std::atomic<int64_t>* into) {
      for (Timing& t : pairs) Harvest(t, into);
    }
    static void Harvest(Timing& t, std::atomic<int64_t>* into) {
      if (!t.pending) return;
      t.pending = false;
      float ms = 0;
      if (cudaEventQuery(t.end) == cudaSuccess &&
          cudaEventElapsedTime(&ms, t.start, t.end) == cudaSuccess) {
        into->fetch_add(static_cast<int64_t>(static_cast<double>(ms) * 1e6),
                        std::memory_order_relaxed);
      }
      cudaGetLastError();  // cudaErrorNotReady is not an error here
    }
  };
  // A copy whose slot goes back to the loader once `event` completes.
  struct Pending {
    cudaEvent_t event = nullptr;
    void (*host_done)(void*) = nullptr;
    void* arg = nullptr;
  };

  // A FIFO of copies in flight: a ring that grows only when full (as many
  // copies as ever are in flight at once), so that steady state allocates
  // nothing, as a std::deque's blocks would.
  class PendingQueue {
   public:
    bool empty() const { return count_ == 0; }
    const Pending& front() const { return ring_[head_]; }
    void Push(const Pending& p) {
      if (count_ == ring_.size()) {
        std::vector<Pending> grown(std::max<size_t>(8, 2 * ring_.size()));
        for (size_t i = 0; i < count_; ++i) grown[i] = ring_[(head_ + i) % ring_.size()];
        ring_ = std::move(grown);
        head_ = 0;
      }
      ring_[(head_ + count_++) % ring_.size()] = p;
    }
    Pending Pop() {
      const Pending p = ring_[head_];
      head_ = (head_ + 1) % ring_.size();
      --count_;
      return p;
    }

   private:
    std::vector<Pending> ring_;
    size_t head_ = 0;
    size_t count_ = 0;
  };

  Status QueueCompletion(const CopyJob& job) {
    cudaEvent_t event = nullptr;
    {
      MutexLock lock(&done_mu_);
      if (!spare_events_.empty()) {
        event = spare_events_.back();
        spare_events_.pop_back();
      }
    }
    if (event == nullptr) {
      // Only until the pool holds as many events as copies are ever in flight.
      STOKE_CUDA_RETURN_IF_ERROR(
          cudaEventCreateWithFlags(&event, cudaEventBlockingSync | cudaEventDisableTiming));
    }
    const cudaError_t recorded = cudaEventRecord(event, copy_stream_);
    {
      MutexLock lock(&done_mu_);
      if (recorded != cudaSuccess) {
        spare_events_.push_back(event);
      } else {
        pending_.Push({event, job.host_done, job.arg});
      }
    }
    STOKE_CUDA_RETURN_IF_ERROR(recorded);
    done_cv_.NotifyAll();
    return Status::Ok();
  }

  // The completion thread: waits, in order, for each queued copy's bus
  // transfer and hands its slot back. It sleeps in cudaEventSynchronize (the
  // events block instead of spinning).
  void CompleteLoop() STOKE_EXCLUDES(done_mu_) {
    cudaSetDevice(index_);
    while (true) {
      // 1. Wait for the oldest queued copy (or for stopping, with none left).
      Pending p;
      {
        MutexLock lock(&done_mu_);
        while (!stopping_ && pending_.empty()) done_cv_.Wait(&done_mu_);
        if (pending_.empty()) return;  // stopping, nothing left
        p = pending_.front();
      }
      // 2. Wait for its transfer, without the lock, and hand its slot back.
      // Called even on a device error: the slot must go back exactly once,
      // and a failed device no longer reads it.
      const cudaError_t waited = cudaEventSynchronize(p.event);
      p.host_done(p.arg);
      // 3. Retire it: Drain waits for the queue to empty.
      {
        MutexLock lock(&done_mu_);
        if (waited != cudaSuccess && completion_error_.ok()) {
          completion_error_ =
              CudaError("cudaEventSynchronize(copy completion)", waited, __FILE__, __LINE__);
        }
        pending_.Pop();
        spare_events_.push_back(p.event);
      }
      done_cv_.NotifyAll();
    }
  }

  const int index_;
  HostMemory* const pinned_;
  cudaStream_t copy_stream_ = nullptr;     // bus copies
  cudaStream_t convert_stream_ = nullptr;  // conversions
  ConvertPlan plan_;
  KernelConvertArgs args_;
  std::vector<Buffer> buffers_;
  std::atomic<int64_t> copy_ns_{0};
  std::atomic<int64_t> convert_ns_{0};
  Timings copy_timings_{&copy_ns_};
  Timings convert_timings_{&convert_ns_};

  // The completion thread's queue (clang's -Wthread-safety checks the guards).
  Mutex done_mu_;
  CondVar done_cv_;                                  // a copy queued or retired, or stopping
  PendingQueue pending_ STOKE_GUARDED_BY(done_mu_);  // queued, in stream order
  std::vector<cudaEvent_t> spare_events_ STOKE_GUARDED_BY(done_mu_);  // events to reuse
  Status completion_error_ STOKE_GUARDED_BY(done_mu_);  // the first failed wait, for Drain
  bool stopping_ STOKE_GUARDED_BY(done_mu_) = false;
  std::thread completer_;
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

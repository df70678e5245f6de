// The host device: delivery buffers in plain memory, filled by converting on the
// copy engine's thread. Streams do not exist here: MakeStreamWait and
// MarkConsumed accept only null.
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "copy/device.h"

namespace stoke::internal {
namespace {

class HostDevice final : public Device {
 public:
  DeviceSpec spec() const override { return {}; }
  HostMemory* slot_memory() override { return AlignedHostMemory(); }

  uint64_t BytesFor(int buffers, int64_t batch_size, const ConvertPlan& plan) const override {
    return static_cast<uint64_t>(buffers) * static_cast<uint64_t>(batch_size) *
           (plan.out_sample_bytes + sizeof(int64_t));
  }

  Status Prepare(int buffers, int64_t batch_size, const ConvertPlan& plan) override {
    plan_ = plan;
    batch_size_ = batch_size;
    for (int b = 0; b < buffers; ++b) {
      STOKE_ASSIGN_OR_RETURN(HostBuffer data, HostBuffer::Allocate(AlignedHostMemory(),
                                                                   static_cast<size_t>(batch_size) *
                                                                       plan.out_sample_bytes));
      data_.push_back(std::move(data));
      labels_.emplace_back(static_cast<size_t>(batch_size));
    }
    return Status::Ok();
  }

  Status Enqueue(const CopyJob& job) override {
    const auto t0 = std::chrono::steady_clock::now();
    std::byte* out = data_[job.buffer].data();
    if (plan_.converts()) {
      ConvertOnCpu(plan_, reinterpret_cast<const uint8_t*>(job.data), job.samples, out);
      convert_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - t0)
                                .count(),
                            std::memory_order_relaxed);
    } else {
      std::memcpy(out, job.data, static_cast<size_t>(job.samples) * plan_.out_sample_bytes);
    }
    std::memcpy(labels_[job.buffer].data(), job.labels,
                static_cast<size_t>(job.samples) * sizeof(int64_t));
    busy_ns_.fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count(),
        std::memory_order_relaxed);
    job.host_done(job.arg);
    return Status::Ok();
  }

  void* data(int buffer) const override { return data_[buffer].data(); }
  const int64_t* labels(int buffer) const override { return labels_[buffer].data(); }

  // On the cpu there is nothing to wait for, whatever stream device-agnostic
  // code passes (batch.h): OK, as for unconverted batches.
  Status MakeStreamWait(int, CUstream_st*) override { return Status::Ok(); }
  Status MarkConsumed(int, CUstream_st*) override { return Status::Ok(); }
  Status CopyToHost(int buffer, void* out, size_t bytes) override {
    std::memcpy(out, data_[buffer].data(), bytes);
    return Status::Ok();
  }
  Status Drain() override { return Status::Ok(); }
  double busy_seconds() const override {
    return static_cast<double>(busy_ns_.load(std::memory_order_relaxed)) * 1e-9;
  }
  double convert_seconds() const override {
    return static_cast<double>(convert_ns_.load(std::memory_order_relaxed)) * 1e-9;
  }

 private:
  ConvertPlan plan_;
  int64_t batch_size_ = 0;
  std::vector<HostBuffer> data_;
  std::vector<std::vector<int64_t>> labels_;
  std::atomic<int64_t> busy_ns_{0};
  std::atomic<int64_t> convert_ns_{0};
};

}  // namespace

std::unique_ptr<Device> MakeHostDevice() { return std::make_unique<HostDevice>(); }

}  // namespace stoke::internal

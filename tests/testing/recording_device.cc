#include "testing/recording_device.h"

#include <cstring>

namespace stoke::testing {

uint64_t RecordingDevice::BytesFor(int buffers, int64_t batch_size,
                                   const internal::ConvertPlan& plan) const {
  return static_cast<uint64_t>(buffers) * static_cast<uint64_t>(batch_size) * plan.out_sample_bytes;
}

Status RecordingDevice::Prepare(int buffers, int64_t batch_size,
                                const internal::ConvertPlan& plan) {
  plan_ = plan;
  const auto n = static_cast<size_t>(batch_size);
  data_.assign(static_cast<size_t>(buffers), std::vector<std::byte>(n * plan.out_sample_bytes));
  labels_.assign(static_cast<size_t>(buffers), std::vector<int64_t>(n));
  filled_.assign(static_cast<size_t>(buffers), 0);
  return Status::Ok();
}

Status RecordingDevice::Enqueue(const internal::CopyJob& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!fail_next_.ok()) {
      Status s = fail_next_;
      fail_next_ = Status::Ok();
      return s;
    }
    if (filled_[job.buffer]) ++violations_;
    filled_[job.buffer] = 1;
    ++enqueued_;
    queue_.push_back(job);
  }
  cv_.notify_all();
  return Status::Ok();
}

void RecordingDevice::CompleteUpTo(int buffer) {
  // A wait on buffer b's "copied" event waits for its latest copy, and stream
  // order completes everything queued before it.
  size_t count;
  {
    std::lock_guard<std::mutex> lock(mu_);
    count = buffer < 0 ? queue_.size() : 0;
    for (size_t i = 0; i < queue_.size(); ++i) {
      if (queue_[i].buffer == buffer) count = i + 1;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    internal::CopyJob job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job = queue_.front();
      queue_.pop_front();
      // The copy reads the slot now, not at Enqueue.
      std::byte* out = data_[job.buffer].data();
      if (plan_.converts()) {
        internal::ConvertOnCpu(plan_, reinterpret_cast<const uint8_t*>(job.data), job.samples, out);
      } else {
        std::memcpy(out, job.data, static_cast<size_t>(job.samples) * plan_.out_sample_bytes);
      }
      std::memcpy(labels_[job.buffer].data(), job.labels,
                  static_cast<size_t>(job.samples) * sizeof(int64_t));
    }
    job.host_done(job.arg);
  }
}

void* RecordingDevice::data(int buffer) const {
  return const_cast<std::byte*>(data_[buffer].data());
}

const int64_t* RecordingDevice::labels(int buffer) const { return labels_[buffer].data(); }

Status RecordingDevice::MakeStreamWait(int buffer, CUstream_st*) {
  CompleteUpTo(buffer);
  return Status::Ok();
}

Status RecordingDevice::MarkConsumed(int buffer, CUstream_st* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  filled_[buffer] = 0;
  consumed_on_.push_back(stream);
  return Status::Ok();
}

Status RecordingDevice::JoinStreams(int, CUstream_st* into, CUstream_st* from) {
  std::lock_guard<std::mutex> lock(mu_);
  joins_.emplace_back(into, from);
  return Status::Ok();
}

std::vector<std::pair<CUstream_st*, CUstream_st*>> RecordingDevice::joins() const {
  std::lock_guard<std::mutex> lock(mu_);
  return joins_;
}

std::vector<CUstream_st*> RecordingDevice::consumed_on() const {
  std::lock_guard<std::mutex> lock(mu_);
  return consumed_on_;
}

Status RecordingDevice::CopyToHost(int buffer, void* out, size_t bytes) {
  CompleteUpTo(buffer);
  std::memcpy(out, data_[buffer].data(), bytes);
  return Status::Ok();
}

Status RecordingDevice::Drain() {
  CompleteUpTo(-1);
  return Status::Ok();
}

void RecordingDevice::WaitForPending(int n) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return static_cast<int>(queue_.size()) >= n; });
}

int RecordingDevice::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(queue_.size());
}

int RecordingDevice::enqueued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return enqueued_;
}

int RecordingDevice::violations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return violations_;
}

void RecordingDevice::FailNextEnqueue(Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_ = std::move(status);
}

}  // namespace stoke::testing

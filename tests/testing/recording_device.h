// A device for tests of the copy engine on machines without a GPU (STYLE.md:
// "a host-only device that records copies and events"). It behaves like a CUDA
// device whose copy stream runs only when someone waits on it:
//   - Enqueue records the job; the copy happens later, reading the slot then, so
//     a slot the loader refilled before its copy completed shows up as wrong
//     batch contents;
//   - MakeStreamWait(b) completes every queued job up to b's latest (stream
//     order), as a consumer stream waiting on b's "copied" event would;
//   - Drain completes everything;
//   - refilling a buffer whose last batch was never marked consumed is counted
//     as a violation.
// Thread safety: every method may be called from any thread.
#ifndef STOKE_TESTS_TESTING_RECORDING_DEVICE_H_
#define STOKE_TESTS_TESTING_RECORDING_DEVICE_H_

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "copy/device.h"

namespace stoke::testing {

class RecordingDevice final : public internal::Device {
 public:
  DeviceSpec spec() const override { return {DeviceKind::kCuda, 0}; }
  internal::HostMemory* slot_memory() override { return internal::AlignedHostMemory(); }
  uint64_t BytesFor(int buffers, int64_t batch_size,
                    const internal::ConvertPlan& plan) const override;
  Status Prepare(int buffers, int64_t batch_size, const internal::ConvertPlan& plan) override;
  Status Enqueue(const internal::CopyJob& job) override;
  void* data(int buffer) const override;
  const int64_t* labels(int buffer) const override;
  Status MakeStreamWait(int buffer, CUstream_st* stream) override;
  Status MarkConsumed(int buffer, CUstream_st* stream) override;
  Status JoinStreams(int buffer, CUstream_st* into, CUstream_st* from) override;
  Status CopyToHost(int buffer, void* out, size_t bytes) override;
  Status Drain() override;
  double busy_seconds() const override { return 0; }
  double convert_seconds() const override { return 0; }

  // Blocks until at least `n` copies are queued and not completed.
  void WaitForPending(int n);
  int pending() const;
  // Copies queued so far, and refills of a buffer not marked consumed.
  int enqueued() const;
  int violations() const;
  // The next Enqueue fails with `status`.
  void FailNextEnqueue(Status status);
  // JoinStreams calls as (into, from), and the stream of each MarkConsumed, in order.
  std::vector<std::pair<CUstream_st*, CUstream_st*>> joins() const;
  std::vector<CUstream_st*> consumed_on() const;

 private:
  // Completes the queued jobs up to and including the last for `buffer` (all
  // of them for -1). Takes mu_ itself; calls host_done outside it. Only one
  // thread completes jobs at a time (the consumer's, or Drain's).
  void CompleteUpTo(int buffer);

  internal::ConvertPlan plan_;
  std::vector<std::vector<std::byte>> data_;  // per buffer
  std::vector<std::vector<int64_t>> labels_;  // per buffer
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<internal::CopyJob> queue_;                       // guarded by mu_
  std::vector<char> filled_;                                  // guarded by mu_; per buffer
  int enqueued_ = 0;                                          // guarded by mu_
  int violations_ = 0;                                        // guarded by mu_
  Status fail_next_;                                          // guarded by mu_
  std::vector<std::pair<CUstream_st*, CUstream_st*>> joins_;  // guarded by mu_
  std::vector<CUstream_st*> consumed_on_;                     // guarded by mu_
};

}  // namespace stoke::testing

#endif  // STOKE_TESTS_TESTING_RECORDING_DEVICE_H_

// The device a loader delivers batches to (DESIGN.md, "Devices"): where ring
// slots are allocated, and a small ring of delivery buffers that the copy engine
// (src/copy/copy_engine.h) fills in order and the consumer reads.
//
// Implementations: the CUDA device (src/copy/cuda_device.cc: pinned slots, a
// copy stream and a conversion stream, device buffers, events, the conversion
// kernel, a completion thread) and
// the host (host_device.cc: the conversion on the CPU). Tests add a recording
// device that completes copies when told to.
//
// The protocol, for buffer b:
//   Enqueue(job for b)      wait (on the device) until b's last consumer is
//                           done, copy the slot into b, convert, then call
//                           job.host_done once the slot's memory is not needed;
//   MakeStreamWait(b, s)    stream s waits (on the device) for b's copy;
//   MarkConsumed(b, s)      b may be refilled once the work queued on s so far
//                           has finished.
// None of these blocks the host on the device; only Drain does.
//
// Thread safety: Enqueue and Drain are called by the copy engine's thread (or,
// for Drain, while it is stopped); MakeStreamWait and MarkConsumed by the
// consumer's thread. An implementation must allow the two at once.
#ifndef STOKE_SRC_COPY_DEVICE_H_
#define STOKE_SRC_COPY_DEVICE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "copy/convert.h"
#include "stoke/device.h"
#include "stoke/status.h"
#include "util/host_memory.h"

namespace stoke::internal {

struct CopyJob {
  int buffer = 0;                   // the delivery buffer to fill
  const std::byte* data = nullptr;  // the slot's samples (host memory)
  int64_t samples = 0;              // how many (<= the batch size)
  const int64_t* labels = nullptr;  // their labels (host memory)
  // Called exactly once, when the slot's memory may be reused, on any thread
  // (with CUDA the device's completion thread). Not called by Enqueue when it
  // fails.
  void (*host_done)(void* arg) = nullptr;
  void* arg = nullptr;
};

class Device {
 public:
  virtual ~Device() = default;

  virtual DeviceSpec spec() const = 0;
  // Memory for the ring's slots (pinned for CUDA). Never null.
  virtual HostMemory* slot_memory() = 0;
  // Bytes Prepare allocates, for the memory budget: device memory for CUDA.
  virtual uint64_t BytesFor(int buffers, int64_t batch_size, const ConvertPlan& plan) const = 0;
  // Allocates `buffers` delivery buffers for up to `batch_size` samples each,
  // converted by `plan`. ResourceExhausted naming the bytes; for CUDA, the CUDA
  // call and its message.
  virtual Status Prepare(int buffers, int64_t batch_size, const ConvertPlan& plan) = 0;

  // Queues `job`; see the protocol above. Never blocks on the device. An error
  // is the device's (CUDA's), and the caller treats it as sticky.
  virtual Status Enqueue(const CopyJob& job) = 0;
  // Buffer b's samples and labels: device pointers for CUDA.
  virtual void* data(int buffer) const = 0;
  virtual const int64_t* labels(int buffer) const = 0;
  virtual Status MakeStreamWait(int buffer, CUstream_st* stream) = 0;
  virtual Status MarkConsumed(int buffer, CUstream_st* stream) = 0;
  // Makes `into` wait for the work queued on `from` so far (before
  // MarkConsumed(buffer, into)). Default: nothing to join (host memory).
  virtual Status JoinStreams(int buffer, CUstream_st* into, CUstream_st* from) {
    (void)buffer, (void)into, (void)from;
    return Status::Ok();
  }

  // Waits for buffer b's latest copy to complete, then copies its first `bytes`
  // to host memory `out`: a host synchronisation, for Batch::CopyToHost.
  virtual Status CopyToHost(int buffer, void* out, size_t bytes) = 0;

  // Blocks until every queued job has completed and called host_done.
  virtual Status Drain() = 0;
  // Seconds the device spent on completed jobs so far: on the host, copying and
  // converting; for CUDA, the busier of its bus copies and its conversions,
  // which run as a pipeline on two streams (timed by events; work still in
  // flight is not counted yet). Any thread.
  virtual double busy_seconds() const = 0;
  // Of that work, seconds spent converting (the kernel, for CUDA). Any thread.
  virtual double convert_seconds() const = 0;
};

// The host: no copy; Enqueue converts on the calling thread into buffers of
// plain memory and calls host_done before it returns.
std::unique_ptr<Device> MakeHostDevice();

// The CUDA device `index`. Unavailable, naming the cause, without a CUDA build,
// without a visible GPU, or for an index past the visible devices.
StatusOr<std::unique_ptr<Device>> MakeCudaDevice(int index);

// The device `spec` names.
StatusOr<std::unique_ptr<Device>> MakeDevice(const DeviceSpec& spec);

}  // namespace stoke::internal

#endif  // STOKE_SRC_COPY_DEVICE_H_

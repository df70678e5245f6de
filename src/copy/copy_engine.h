// The copy engine (DESIGN.md, "Copy engine"): one thread that takes the ring's
// ready slots strictly in order and queues each batch on the Device into one of
// a few delivery buffers (device memory for CUDA; converted host memory on the
// CPU), then hands the buffers to the consumer in the same order.
//
//   engine thread:  1. wait for a free delivery buffer;
//                   2. take the next ready slot from the loader (blocks);
//                   3. keep the batch's labels and indices on the host, queue
//                      the copy (the device returns the slot to the loader
//                      once the copy no longer needs it);
//                   4. publish the buffer to the consumer.
//   consumer:       Next() takes published buffers in order; releasing the
//                   Batch marks the buffer consumed on the consumer's stream
//                   and frees it for step 1.
//
// The buffers follow the ring's protocol (ring/protocol.h): claimed by the
// engine in step 1, published in step 4, leased by the consumer's Batch.
//
// No step waits on the device: a buffer is refilled after its consumer's
// stream, not the host, is done with it (the device orders that), and slots
// come back through the device's host_done (with CUDA, on the device's
// completion thread, never on a driver thread).
//
// Thread safety: Next, Stop and Start on the consumer's thread; ReleaseLease
// and MakeStreamWait on any thread (through Batch); stats from any thread.
#ifndef STOKE_SRC_COPY_COPY_ENGINE_H_
#define STOKE_SRC_COPY_COPY_ENGINE_H_

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "copy/device.h"
#include "ring/protocol.h"
#include "stoke/batch.h"
#include "stoke/stats.h"
#include "util/counters.h"
#include "util/trace_log.h"

namespace stoke::internal {

// What the engine takes batches from: the loader.
class SlotSource {
 public:
  struct Taken {
    int slot = -1;
    int64_t epoch = 0;
    int64_t batch = 0;
    int64_t size = 0;
    const std::byte* data = nullptr;
    const int64_t* labels = nullptr;
    const uint64_t* indices = nullptr;
    Status error;  // the batch failed (ErrorPolicy::kFail): nothing to copy
  };
  // Blocks until the slot of the next batch in order is finished, and leases it
  // to the caller: OK with out->slot >= 0. OK with out->slot == -1 once
  // CancelTake was called (until ResumeTake). A sticky loader error otherwise.
  virtual Status TakeSlot(Taken* out) = 0;
  virtual void CancelTake() = 0;
  virtual void ResumeTake() = 0;
  // Gives a taken slot back; any thread, no CUDA calls.
  virtual void ReturnSlot(int slot) = 0;

 protected:
  ~SlotSource() = default;
};

class CopyEngine final : public SlotOwner {
 public:
  // A published buffer, for the consumer's Batch.
  struct Delivery {
    int buffer = -1;
    int64_t epoch = 0;
    int64_t batch = 0;
    int64_t size = 0;
    void* data = nullptr;                    // on the device
    const int64_t* device_labels = nullptr;  // on the device
    const int64_t* labels = nullptr;         // on the host
    const uint64_t* indices = nullptr;       // on the host
  };

  // Prepares `buffers` delivery buffers on `device` for batches of up to
  // `batch_size` samples converted by `plan`, from a ring of `ring_slots`.
  // Does not start the thread.
  static StatusOr<std::unique_ptr<CopyEngine>> Create(SlotSource* source,
                                                      std::unique_ptr<Device> device,
                                                      const ConvertPlan& plan, int buffers,
                                                      int64_t batch_size, int ring_slots,
                                                      TraceLog* trace);
  ~CopyEngine();

  // Starts the thread. Precondition: stopped.
  void Start();
  // Delivery buffers leased by live Batch objects (the consumer's).
  int leased() const { return buffers_.leased(); }
  // Stops the thread, waits for every queued copy to complete (their slots go
  // back to the source) and drops the published buffers nobody leased. Leased
  // buffers stay leased until their Batch is released. Idempotent.
  void Stop();

  // Blocks until the next buffer is published: OK with *out filled, or the
  // batch's own error (its buffer already freed), or a sticky error (the
  // loader's or the device's). ResourceExhausted when every buffer is leased.
  // Adds the time it waited to *wait_ns. DeadlineExceeded, with out->buffer
  // -1 and nothing taken, when `deadline` passes first.
  Status Next(Delivery* out, int64_t* wait_ns,
              RingProtocol::Deadline deadline = RingProtocol::Deadline::max());

  Device& device() { return *device_; }
  // The "copy" stage: batches and input bytes queued, the device's busy time,
  // and the time the engine thread waited (for a ready slot or a free buffer).
  StageStats stats() const;

  void ReleaseLease(int buffer, CUstream_st* stream) override;
  void JoinStreams(int buffer, CUstream_st* into, CUstream_st* from) override;
  Status MakeStreamWait(int buffer, CUstream_st* stream) override;
  Status CopyToHost(int buffer, void* out, size_t bytes) override;

 private:
  // A buffer's host side: written by the engine thread while it holds the
  // claim, read by the consumer while it holds the lease.
  struct Entry {
    int64_t epoch = 0;
    int64_t batch = 0;
    int64_t size = 0;
    Status error;
    std::vector<int64_t> labels;    // batch_size, fixed
    std::vector<uint64_t> indices;  // batch_size, fixed
  };
  // The argument of a slot's host_done callback; one per ring slot, since a
  // buffer may be refilled before the copy that filled it last has completed.
  struct SlotReturn {
    CopyEngine* engine = nullptr;
    int slot = 0;
  };

  CopyEngine(SlotSource* source, std::unique_ptr<Device> device, const ConvertPlan& plan,
             int buffers, int64_t batch_size, int ring_slots, TraceLog* trace);
  void Loop();
  // Step 3 of the loop: the batch of `taken` into buffer `b`.
  Status Queue(int b, const SlotSource::Taken& taken);
  static void HostDone(void* arg);

  SlotSource* const source_;
  const ConvertPlan plan_;
  TraceLog* const trace_;                 // never null; maybe disabled
  std::vector<SlotReturn> slot_returns_;  // fixed after construction

  // The buffers' states, and the engine's sticky error (the loader's or the
  // device's). Cancelled while the engine is stopped.
  RingProtocol buffers_;
  std::vector<Entry> entries_;  // one per buffer

  std::thread thread_;
  ThreadCounters counters_;  // written by the engine thread

  // Declared last, so destroyed first: its destructor joins the threads (a
  // CUDA completion thread) that may still call HostDone with a pointer into
  // slot_returns_, and they must not outlive it.
  const std::unique_ptr<Device> device_;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_COPY_COPY_ENGINE_H_

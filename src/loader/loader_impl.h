// The loader's machinery. There is no dispatcher thread: whichever thread frees
// a ticket (a run finished) or a slot (a Batch released) starts the next runs
// itself, under dispatch_mu_, so no thread has to be woken to keep the readers
// fed. Dispatching claims a free ring slot for the next batch of the plan, cuts
// the batch into runs of consecutive positions, and submits each run's reads
// as one group while tickets last.
//
//   read engine:   reads each sample's stored bytes straight into its place in
//                  the slot (samples contiguous in the file in one read), or
//                  into the run's arena buffers, or copies them from a mapping;
//                  then decodes the run inline (decode_threads == 0) or hands
//                  it over to
//   decode (D):    turns a run's stored bytes into samples in their slot.
//
// A run is the unit every queue and wake-up is paid for, so per-sample cost is
// the read and the decode themselves. Its length is samples_per_task (auto:
// about 256 KiB of stored bytes, 1 to 64 samples).
//
// The ring's slots follow its protocol (ring/protocol.h): dispatch claims a
// free slot for each batch in order, the thread that finishes a batch's last
// run publishes it, and the consumer takes published slots strictly in
// dispatch order. A slot is free again when the consumer's Batch lease is
// released.
//
// Tickets bound the work in flight: each owns one Run and its arena buffers,
// and goes back to the idle list only when the run is finished (after any
// refills, which read synchronously on the finishing thread: the error path).
// Stopping waits for every ticket to come back, which is how Seek and the
// destructor know no thread still touches the ring.
//
// Delivery: on the cpu device without conversion, Next() hands out ring slots.
// Otherwise (a CUDA device, or a conversion: LoaderOptions::output_dtype) a
// copy engine (copy_engine.h) takes finished slots in order, copies them into
// its delivery buffers and returns each slot once its copy has read it; Next()
// hands out those buffers.
//
// Lock order: dispatch_mu_, then the protocol's own lock; mu_ guards only the
// consumer's position and is taken with neither held.
#ifndef STOKE_SRC_LOADER_LOADER_IMPL_H_
#define STOKE_SRC_LOADER_LOADER_IMPL_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "copy/convert.h"
#include "copy/copy_engine.h"
#include "copy/device.h"
#include "io/arena.h"
#include "io/mapped_file.h"
#include "io/read_engine.h"
#include "loader/plan.h"
#include "loader/resolve.h"
#include "loader/sizing.h"
#include "loader/window_cache.h"
#include "ring/protocol.h"
#include "ring/ring.h"
#include "stoke/loader.h"
#include "util/counters.h"
#include "util/mutex.h"
#include "util/queue.h"
#include "util/trace_log.h"

namespace stoke {

class LoaderImpl final : public Loader,
                         public internal::SlotOwner,
                         public internal::SlotSource,
                         public internal::ReadSink,
                         public internal::WindowCache::Listener {
 public:
  // `device`: null for the one options.device names; tests pass their own.
  static StatusOr<std::unique_ptr<Loader>> Create(
      std::shared_ptr<const Dataset> dataset, const LoaderOptions& options,
      std::unique_ptr<internal::Device> device = nullptr);
  ~LoaderImpl() override;

  StatusOr<Batch> Next() override;
  StatusOr<Batch> NextFor(std::chrono::nanoseconds timeout) override;
  Status Seek(Position position) override;
  Position position() const override;
  int64_t batches_per_epoch() const override { return plan_.batches_per_epoch(); }
  int64_t samples_per_epoch() const override { return plan_.samples_per_epoch(); }
  int64_t batches_in_epoch(int64_t epoch) const override { return plan_.batches_in(epoch); }
  const Dataset& dataset() const override { return *dataset_; }
  const SampleSpec& sample_spec() const override { return convert_.out_spec; }
  const LoaderOptions& options() const override { return options_; }
  LoaderStats stats() const override;
  std::vector<TraceEvent> trace(uint64_t* dropped) const override {
    return trace_.Snapshot(dropped);
  }

  // SlotOwner: a ring slot leased by a cpu Batch.
  void ReleaseLease(int slot, CUstream_st* stream) override;
  void JoinStreams(int, CUstream_st*, CUstream_st*) override {}  // host memory: nothing
  Status MakeStreamWait(int slot, CUstream_st* stream) override;
  Status CopyToHost(int slot, void* out, size_t bytes) override;
  // SlotSource: the copy engine's side.
  Status TakeSlot(Taken* out) override;
  void CancelTake() override;
  void ResumeTake() override;
  void ReturnSlot(int slot) override { ReleaseSlot(slot); }

  void OnReadsDone(internal::ReadGroup* g) override;
  // WindowCache::Listener: a segment's windows are in memory.
  void OnWindowsReady() override { Pump(); }

 private:
  // One sample of a run.
  struct SampleTask : internal::ReadRequest {
    int64_t plan_position = 0;          // the position in the rank's epoch order it fills
    int64_t batch_position = 0;         // its place in the batch
    uint64_t sample = 0;                // the dataset index being read (after refills)
    int attempts = 0;                   // replacements tried so far
    std::span<std::byte> arena_buffer;  // empty when reads go straight to the slot
    // Too long for arena_buffer (an outlier): its decoder reads it through
    // overflow_ instead; the engines pass it by.
    bool overflow = false;
  };
  // Consecutive positions of one batch, in flight together. Owned by its ticket;
  // index == ticket. The group's requests point at `samples`.
  struct Run : internal::ReadGroup {
    int ticket = 0;
    int slot = 0;
    int64_t epoch = 0;
    int64_t batch = 0;
    int window_set = -1;              // quasi order: the window set it draws from
    int64_t submitted_ns = 0;         // tracing only
    std::vector<SampleTask> samples;  // samples_per_task_, fixed
    // To samples[0..count), in the order the reads are issued (file order when
    // PackRunBuffers runs); the group's requests.
    std::vector<internal::ReadRequest*> pointers;
  };

  LoaderImpl(std::shared_ptr<const Dataset> dataset, internal::ResolvedOptions resolved);
  // Open's steps after the constructor, in order: the conversion and the
  // device, then these.
  Status Init(std::unique_ptr<internal::Device> device);
  // Keeps a few big files open (mapping them for io = mmap or auto); returns
  // whether they are mapped.
  StatusOr<bool> OpenFiles(const SampleLocation& first, const FileOptions& file_options,
                           bool windowed);
  // Samples per task, tickets, read buffers and ring slots; resolves
  // options_'s automatic sizes (ResolveSizes).
  internal::Sizing SizeWork(const SampleLocation& first, bool mapped, bool windowed);
  // Checks the memory budget, then allocates the ring, the arena and the windows.
  Status AllocateMemory(const internal::Sizing& sizing, bool windowed, internal::Device* device,
                        const FileOptions& file_options);
  // The tickets' runs and the ring's bookkeeping.
  void MakeRuns(int tickets, const FileOptions& file_options, const SampleLocation& first);
  // The read engine, the copy engine, the decoders; then dispatching starts.
  Status StartThreads(std::unique_ptr<internal::Device> device, bool mapped, bool windowed);
  // Marks a slot free and starts work into it. Any thread.
  void ReleaseSlot(int slot);
  // At the end of the epoch, moves the position to the next one's start and
  // returns true. The consumer's thread.
  bool AtEpochEnd();
  // The position of the batch being delivered; advances it. The consumer's thread.
  Position TakePosition();
  // Next() waiting no later than `deadline`.
  StatusOr<Batch> NextUntil(internal::RingProtocol::Deadline deadline);
  // Next() for the copy engine's buffers.
  StatusOr<Batch> NextFromCopyEngine(internal::RingProtocol::Deadline deadline);
  // A batch's position, size, shape, dtype and bytes, as delivered.
  void SetShape(Batch* batch, Position at, int64_t size) const;
  // Maps the kept-open files for IoBackend::kMmap (`required`: failing to is an
  // error) or kAuto (where failing to means another backend). Returns whether
  // they are mapped.
  StatusOr<bool> MapFiles(bool required);

  // Starts dispatching from `from`.
  void StartDispatch(Position from) STOKE_EXCLUDES(dispatch_mu_);
  // Stops dispatching and waits until every ticket is back; afterwards no
  // thread touches the ring and every slot not leased is free.
  void StopDispatch() STOKE_EXCLUDES(dispatch_mu_);
  // Starts runs while there are idle tickets and slots to fill.
  void Pump() STOKE_EXCLUDES(dispatch_mu_);
  void PumpLocked() STOKE_REQUIRES(dispatch_mu_);
  // Claims a free slot for batch next_ (scheduling it for the consumer);
  // false when none is free.
  bool ClaimSlot() STOKE_REQUIRES(dispatch_mu_);
  // Points `t` (of `run`) at `sample` and prepares its read.
  void PrepareSample(const Run& run, SampleTask* t, uint64_t sample);
  // Quasi order: how many positions from next_'s, at most `want`, the next run
  // may take, and its window set in *set; 0 when the segment's windows are not
  // read yet (dispatch resumes when they are).
  int64_t AcquireWindows(int64_t want, int* set) STOKE_REQUIRES(dispatch_mu_);
  // Lays a run's arena reads out back to back.
  void PackRunBuffers(Run* run) STOKE_REQUIRES(dispatch_mu_);
  void DecodeLoop(int index);
  void DecodeAndFinish(Run* run, internal::ThreadCounters* counters);
  // Decodes one read sample into its slot; under kSkip, replaces a bad one
  // (reading the replacement here, synchronously) until one succeeds or the
  // attempts run out; records what is left as the position's error.
  void CompleteSample(Run* run, SampleTask* t);
  // Marks `t` (sample `sample` at `loc`) an outlier for the overflow buffer,
  // or fails it when even that cannot hold it.
  void DeferToOverflow(SampleTask* t, uint64_t sample, const SampleLocation& loc);
  // Reads outlier `t` into overflow_ (taking *lock, overflow_mu_, unless held).
  void ReadOverflow(SampleTask* t, std::unique_lock<std::mutex>* lock);
  // In a catch block: records the exception being handled as `t`'s error in
  // its batch (or, if even that fails, as the loader's sticky error).
  void RecordEscaped(Run* run, const SampleTask& t) noexcept;
  void Finish(Run* run) STOKE_EXCLUDES(dispatch_mu_);
  void Publish(int slot);
  // Moves a delivered batch's skipped samples into the loader's count and list.
  void AccountSkips(internal::Slot& slot);
  void SetBackgroundError(Status status) { slots_->SetError(std::move(status)); }

  const std::shared_ptr<const Dataset> dataset_;
  // As resolve.h resolved them: ResolveOptions' at construction, then
  // ResolveSizes' in SizeWork (Init's second step, before any thread starts);
  // fixed from then on. Nothing else writes them.
  LoaderOptions options_;
  // Replaced only by Seek, while dispatch is stopped (an elastic resume's split).
  internal::Plan plan_;
  const size_t sample_bytes_;
  internal::TraceLog trace_;  // empty unless options_.trace_events
  int samples_per_task_ = 1;
  bool direct_reads_ = false;      // reads go to the arena (not straight to the slot)
  bool pack_run_buffers_ = false;  // see PackRunBuffers

  std::vector<std::unique_ptr<RandomAccessFile>> files_;  // kept open, or empty
  // io = mmap (or auto, for samples inside a few big files): files_ mapped;
  // samples are copied from the mapping. Empty otherwise.
  std::vector<std::unique_ptr<internal::MappedFile>> maps_;
  std::unique_ptr<internal::Ring> ring_;
  // Who holds which slot: free, claimed by dispatch, ready, leased; the
  // schedule in batch order; the sticky background error. Declared before
  // copy_, whose Stop (in the destructor) cancels takes.
  std::unique_ptr<internal::RingProtocol> slots_;
  std::unique_ptr<internal::Arena> arena_;
  // One buffer for the samples far longer than the arena's (Dataset::
  // typical_stored_bytes); null when there are none. Used by one decode at a
  // time, under overflow_mu_: outliers are rare, and serialised.
  std::unique_ptr<internal::Arena> overflow_;
  std::mutex overflow_mu_;
  // Quasi order over stored samples: the windows being read and drawn from.
  // Null otherwise.
  internal::WindowLayout window_layout_;
  std::unique_ptr<internal::WindowCache> windows_;
  // The dataset's files are remote (RemoteFileSystem): read by the http
  // engine, never mapped. Set once at open.
  bool remote_ = false;
  std::unique_ptr<internal::ReadEngine> engine_;
  internal::ConvertPlan convert_;  // what the copy engine delivers
  // Null when batches are delivered in their ring slots.
  std::unique_ptr<internal::CopyEngine> copy_;
  std::vector<std::unique_ptr<Run>> runs_;  // one per ticket; fixed after Init

  // Dispatch state (clang's -Wthread-safety checks the guards). Both lists are
  // reserved at open, so pushes never allocate.
  internal::Mutex dispatch_mu_;
  internal::CondVar dispatch_cv_;  // StopDispatch waits for the tickets
  // Idle tickets; all of them (runs_.size()) iff no run is in flight.
  std::vector<int> idle_tickets_ STOKE_GUARDED_BY(dispatch_mu_);
  Position next_ STOKE_GUARDED_BY(dispatch_mu_);            // the batch being dispatched
  int64_t next_offset_ STOKE_GUARDED_BY(dispatch_mu_) = 0;  // its next position
  int current_slot_ STOKE_GUARDED_BY(dispatch_mu_) = -1;    // its slot, or -1
  // 0 unless dispatch waits for a free slot (since then).
  int64_t ring_full_since_ns_ STOKE_GUARDED_BY(dispatch_mu_) = 0;
  // Runs whose bytes were read, for the decode threads; null wakes one to exit.
  internal::BlockingQueue<Run*> decode_queue_;

  // Set while dispatching is being stopped: reads are skipped (Cancelled),
  // refills and decodes are not attempted, tasks just return their tickets.
  std::atomic<bool> stopping_{false};

  // Written by the consumer (Next, Seek); mu_ lets position() read it from
  // any thread.
  mutable std::mutex mu_;
  Position position_;  // guarded by mu_; the next batch Next() delivers

  std::vector<std::thread> decoders_;

  // Counters. dispatch_ is written under dispatch_mu_, decode_[i] by decoder i.
  internal::ThreadCounters dispatch_;
  std::vector<internal::ThreadCounters> decode_;
  internal::ThreadCounters decode_inline_;  // decodes on the read threads, summed
  std::atomic<uint64_t> batches_delivered_{0};
  std::atomic<uint64_t> samples_delivered_{0};
  std::atomic<int64_t> consumer_wait_ns_{0};
  // Remote data: HTTP requests the engine's reads made, and of those retries.
  std::atomic<uint64_t> http_requests_{0};
  std::atomic<uint64_t> http_retries_{0};

  mutable std::mutex skipped_mu_;
  uint64_t skipped_ = 0;  // guarded by skipped_mu_
  // Skipped samples listed in stats(), at most.
  static constexpr size_t kMaxListedSkips = 1000;
  std::vector<SkippedSample> skipped_samples_;  // guarded by skipped_mu_; at most kMaxListedSkips
};

}  // namespace stoke

#endif  // STOKE_SRC_LOADER_LOADER_IMPL_H_

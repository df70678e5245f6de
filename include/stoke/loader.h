// stoke/loader.h: the loader, stoke's front door.
//
// A Loader reads a Dataset with multi-threaded readers into a fixed ring of
// batch-sized slots, writing every sample straight into its place in its batch,
// and hands the batches out strictly in order. All memory (ring slots, read
// buffers) is allocated by Open; the steady state allocates nothing. The order of
// every epoch is a pure function of (seed, epoch, dataset size, rank, world
// size), so a saved Position resumes exactly, whatever the thread counts.
//
// Thread safety: one consumer thread calls Next/Epoch/Seek; stats() and
// position() may be called from any thread. Batches may be released anywhere.
//
//   auto dataset = stoke::OpenIdxSplit("/usr/share/datasets/fashion-mnist", "train");
//   stoke::LoaderOptions options;
//   options.batch_size = 256;
//   options.order = stoke::Order::kFullShuffle;
//   auto loader = stoke::Loader::Open(*dataset, options);
//   for (int epoch = 0; epoch < 10; ++epoch) {
//     for (stoke::Batch& batch : (*loader)->Epoch(epoch)) Train(batch);
//   }
#ifndef STOKE_LOADER_H_
#define STOKE_LOADER_H_

#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>

#include "stoke/batch.h"
#include "stoke/dataset.h"
#include "stoke/options.h"
#include "stoke/stats.h"
#include "stoke/status.h"

namespace stoke {

class EpochRange;

class Loader {
 public:
  // Validates `options` against `dataset` (InvalidArgument naming the field),
  // checks that the ring and the read arena fit memory_budget_bytes
  // (ResourceExhausted with the figures), allocates them, opens the dataset's
  // files when there are few of them, starts the threads and begins reading at
  // options.start.
  static StatusOr<std::unique_ptr<Loader>> Open(std::shared_ptr<const Dataset> dataset,
                                                const LoaderOptions& options);

  // Stops every thread and frees everything; returns promptly even with reads in
  // flight and a full ring. Precondition: no Batch of this loader is alive.
  virtual ~Loader() = default;

  // Blocks until the batch at position() is ready and returns it, then advances.
  // At the end of an epoch returns an empty Batch and moves to the next epoch's
  // first batch. Errors: the batch's first bad sample under ErrorPolicy::kFail
  // (DataLoss, NotFound, Unavailable, naming file, offset and cause; the loader
  // moves past the batch and may go on), or a sticky infrastructure error that
  // every later call returns too.
  virtual StatusOr<Batch> Next() = 0;
  // Next, waiting at most `timeout` for the batch: DeadlineExceeded when it is
  // not ready by then, with nothing consumed and the position unchanged (call
  // again to go on waiting). For a consumer that must stay responsive while
  // the loader stalls (a binding checking for Ctrl-C between waits).
  virtual StatusOr<Batch> NextFor(std::chrono::nanoseconds timeout) = 0;

  // The remaining batches of `epoch`, for a range-for: from position() if it is
  // in `epoch`, else from the epoch's first batch (seeking there). Iterating
  // throws stoke::Error, carrying the Status, where Next would return an error.
  EpochRange Epoch(int64_t epoch);

  // Moves to `position` (an epoch >= 0 and a batch within it), discarding the
  // batches read ahead. Blocks while reads in flight finish. InvalidArgument for
  // a position out of range.
  virtual Status Seek(Position position) = 0;

  // The position of the batch the next call to Next() delivers.
  virtual Position position() const = 0;

  // Batches in one epoch for this rank, and samples in one epoch for this rank.
  virtual int64_t batches_per_epoch() const = 0;
  virtual int64_t samples_per_epoch() const = 0;
  // Batches of `epoch` for this rank: batches_per_epoch(), but for the epoch an
  // elastic resume continues (a Position from another world or batch size),
  // which has what the earlier ranks left. On the consumer's thread.
  virtual int64_t batches_in_epoch(int64_t epoch) const = 0;

  virtual const Dataset& dataset() const = 0;
  // The shape and type of the samples batches deliver: the dataset's, or after
  // the conversion LoaderOptions::output_dtype asks for (channels first).
  virtual const SampleSpec& sample_spec() const = 0;
  virtual const LoaderOptions& options() const = 0;

  // A snapshot of the counters. Allocates (it returns vectors); don't call it per batch.
  virtual LoaderStats stats() const = 0;
  // The trace so far (LoaderOptions::trace_events), unordered, and how many
  // events did not fit. Empty when tracing is off. Any thread; allocates.
  virtual std::vector<TraceEvent> trace(uint64_t* dropped) const = 0;
};

// The batches of one epoch, for a range-for. Borrowed from the Loader.
class EpochRange {
 public:
  // The end of the epoch: an iterator whose batch is empty.
  struct End {};
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = Batch*;
    using reference = Batch&;

    Batch& operator*() { return batch_; }
    Batch* operator->() { return &batch_; }
    // Releases the current batch and fetches the next. Throws stoke::Error.
    Iterator& operator++();
    friend bool operator==(const Iterator& it, End) { return !it.batch_; }
    friend bool operator!=(const Iterator& it, End) { return static_cast<bool>(it.batch_); }

   private:
    friend class EpochRange;
    explicit Iterator(Loader* loader) : loader_(loader) {}
    Loader* loader_;
    Batch batch_;
  };

  // Throws stoke::Error if the first batch fails.
  Iterator begin();
  End end() { return {}; }

 private:
  friend class Loader;
  EpochRange(Loader* loader, int64_t epoch) : loader_(loader), epoch_(epoch) {}
  Loader* loader_;
  int64_t epoch_;
};

// Reads every sample of `dataset` once into memory, through a sequential loader
// with `options`' performance fields, and returns a dataset that serves them from
// there with no I/O (the in-memory wrapper). ResourceExhausted, with the figures,
// when size() x sample bytes exceeds `max_bytes`; a bad sample fails the preload
// with its error.
StatusOr<std::shared_ptr<Dataset>> Preload(std::shared_ptr<const Dataset> dataset,
                                           const LoaderOptions& options = {},
                                           uint64_t max_bytes = uint64_t{16} << 30);

}  // namespace stoke

#endif  // STOKE_LOADER_H_

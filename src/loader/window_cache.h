// The quasi-random order's reader (Order::kQuasiRandom): holds the windows of
// the segments being dispatched in memory, each read whole with one request
// per file it spans, so that slow storage reads at its sequential rate.
//
// It has kSets window sets (one being drawn from, the others being read), each
// with room for one segment's windows (at most group_windows). While the loader
// dispatches segment s, the sets hold s and the segments after it, in order
// (only the positions an epoch dispatches: drop_last's tail is never read); a
// set is refilled when dispatch has moved past its segment, every run that
// draws from it has finished and none of its windows is still being read. Its
// own threads read the windows (several in flight); samples are then served
// from memory, so the loader's runs need no I/O.
//
//   loader (dispatch, under its lock):  Start(from) → Acquire(segment) → the
//       run's samples point into the set (Find) → Release(set) when the run
//       finishes; Stop() before the loader's runs are drained.
//   window threads:  1. take a window to read; 2. read each of its pieces;
//       3. mark it read; when its set is complete, tell the loader (Listener),
//       which dispatches the runs that waited.
//
// Thread safety: every method may be called from any thread; the listener is
// called on a window thread with no lock of the cache held. Start, Acquire,
// Release and Find never block; Stop waits for the reads in flight.
#ifndef STOKE_SRC_LOADER_WINDOW_CACHE_H_
#define STOKE_SRC_LOADER_WINDOW_CACHE_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "io/arena.h"
#include "io/read_request.h"
#include "loader/plan.h"
#include "stoke/dataset.h"
#include "stoke/stats.h"
#include "util/counters.h"
#include "util/mutex.h"
#include "util/queue.h"

namespace stoke::internal {

// Where each window's bytes lie: for window w, pieces [first[w], first[w+1]),
// one contiguous byte range of one file each, laid out back to back in a
// window buffer. Computed once from the dataset's Locate.
struct WindowLayout {
  struct Piece {
    uint32_t file = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t at = 0;  // where the piece starts in the window's buffer
  };
  uint64_t window_samples = 1;
  std::vector<uint64_t> first;  // windows + 1 entries
  std::vector<Piece> pieces;
  uint64_t capacity = 0;  // the largest window's bytes
  size_t max_pieces = 0;  // the most pieces any window has

  // InvalidArgument naming the dataset when its samples are whole files.
  // `window_bytes` over the mean stored sample gives window_samples (at least
  // 1). Samples in memory get window_samples and no pieces (nothing to read).
  // With `direct` (O_DIRECT), each piece has room for its aligned read.
  static StatusOr<WindowLayout> Make(const Dataset& dataset, uint64_t window_bytes, bool direct);
  bool readable() const { return !pieces.empty(); }
};

class WindowCache {
 public:
  // Window sets: one drawn from, two being read. Two would do if every
  // segment took as long to dispatch as to read; an epoch's short last segment
  // does not, and the set after it must already be on its way.
  static constexpr int kSets = 3;

  class Listener {
   public:
    // A set's windows have all been read (or failed): runs may proceed.
    virtual void OnWindowsReady() = 0;

   protected:
    ~Listener() = default;
  };

  // Allocates kSets sets of group_windows buffers of layout.capacity bytes from
  // `memory` and starts `threads` window threads. `files`: the dataset's files
  // kept open, indexed as its Locate's file, or empty (each read opens its file).
  static StatusOr<std::unique_ptr<WindowCache>> Create(const Dataset& dataset, WindowLayout layout,
                                                       const Plan& plan,
                                                       std::span<RandomAccessFile* const> files,
                                                       FileOptions file_options, int threads,
                                                       HostMemory* memory, Listener* listener);
  // Windows a set has room for: a group's, or all the dataset's if fewer.
  static int SetWindows(const WindowLayout& layout, int group_windows);
  // Bytes Create allocates.
  static uint64_t BytesFor(const WindowLayout& layout, int group_windows);
  ~WindowCache();

  // Drops every set and starts reading the segments from rank position
  // `position` of `epoch` on. No set may be acquired.
  void Start(int64_t epoch, int64_t position);
  // Stops reading: no new reads start, and waits for those in flight (and their
  // listener calls). Acquired sets stay valid until released.
  void Stop();

  // The set holding `segment` of `epoch` once all its windows are read: it is
  // acquired (one more run draws from it). -1 when it is not read yet (the
  // listener is called when it is). Dispatch asks for segments in order; sets
  // of earlier segments are refilled once released.
  int Acquire(int64_t epoch, const Segment& segment);
  void Release(int set);
  // Sample `index`'s stored bytes in `set` (acquired): their first byte, or null
  // when its window is not in the set; *status: its window's read error.
  const std::byte* Find(int set, uint64_t index, const SampleLocation& loc, Status* status) const;

  // One entry per window thread: items = samples of the windows read, bytes =
  // bytes read, busy = reading.
  std::vector<ThreadStats> stats() const;
  uint64_t bytes() const { return arena_->bytes(); }
  // Remote data: HTTP requests the window reads made, and of those retries.
  uint64_t http_requests() const { return http_requests_.load(std::memory_order_relaxed); }
  uint64_t http_retries() const { return http_retries_.load(std::memory_order_relaxed); }

 private:
  struct Set {
    bool used = false;  // holds (epoch, ordinal)
    int64_t epoch = 0;
    int64_t ordinal = 0;
    int windows = 0;                   // window_ids[0..windows) are this set's
    int unread = 0;                    // windows not yet read
    int runs = 0;                      // runs drawing from it
    std::vector<uint64_t> window_ids;  // group_windows entries
    // Per window and piece (max_pieces each): where its bytes landed, up to
    // which file offset they are valid, and the read's error.
    struct PieceRead {
      const std::byte* start = nullptr;
      uint64_t valid_end = 0;
      Status status;
    };
    std::vector<PieceRead> reads;
  };
  struct Job {
    int set = -1;
    int window = -1;  // index within the set; -1 tells a thread to exit
  };

  WindowCache(const Dataset& dataset, WindowLayout layout, const Plan& plan,
              std::span<RandomAccessFile* const> files, FileOptions file_options,
              Listener* listener, std::unique_ptr<Arena> arena);
  // Fills free sets with the next segments.
  void FillLocked() STOKE_REQUIRES(mu_);
  // Frees `set` if dispatch has passed its segment, no run draws from it and
  // none of its windows is being read; returns whether it did.
  bool FreeIfDoneLocked(Set* set) STOKE_REQUIRES(mu_);
  void Load(int set, int64_t epoch, int64_t position) STOKE_REQUIRES(mu_);
  // Set `s` without mu_, for the two owners the protocol gives it outside the
  // lock: the window thread reading one of its windows (a queued job, until it
  // decrements unread under mu_), and runs drawing from it once every window
  // is read (acquired under mu_, until released under mu_). Nobody else
  // writes its windows' fields in those spans.
  Set& OwnedSet(int s) const STOKE_NO_THREAD_SAFETY_ANALYSIS {
    return const_cast<Set&>(sets_[static_cast<size_t>(s)]);
  }
  void ThreadLoop(int index);
  // Reads window `window` of set `s` into its buffer; records each piece.
  void ReadWindow(Set* set, int s, int window, ThreadCounters* counters);
  std::span<std::byte> WindowBuffer(int set, int window) const {
    return arena_->buffer(set * group_windows_ + window);
  }

  const Dataset& dataset_;
  const WindowLayout layout_;
  const Plan& plan_;
  std::vector<RandomAccessFile*> files_;
  const FileOptions file_options_;
  Listener* const listener_;
  const int group_windows_;       // windows per set (SetWindows)
  std::unique_ptr<Arena> arena_;  // kSets x group_windows window buffers
  BlockingQueue<Job> jobs_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> http_requests_{0};
  std::atomic<uint64_t> http_retries_{0};
  std::vector<ThreadCounters> counters_;

  mutable Mutex mu_;
  CondVar idle_cv_;  // Stop waits for in_flight_ == 0
  // Fixed count. Whole-set state under mu_; a set's window buffers and reads
  // also belong, outside it, to the owners OwnedSet names.
  std::vector<Set> sets_ STOKE_GUARDED_BY(mu_);
  bool reading_ STOKE_GUARDED_BY(mu_) = false;  // Start..Stop
  std::atomic<bool> stopping_{false};
  int in_flight_ STOKE_GUARDED_BY(mu_) = 0;          // jobs queued or being read
  int64_t load_epoch_ STOKE_GUARDED_BY(mu_) = 0;     // the next segment to read
  int64_t load_position_ STOKE_GUARDED_BY(mu_) = 0;  // its first position
  // The segment dispatch asked for last; sets of earlier segments are
  // refilled once no run draws from them.
  int64_t cursor_epoch_ STOKE_GUARDED_BY(mu_) = 0;
  int64_t cursor_ordinal_ STOKE_GUARDED_BY(mu_) = 0;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_LOADER_WINDOW_CACHE_H_

// How much work the loader keeps in flight, as a pure function of the options
// and the dataset's sample sizes: samples per task, tickets (tasks in flight),
// read buffer capacity and, with ring_slots = 0, the ring's slots. No I/O, no
// allocation; LoaderImpl::Init applies it, and tests check it case by case.
#ifndef STOKE_SRC_LOADER_SIZING_H_
#define STOKE_SRC_LOADER_SIZING_H_

#include <cstddef>
#include <cstdint>

#include "stoke/options.h"

namespace stoke::internal {

struct SizingInput {
  LoaderOptions options;      // decode_threads resolved (not -1)
  uint64_t sample_bytes = 0;  // one output sample
  // Sample 0's stored bytes (for a whole-file sample, the most it may hold),
  // and the longest any sample stores.
  uint64_t first_length = 0;
  uint64_t longest = 0;
  // Dataset::typical_stored_bytes: nonzero when a few samples are far longer
  // than the rest; the read buffers then hold this, and one overflow buffer
  // the longest.
  uint64_t typical = 0;
  bool whole_file = false;
  bool direct_reads = false;      // stored bytes are read into the arena
  bool pack_run_buffers = false;  // a run's arena reads lie back to back
  bool uring = false;             // io_uring is wanted: a deep queue
  bool remote = false;            // remote data: a queue deep enough to hide latency
};

struct Sizing {
  int samples_per_task = 1;
  int tickets = 1;                  // runs in flight
  size_t read_buffer_capacity = 0;  // per sample, when direct_reads
  size_t overflow_capacity = 0;     // the outliers' one buffer, or 0: none
  int ring_slots = 4;               // options.ring_slots, or the automatic choice
  int in_flight() const { return tickets * samples_per_task; }
};

// Automatic samples per task: about kAutoRunBytes of stored bytes (1 to 64
// samples), read buffers of at most kAutoRunBufferBytes per task; in block
// order over packed runs, as long as a block (up to 64 and 16 MiB); never more
// than a batch. Tickets: reads_in_flight's worth, else 2 per read thread, at
// least 128 samples for io_uring and 2 tasks per decode thread, within an
// automatic arena of about kAutoArenaBytes. Ring slots, when 0: the batches the
// work in flight spans plus 3 (held, ready, being claimed), at least 4, and
// above 4 within an eighth of memory_budget_bytes.
Sizing ComputeSizing(const SizingInput& in);

// Decode threads for decode_threads = -1: none when decoding is a copy; for
// compute-bound decoding (JPEG) one per core, except that with a CUDA device
// one core is left to the thread that feeds the GPU (on an H100 host with 16
// cores, 16 decode threads slowed a PyTorch ResNet-50 step beside them by 6 to
// 14%; the README gives the paired figures).
int AutoDecodeThreads(bool compute_bound, int cores, DeviceKind device);

inline constexpr uint64_t kAutoRunBytes = 256 * 1024;
inline constexpr uint64_t kAutoRunBufferBytes = 4 << 20;
inline constexpr uint64_t kAutoArenaBytes = 256 << 20;
// Samples in flight for remote data: by Little's law, 256 requests of 30 ms
// each (an object store's first-byte latency) deliver 8,500 samples/s, above
// what 2 to 8 cores decode (packed shards merge neighbours, so fewer GETs).
inline constexpr int kRemoteInFlight = 256;

}  // namespace stoke::internal

#endif  // STOKE_SRC_LOADER_SIZING_H_

// stoke/options.h: how a loader behaves and how it spends the machine.
//
// A plain struct with defaults in the declarations. Loader::Open validates it once
// and names the field that is wrong. "Behaviour" fields change which batches come
// out; "performance" fields change only how fast, never the batches.
#ifndef STOKE_OPTIONS_H_
#define STOKE_OPTIONS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stoke/dataset.h"
#include "stoke/device.h"
#include "stoke/status.h"

namespace stoke {

enum class Order {
  kSequential,   // 0, 1, 2, ... (PyTorch's shuffle=False)
  kFullShuffle,  // a fresh seeded permutation every epoch
  // Shuffled blocks of consecutive samples, shuffled inside (a short last block
  // last): near-sequential reads. On packed shards, with block_samples equal to
  // the batch size (or dividing it), each block is read with one read.
  kBlock,
  // Storage-aware quasi-random order, for data on slow storage (HDD, network
  // file systems, cold cloud disks): the dataset is cut into windows of about
  // window_bytes of consecutive records, each read whole with one request; an
  // epoch visits the windows in a seeded order, group_windows at a time, and
  // shuffles each group's samples together. Reads run at the device's
  // sequential rate; a batch mixes up to group_windows windows. Needs samples
  // that lie in large files (packed shards, tars, IDX, CIFAR); a folder of a
  // file per sample is refused at open (pack it with `stoke pack`). Ranks take
  // contiguous chunks of the order: disjoint, equal counts.
  kQuasiRandom,
};

enum class ErrorPolicy {
  kFail,  // the consumer gets the bad sample's error (file, offset, cause) at its batch
  kSkip,  // the bad sample is replaced deterministically from the epoch's plan; counted and listed
};

enum class IoBackend {
  // Samples inside large files the loader keeps open (IDX, CIFAR, packed shards,
  // tars; up to a quarter of RLIMIT_NOFILE, 64 to 4096 files)
  // whose pages are (at least 90%) in RAM at open: mmap. Otherwise io_uring
  // where the kernel allows it, else pread. Never a signal: see kMmap.
  kAuto,
  kPread,  // a pool of threads issuing blocking pread(2)
  kUring,  // io_uring through Boost.Asio's random_access_file; fails at open if unavailable
  // Map the dataset's files and copy samples from the mapping on the read
  // threads: no system call per sample; cold pages come in by page faults with
  // the kernel's read-ahead (slower than io_uring's many reads in flight on
  // cold storage). Only for datasets of byte ranges in files it keeps open; fails
  // at open otherwise, saying why. A page the file lost (truncated by another
  // process) or that the device cannot read raises SIGBUS during the copy;
  // stoke catches it there, so it is that sample's error (DataLoss naming the
  // file and offset, or Unavailable), handled by on_error. A sample on the page
  // that holds a shrunk file's new end reads zeros past it, as from any
  // mapping; pread reports it truncated instead.
  kMmap,
};

// A range [begin, end) of positions in an epoch's global order: the order of
// the whole dataset that the epoch's seed and order give, before ranks split it.
struct OrderSpan {
  int64_t begin = 0;
  int64_t end = 0;
  friend bool operator==(const OrderSpan& a, const OrderSpan& b) {
    return a.begin == b.begin && a.end == b.end;
  }
};

// How the ranks split an epoch when a Position was taken: what a loader with
// another world size or batch size needs to find the samples not yet delivered
// (elastic resume). Loader::position() fills it; it is the same on every rank
// at the same step, so any rank's copy restores the job. Empty (dataset_size
// 0) in a Position written by hand: the loader's own split of the whole epoch.
struct EpochSplit {
  // The plan it belongs to: a loader with another dataset size, seed or order
  // refuses it, naming what differs.
  int64_t dataset_size = 0;
  uint64_t seed = 0;
  Order order = Order::kSequential;
  int64_t block_samples = 0;   // kBlock's block, else 0
  int64_t window_samples = 0;  // kQuasiRandom's window and group, else 0
  int64_t group_windows = 0;
  // The split: ranks, samples per batch, whether short batches were dropped.
  int world_size = 1;
  int64_t batch_size = 0;
  bool drop_last = false;
  // The part of the epoch's global order that was split, in order; empty:
  // all of it. After an elastic resume, what the earlier ranks left: at most
  // one span per rank of each split the epoch went through.
  std::vector<OrderSpan> spans{};
  friend bool operator==(const EpochSplit& a, const EpochSplit& b) {
    return a.dataset_size == b.dataset_size && a.seed == b.seed && a.order == b.order &&
           a.block_samples == b.block_samples && a.window_samples == b.window_samples &&
           a.group_windows == b.group_windows && a.world_size == b.world_size &&
           a.batch_size == b.batch_size && a.drop_last == b.drop_last && a.spans == b.spans;
  }
};

// Where the loader is in its stream: the next batch Next() delivers is batch
// `batch` of epoch `epoch` (of `split`). Saving it and seeking back to it
// resumes exactly. Given to a loader with another world_size, rank or
// batch_size (the same dataset, seed and order), it continues the epoch:
// together the new ranks deliver each sample of the epoch that the old ones had
// not, once, and then only the padding that equal batch counts need (the
// remaining order's first samples again, as at the end of any epoch); with
// drop_last, up to world_size * batch_size - 1 of the remaining samples are
// dropped instead. The following epochs are as any epoch of the new loader.
// The batch count assumes every rank took `batch` batches (a synchronous job).
struct Position {
  Position() = default;
  Position(int64_t epoch_, int64_t batch_, EpochSplit split_ = {})  // NOLINT: {epoch, batch}
      : epoch(epoch_), batch(batch_), split(std::move(split_)) {}
  int64_t epoch = 0;
  int64_t batch = 0;
  EpochSplit split;
  // The same epoch and batch (as loader->position() == Position{e, 0} asks);
  // `split == other.split` tells whether they count in the same split.
  friend bool operator==(const Position& a, const Position& b) {
    return a.epoch == b.epoch && a.batch == b.batch;
  }
  friend bool operator!=(const Position& a, const Position& b) { return !(a == b); }
};

// A Position as one line of text, to keep beside a checkpoint: "stoke-position
// 1 epoch=E batch=B size=N seed=S order=full ... spans=A-B,C-D".
std::string PositionToText(const Position& position);
// The Position a PositionToText line holds; InvalidArgument naming the field
// that is missing or malformed.
StatusOr<Position> ParsePosition(std::string_view text);

struct LoaderOptions {
  // ---- Behaviour: these decide the batches. ----

  // Samples per batch. Default 32.
  int64_t batch_size = 32;
  // Sample order. Default sequential, as PyTorch's DataLoader.
  Order order = Order::kSequential;
  // Seed of the shuffles (and, later, of augmentations). Default 0.
  uint64_t seed = 0;
  // kBlock only: consecutive samples per block. Larger blocks read more
  // sequentially and shuffle less. Default 256.
  int64_t block_samples = 256;
  // kQuasiRandom only: about how many bytes of consecutive records a window
  // holds (read with one request each; its sample count is this over the
  // dataset's mean stored sample). Larger windows read closer to the device's
  // sequential rate (an 8 ms seek per window takes 13% of the time against
  // 8 MiB at 160 MB/s, 38% against 2 MiB, by arithmetic) and mix less.
  // Default 8 MiB.
  uint64_t window_bytes = uint64_t{8} << 20;
  // kQuasiRandom only: windows whose samples are shuffled together: a batch
  // draws from up to this many. The loader holds three groups in memory (one
  // drawn from, two being read): 3 x group_windows x window_bytes of the memory
  // budget. A larger group mixes more and waits longer for its first batch
  // (group_windows x window_bytes read before it). Default 8.
  int group_windows = 8;
  // Drop an epoch's last batch when it is short. Default false, as in PyTorch.
  bool drop_last = false;
  // Sharding, with DistributedSampler's semantics: each rank takes every
  // world_size-th sample of the epoch's order; without drop_last the order is
  // padded by wrapping so every rank has the same number of samples and batches.
  int rank = 0;
  int world_size = 1;
  // What a bad sample (missing, truncated, corrupt, unreadable) does. Default fail.
  ErrorPolicy on_error = ErrorPolicy::kFail;
  // kSkip only: consecutive replacement candidates tried for one position before
  // the batch fails with DataLoss. Default 64.
  int max_refill_attempts = 64;
  // Where to start: resume a saved Position. Default (0, 0).
  Position start{};
  // Read every sample's stored bytes into RAM once, at open, and serve them from
  // there (decoding as before, so augmentations still vary by epoch): for data
  // that fits in memory but lives on slow storage. Open fails with
  // ResourceExhausted naming preload_max_bytes when it does not fit. Default false.
  bool preload = false;
  uint64_t preload_max_bytes = uint64_t{8} << 30;  // default 8 GiB
  // Where batches are delivered. kCpu: in the ring's slots, as read and decoded.
  // kCuda: a copy engine copies each batch on its own CUDA stream into one of
  // device_buffers device buffers; the ring's slots are then pinned. Open fails
  // with Unavailable, naming the cause, without a CUDA build or that GPU.
  // Default cpu.
  DeviceSpec device{};
  // Element type of the delivered samples. kUint8 (default): as decoded. kFloat16
  // or kFloat32: each uint8 sample becomes (x / 255 - mean[c]) / std[c], as
  // torchvision's ToTensor + Normalize, with channels first (an HWC image
  // becomes CHW). On a CUDA device this runs on the GPU after the copy, so uint8
  // crosses the bus (4x fewer bytes than float32); on the CPU the copy engine's
  // thread does it, into buffers of its own.
  DType output_dtype = DType::kUint8;
  // Per-channel mean and standard deviation on the 0..1 scale: empty (0 and 1),
  // one value for every channel, or one per channel. Needs a float output_dtype.
  // ImageNet's: {0.485, 0.456, 0.406} and {0.229, 0.224, 0.225}.
  std::vector<float> normalize_mean{};
  std::vector<float> normalize_std{};

  // ---- Performance: these never change the batches. ----

  // Batches the ring holds (being filled or waiting for the consumer). More slots
  // absorb more jitter and cost batch_size x sample bytes each. 0 (auto): the
  // batches the work in flight spans (reads_in_flight, at least 2 tasks per
  // decode thread) plus 3 (held, ready, being claimed), at least 4; above 4,
  // within an eighth of memory_budget_bytes. Loader::options() shows the
  // choice. Default 0; min 2 otherwise.
  int ring_slots = 0;
  // pread backend: threads issuing reads (= reads in flight). Raise for
  // high-latency storage (HDD arrays, network file systems). Default 4.
  int read_threads = 4;
  // Samples being read or decoded at once (rounded up to whole tasks), and read
  // buffers in the arena. 0: automatic: 2 tasks per read thread, at least 128
  // samples for io_uring, and at least 2 tasks per decode thread. Default 0.
  int reads_in_flight = 0;
  // Consecutive samples of a batch that one reader or decoder takes at once, so
  // that queueing costs are paid per task, not per sample; samples adjacent in
  // one file are read with one read. 0: automatic, about 256 KiB of stored bytes
  // (1 to 64 samples). Default 0.
  int samples_per_task = 0;
  // Threads that turn stored bytes into samples. 0: on the reader threads,
  // which is right for raw formats (IDX, CIFAR, tensors) whose decode is a copy.
  // -1 (auto): for datasets whose decoding is compute-bound (JPEG images), one
  // per core, or with a CUDA device one per core but one, left to the thread
  // that feeds the GPU; else 0. Default -1.
  int decode_threads = -1;
  // Read backend. Default auto.
  IoBackend io = IoBackend::kAuto;
  // Open files with O_DIRECT: bypasses the page cache for honest cold reads, at
  // the cost of aligned reads into the arena and one extra copy. Default false.
  bool direct_io = false;
  // Allocate the ring's slots in page-locked memory (cudaHostAlloc, portable), as
  // PyTorch's pin_memory: batches then copy to a GPU asynchronously at full PCIe
  // speed. Needs a CUDA build and a visible GPU; Open fails naming the cause
  // otherwise. Default false.
  bool pin_memory = false;
  // Device (or converted-batch) buffers the copy engine cycles through: how many
  // batches may be copied ahead of or held by the consumer. At least 2, so that
  // one batch is copied while the step reads the previous one. Each costs
  // batch_size x delivered sample bytes of device memory. Default 2.
  int device_buffers = 2;
  // Trace events the loader keeps for Loader::trace() (spans of every read,
  // decode and copy, the consumer's waits, ring occupancy), 48 bytes each,
  // allocated at open; later events are dropped and counted. 0: no trace.
  // Default 0.
  uint64_t trace_events = 0;
  // Ceiling on ring + read arena bytes, checked at open. Default 1 GiB.
  uint64_t memory_budget_bytes = uint64_t{1} << 30;
};

std::string_view OrderName(Order order);
std::string_view IoBackendName(IoBackend io);

}  // namespace stoke

#endif  // STOKE_OPTIONS_H_

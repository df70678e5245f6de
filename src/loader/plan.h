// The sample plan: which dataset index sits at each position of each epoch, for
// one rank. A pure function of (seed, epoch, dataset size, order, rank, world
// size); nothing is stored per epoch, any position is computed in O(1), so the
// loader's position is just (epoch, batch) and resume is exact.
//
// The shuffles are keyed Feistel permutations with cycle walking: a bijection on
// [0, n) for each (seed, epoch), evaluated pointwise. Thread-safe (const).
//
// Quasi-random order: the dataset is cut into windows of window_samples
// consecutive samples; each epoch visits the windows in a seeded order, short
// last window last, and takes them group_windows at a time; a group's samples
// are shuffled together, so a batch mixes up to group_windows windows while the
// loader reads each window whole. Ranks take contiguous chunks of that global
// order (padded by wrapping, as DistributedSampler pads), so each rank reads
// its own windows: disjoint samples, equal counts, for any world size.
//
// Elastic resume: every order is first a global order of the epoch (a function
// of the seed and the epoch alone); ranks split a sequence of its positions,
// interleaved (position p of rank r is element p * world + r) or, in quasi
// order, in contiguous chunks. Normally the sequence is the whole order. After
// a restart with another world or batch size, the resumed epoch's sequence is
// the spans of the order that the earlier split left undelivered (Remaining),
// so its ranks deliver exactly those, each once, plus the padding that equal
// counts need (the sequence's first elements again).
#ifndef STOKE_SRC_LOADER_PLAN_H_
#define STOKE_SRC_LOADER_PLAN_H_

#include <cstdint>
#include <vector>

#include "stoke/options.h"

namespace stoke::internal {

// A seeded bijection on [0, n).
class Permutation {
 public:
  Permutation() = default;
  Permutation(uint64_t n, uint64_t key);
  uint64_t operator()(uint64_t i) const;
  uint64_t size() const { return n_; }

 private:
  uint64_t Feistel(uint64_t x) const;
  uint64_t n_ = 0;
  uint64_t key_ = 0;
  int half_bits_ = 0;
  uint64_t half_mask_ = 0;
};

struct PlanConfig {
  uint64_t dataset_size = 0;
  Order order = Order::kSequential;
  uint64_t seed = 0;
  uint64_t block_samples = 256;
  int64_t batch_size = 1;
  bool drop_last = false;
  int rank = 0;
  int world_size = 1;
  // kQuasiRandom: consecutive samples per window (the last window may be
  // shorter), and windows whose samples are shuffled together (a group).
  uint64_t window_samples = 1;
  uint64_t group_windows = 1;
  // Elastic resume: epoch `split_epoch` splits these spans of its global order
  // (in order, disjoint, inside [0, dataset_size); empty: nothing is left)
  // instead of the whole order. -1: every epoch splits the whole order.
  int64_t split_epoch = -1;
  std::vector<OrderSpan> spans{};
};

// kQuasiRandom's unit of residency: the samples of one rank's epoch that come
// from one group of windows, as a range of rank positions. Its ordinal counts
// the segments of the epoch from 0; the loader holds a segment's windows in
// memory while its positions are dispatched.
struct Segment {
  int64_t ordinal = 0;
  int64_t begin = 0;  // first rank position
  int64_t end = 0;    // one past the last
};

class Plan {
 public:
  // Preconditions (validated by the loader): dataset_size > 0, batch_size > 0,
  // 0 <= rank < world_size, block_samples > 0; spans as PlanConfig says.
  explicit Plan(const PlanConfig& config);

  // An ordinary epoch (any but split_epoch): samples this rank sees, and its
  // batches (the last may be short unless drop_last). At least one batch is
  // the loader's rule, checked at open.
  int64_t samples_per_epoch() const { return whole_.per_rank; }
  int64_t batches_per_epoch() const { return whole_.batches; }
  // The same for `epoch`, which may be the split epoch (then possibly 0).
  int64_t samples_in(int64_t epoch) const { return Shape(epoch).per_rank; }
  int64_t batches_in(int64_t epoch) const { return Shape(epoch).batches; }
  // Rank positions of `epoch` that batches deliver (all but drop_last's tail).
  int64_t delivered_in(int64_t epoch) const;
  // Samples in batch `batch` (< batches_in(epoch)) of `epoch`.
  int64_t batch_size(int64_t epoch, int64_t batch) const;

  // The dataset index at this rank's position `position` (< samples_in(epoch)) of `epoch`.
  uint64_t SampleAt(int64_t epoch, int64_t position) const;
  // on_error = kSkip's replacement number `attempt` (>= 1) for the sample at
  // `position`: the sample `attempt` places later in the epoch's global order,
  // so that the choice depends on the sample, not on the world size.
  uint64_t RefillAt(int64_t epoch, int64_t position, int attempt) const;

  // kQuasiRandom only: the segment holding rank position `position` (<
  // samples_in(epoch)) of `epoch`; O(1), or O(log spans) in the split epoch.
  Segment SegmentAt(int64_t epoch, int64_t position) const;
  // The window (of window_samples consecutive samples) sample `index` lies in.
  uint64_t WindowOf(uint64_t index) const { return index / config_.window_samples; }
  const PlanConfig& config() const { return config_; }

  // The spans of `epoch`'s global order that no rank has delivered once each
  // rank delivered its first `delivered` positions (<= samples_in(epoch)): in
  // order, merged where they touch. What a restarted job's split is cut from.
  std::vector<OrderSpan> Remaining(int64_t epoch, int64_t delivered) const;

 private:
  struct EpochShape {
    uint64_t total = 0;    // length of the sequence the ranks split
    int64_t per_rank = 0;  // positions per rank
    int64_t batches = 0;
  };
  EpochShape MakeShape(uint64_t total) const;
  const EpochShape& Shape(int64_t epoch) const {
    return epoch == config_.split_epoch ? split_ : whole_;
  }
  // The element of the split sequence at this rank's position `position`.
  uint64_t SequenceIndex(const EpochShape& shape, int64_t position) const;
  // The split epoch's span that holds element `i` of its sequence.
  size_t SpanIndex(uint64_t i) const;
  // The global position of element `i` of `epoch`'s split sequence.
  uint64_t ToGlobal(int64_t epoch, uint64_t i) const;
  // The dataset index at global position `g` (< dataset size) of `epoch`.
  uint64_t GlobalAt(int64_t epoch, uint64_t g) const;
  uint64_t BlockAt(uint64_t epoch_key, uint64_t g) const;
  uint64_t QuasiAt(uint64_t epoch_key, uint64_t g) const;
  Segment WholeSegmentAt(int64_t position) const;
  Segment SplitSegmentAt(int64_t position) const;

  PlanConfig config_;
  EpochShape whole_;
  EpochShape split_;
  // prefix_[j]: elements of the split sequence before spans[j]; then the total.
  std::vector<uint64_t> prefix_;
};

// A 64-bit mixer (splitmix64's finaliser): the hash behind every seeded choice.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace stoke::internal

#endif  // STOKE_SRC_LOADER_PLAN_H_

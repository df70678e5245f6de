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
#ifndef STOKE_SRC_LOADER_PLAN_H_
#define STOKE_SRC_LOADER_PLAN_H_

#include <cstdint>

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
  // 0 <= rank < world_size, block_samples > 0.
  explicit Plan(const PlanConfig& config);

  // Samples this rank sees per epoch, and batches (the last may be short unless drop_last).
  int64_t samples_per_epoch() const { return samples_per_rank_; }
  int64_t batches_per_epoch() const { return batches_; }
  // Samples in batch `batch` (< batches_per_epoch()).
  int64_t batch_size(int64_t batch) const;

  // The dataset index at this rank's position `position` (< samples_per_epoch()) of `epoch`.
  uint64_t SampleAt(int64_t epoch, int64_t position) const;

  // kQuasiRandom only: the segment holding rank position `position` (<
  // samples_per_epoch()). The same for every epoch; O(1).
  Segment SegmentAt(int64_t position) const;
  // The window (of window_samples consecutive samples) sample `index` lies in.
  uint64_t WindowOf(uint64_t index) const { return index / config_.window_samples; }
  const PlanConfig& config() const { return config_; }

 private:
  // The dataset index at global position `g` (< dataset size) of `epoch`.
  uint64_t GlobalAt(int64_t epoch, uint64_t g) const;
  uint64_t BlockAt(uint64_t epoch_key, uint64_t g) const;
  uint64_t QuasiAt(uint64_t epoch_key, uint64_t g) const;
  // The global position of this rank's position `position`.
  uint64_t GlobalPosition(int64_t position) const;

  PlanConfig config_;
  int64_t samples_per_rank_ = 0;
  int64_t batches_ = 0;
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

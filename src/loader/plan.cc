#include "loader/plan.h"

#include <algorithm>
#include <cassert>

namespace stoke::internal {

Permutation::Permutation(uint64_t n, uint64_t key) : n_(n), key_(Mix64(key)) {
  int bits = 2;
  while (bits < 64 && (uint64_t{1} << bits) < n) ++bits;
  if (bits % 2) ++bits;
  half_bits_ = bits / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
}

uint64_t Permutation::Feistel(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (uint64_t round = 0; round < 6; ++round) {
    const uint64_t f = Mix64(right ^ (key_ + round * 0x632be59bd9b4e019ull)) & half_mask_;
    const uint64_t next = left ^ f;
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t Permutation::operator()(uint64_t i) const {
  assert(i < n_);
  if (n_ <= 1) return i;
  // Cycle walking: the Feistel network permutes [0, 4^half_bits); values outside
  // [0, n) are mapped again until they land inside, which keeps it a bijection.
  uint64_t x = Feistel(i);
  while (x >= n_) x = Feistel(x);
  return x;
}

Plan::Plan(const PlanConfig& config) : config_(config) {
  assert(config.dataset_size > 0 && config.batch_size > 0 && config.world_size > 0);
  assert(config.window_samples > 0 && config.group_windows > 0);
  whole_ = MakeShape(config.dataset_size);
  if (config.split_epoch >= 0) {
    prefix_.reserve(config.spans.size() + 1);
    uint64_t total = 0;
    for (const OrderSpan& span : config.spans) {
      assert(span.begin >= 0 && span.end > span.begin &&
             static_cast<uint64_t>(span.end) <= config.dataset_size);
      prefix_.push_back(total);
      total += static_cast<uint64_t>(span.end - span.begin);
    }
    prefix_.push_back(total);
    split_ = MakeShape(total);
  }
}

Plan::EpochShape Plan::MakeShape(uint64_t total) const {
  EpochShape shape;
  shape.total = total;
  const auto n = static_cast<int64_t>(total);
  const int64_t world = config_.world_size;
  // DistributedSampler: without drop_last pad to a multiple of the world size by
  // wrapping around; with it, truncate to one.
  shape.per_rank = config_.drop_last ? n / world : (n + world - 1) / world;
  shape.batches = config_.drop_last
                      ? shape.per_rank / config_.batch_size
                      : (shape.per_rank + config_.batch_size - 1) / config_.batch_size;
  return shape;
}

int64_t Plan::delivered_in(int64_t epoch) const {
  const EpochShape& shape = Shape(epoch);
  return std::min(shape.per_rank, shape.batches * config_.batch_size);
}

int64_t Plan::batch_size(int64_t epoch, int64_t batch) const {
  const int64_t start = batch * config_.batch_size;
  const int64_t left = Shape(epoch).per_rank - start;
  return left < config_.batch_size ? left : config_.batch_size;
}

uint64_t Plan::GlobalAt(int64_t epoch, uint64_t g) const {
  const uint64_t epoch_key = Mix64(config_.seed ^ Mix64(static_cast<uint64_t>(epoch) + 1));
  switch (config_.order) {
    case Order::kSequential:
      return g;
    case Order::kFullShuffle:
      return Permutation(config_.dataset_size, epoch_key)(g);
    case Order::kBlock:
      return BlockAt(epoch_key, g);
    case Order::kQuasiRandom:
      return QuasiAt(epoch_key, g);
  }
  return g;
}

uint64_t Plan::BlockAt(uint64_t epoch_key, uint64_t g) const {
  // Blocks of `block` consecutive samples are visited in a seeded order and
  // each is permuted inside. The full blocks follow a permutation; a short
  // last block, if any, comes last, so that every other block starts at a
  // multiple of `block` positions: with a batch size that `block` divides,
  // each batch (and the loader's run) holds whole blocks, which a reader
  // of packed records reads with one read each.
  const uint64_t n = config_.dataset_size;
  const uint64_t block = config_.block_samples;
  const uint64_t blocks = (n + block - 1) / block;
  const uint64_t last_size = n - (blocks - 1) * block;
  const bool has_short = last_size != block;
  const uint64_t full_blocks = has_short ? blocks - 1 : blocks;
  const uint64_t short_at = has_short ? blocks - 1 : blocks;
  uint64_t slot;
  uint64_t within;
  if (g < short_at * block) {
    slot = g / block;
    within = g % block;
  } else if (g < short_at * block + last_size) {
    slot = short_at;
    within = g - short_at * block;
  } else {
    const uint64_t rest = g - short_at * block - last_size;
    slot = short_at + 1 + rest / block;
    within = rest % block;
  }
  const bool is_short = slot == short_at;
  const uint64_t which =
      is_short ? blocks - 1
               : Permutation(full_blocks, epoch_key)(slot < short_at ? slot : slot - 1);
  const uint64_t size = is_short ? last_size : block;
  return which * block + Permutation(size, epoch_key ^ Mix64(which))(within);
}

uint64_t Plan::QuasiAt(uint64_t epoch_key, uint64_t g) const {
  // Window order: the full windows permuted, then the short last one. Group j
  // is windows [jW, (j+1)W) of that order: jWk samples come before it, all of
  // full windows, so only the last group is short, and only its last window.
  const uint64_t n = config_.dataset_size;
  const uint64_t k = config_.window_samples;
  const uint64_t group = config_.group_windows * k;
  const uint64_t windows = (n + k - 1) / k;
  const uint64_t full_windows = n % k == 0 ? windows : windows - 1;
  const uint64_t j = g / group;
  const uint64_t size = std::min(group, n - j * group);
  const uint64_t p = Permutation(size, epoch_key ^ Mix64(~j))(g - j * group);
  const uint64_t slot = j * config_.group_windows + p / k;
  const uint64_t window = slot < full_windows ? Permutation(full_windows, epoch_key)(slot) : slot;
  return window * k + p % k;
}

uint64_t Plan::SequenceIndex(const EpochShape& shape, int64_t position) const {
  const uint64_t n = shape.total;
  const auto p = static_cast<uint64_t>(position);
  if (config_.order == Order::kQuasiRandom) {
    // A contiguous chunk of the sequence per rank, so that ranks read
    // disjoint windows; padding wraps to the start of the sequence.
    return (static_cast<uint64_t>(config_.rank) * static_cast<uint64_t>(shape.per_rank) + p) % n;
  }
  // Padding wraps to the start of the sequence, as often as it takes (a world
  // larger than the sequence wraps more than once), as DistributedSampler
  // repeats its indices.
  return (p * static_cast<uint64_t>(config_.world_size) + static_cast<uint64_t>(config_.rank)) % n;
}

size_t Plan::SpanIndex(uint64_t i) const {
  // The last span whose prefix is <= i.
  return static_cast<size_t>(std::upper_bound(prefix_.begin(), prefix_.end() - 1, i) -
                             prefix_.begin()) -
         1;
}

uint64_t Plan::ToGlobal(int64_t epoch, uint64_t i) const {
  if (epoch != config_.split_epoch) return i;
  const size_t j = SpanIndex(i);
  return static_cast<uint64_t>(config_.spans[j].begin) + (i - prefix_[j]);
}

Segment Plan::SegmentAt(int64_t epoch, int64_t position) const {
  assert(config_.order == Order::kQuasiRandom);
  assert(position >= 0 && position < samples_in(epoch));
  return epoch == config_.split_epoch ? SplitSegmentAt(position) : WholeSegmentAt(position);
}

Segment Plan::WholeSegmentAt(int64_t position) const {
  const int64_t per_rank = whole_.per_rank;
  const uint64_t n = config_.dataset_size;
  const uint64_t group = config_.group_windows * config_.window_samples;
  const uint64_t groups = (n + group - 1) / group;
  const uint64_t base = static_cast<uint64_t>(config_.rank) * per_rank % n;
  const auto p = static_cast<uint64_t>(position);
  // Positions [0, n - base) precede the wrap; the chunk is shorter than n.
  const uint64_t before_wrap = n - base;
  Segment s;
  if (p < before_wrap) {
    const uint64_t g = base + p;
    s.ordinal = static_cast<int64_t>(g / group - base / group);
    s.begin = static_cast<int64_t>(std::max(g / group * group, base) - base);
    s.end = static_cast<int64_t>(std::min((g / group + 1) * group, n) - base);
  } else {
    const uint64_t g = p - before_wrap;
    s.ordinal = static_cast<int64_t>(groups - base / group + g / group);
    s.begin = static_cast<int64_t>(before_wrap + g / group * group);
    s.end = static_cast<int64_t>(before_wrap + std::min((g / group + 1) * group, n));
  }
  s.end = std::min<int64_t>(s.end, per_rank);
  return s;
}

Segment Plan::SplitSegmentAt(int64_t position) const {
  // The run of positions around `position` whose global positions lie in one
  // span and one group: contiguous in the sequence, so in this rank's chunk.
  const uint64_t group = config_.group_windows * config_.window_samples;
  const uint64_t i = SequenceIndex(split_, position);
  const size_t j = SpanIndex(i);
  const uint64_t g = static_cast<uint64_t>(config_.spans[j].begin) + (i - prefix_[j]);
  const uint64_t group_begin = g / group * group;
  const uint64_t before = std::min(i - prefix_[j], g - group_begin);  // elements before i
  const uint64_t after = std::min(prefix_[j + 1] - i, group_begin + group - g);  // i and after
  Segment s;
  s.begin = std::max<int64_t>(0, position - static_cast<int64_t>(before));
  s.end = std::min<int64_t>(split_.per_rank, position + static_cast<int64_t>(after));
  s.ordinal = s.begin;  // increasing along the epoch, as the window cache needs
  return s;
}

uint64_t Plan::SampleAt(int64_t epoch, int64_t position) const {
  assert(position >= 0 && position < samples_in(epoch));
  return GlobalAt(epoch, ToGlobal(epoch, SequenceIndex(Shape(epoch), position)));
}

uint64_t Plan::RefillAt(int64_t epoch, int64_t position, int attempt) const {
  const uint64_t g = ToGlobal(epoch, SequenceIndex(Shape(epoch), position));
  return GlobalAt(epoch, (g + static_cast<uint64_t>(attempt)) % config_.dataset_size);
}

std::vector<OrderSpan> Plan::Remaining(int64_t epoch, int64_t delivered) const {
  const EpochShape& shape = Shape(epoch);
  assert(delivered >= 0 && delivered <= shape.per_rank);
  const uint64_t n = shape.total;
  const auto c = static_cast<uint64_t>(delivered);
  const auto world = static_cast<uint64_t>(config_.world_size);
  // The delivered elements of the sequence, as ranges [a, b) of it.
  std::vector<std::pair<uint64_t, uint64_t>> done;
  if (config_.order == Order::kQuasiRandom) {
    // Rank r delivered elements r*S .. r*S + c - 1 (mod n): its chunk's head.
    const auto per_rank = static_cast<uint64_t>(shape.per_rank);
    for (uint64_t r = 0; r < world && c > 0; ++r) {
      if (c >= n) {
        done.push_back({0, n});
        break;
      }
      const uint64_t a = r * per_rank % n;
      if (a + c <= n) {
        done.push_back({a, a + c});
      } else {
        done.push_back({a, n});
        done.push_back({0, a + c - n});
      }
    }
  } else {
    // Position p of rank r is element p * world + r: together, the first c * world.
    done.push_back({0, std::min(n, c * world)});
  }
  std::sort(done.begin(), done.end());
  // The complement in [0, n), mapped to global positions span by span.
  std::vector<OrderSpan> left;
  auto add = [&](uint64_t a, uint64_t b) {  // sequence elements [a, b)
    while (a < b) {
      const uint64_t g = ToGlobal(epoch, a);
      uint64_t end = b;
      if (epoch == config_.split_epoch) {
        const size_t j = SpanIndex(a);
        end = std::min(b, prefix_[j + 1]);
      }
      const auto begin = static_cast<int64_t>(g);
      const auto stop = static_cast<int64_t>(g + (end - a));
      if (!left.empty() && left.back().end == begin) {
        left.back().end = stop;
      } else {
        left.push_back({begin, stop});
      }
      a = end;
    }
  };
  uint64_t at = 0;
  for (const auto& [a, b] : done) {
    if (a > at) add(at, a);
    at = std::max(at, b);
  }
  if (at < n) add(at, n);
  return left;
}

}  // namespace stoke::internal

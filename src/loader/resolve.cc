#include "loader/resolve.h"

#include <algorithm>
#include <string>

namespace stoke::internal {
namespace {

Status Invalid(const char* field, const std::string& why) {
  return InvalidArgumentError(std::string("LoaderOptions.") + field + ": " + why);
}

Status Range(const char* field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return Invalid(field, std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " +
                              std::to_string(hi) + "]");
  }
  return Status::Ok();
}

// The rules on single fields and on the dataset, in the order of options.h.
Status CheckFields(const LoaderOptions& o, const Dataset& d) {
  STOKE_RETURN_IF_ERROR(Range("batch_size", o.batch_size, 1, int64_t{1} << 24));
  STOKE_RETURN_IF_ERROR(Range("block_samples", o.block_samples, 1, int64_t{1} << 40));
  STOKE_RETURN_IF_ERROR(Range("window_bytes",
                              static_cast<int64_t>(std::min<uint64_t>(o.window_bytes, 1ull << 62)),
                              1, int64_t{1} << 36));
  STOKE_RETURN_IF_ERROR(Range("group_windows", o.group_windows, 1, 4096));
  STOKE_RETURN_IF_ERROR(Range("world_size", o.world_size, 1, 1 << 20));
  STOKE_RETURN_IF_ERROR(Range("rank", o.rank, 0, o.world_size - 1));
  STOKE_RETURN_IF_ERROR(Range("max_refill_attempts", o.max_refill_attempts, 0, 1 << 20));
  STOKE_RETURN_IF_ERROR(Range("start.epoch", o.start.epoch, 0, int64_t{1} << 40));
  STOKE_RETURN_IF_ERROR(Range("device.index", o.device.index, 0, 1 << 16));
  if (o.ring_slots != 0) STOKE_RETURN_IF_ERROR(Range("ring_slots", o.ring_slots, 2, 4096));
  STOKE_RETURN_IF_ERROR(Range("read_threads", o.read_threads, 1, 1024));
  STOKE_RETURN_IF_ERROR(Range("reads_in_flight", o.reads_in_flight, 0, 65536));
  STOKE_RETURN_IF_ERROR(Range("samples_per_task", o.samples_per_task, 0, 4096));
  STOKE_RETURN_IF_ERROR(Range("decode_threads", o.decode_threads, -1, 1024));
  STOKE_RETURN_IF_ERROR(Range("device_buffers", o.device_buffers, 2, 64));
  if (o.trace_events > (uint64_t{1} << 28)) {
    return Invalid("trace_events", std::to_string(o.trace_events) + " is above 2^28");
  }
  if (d.size() == 0) return InvalidArgumentError(d.Describe() + ": the dataset is empty");
  if (d.spec().shape.size() > 8) {
    return InvalidArgumentError(d.Describe() + ": samples of rank above 8 are not supported");
  }
  if (d.spec().bytes() == 0) return InvalidArgumentError(d.Describe() + ": samples of 0 bytes");
  return Status::Ok();
}

}  // namespace

StatusOr<ResolvedOptions> ResolveOptions(const LoaderOptions& requested, const Dataset& dataset,
                                         int cores) {
  STOKE_RETURN_IF_ERROR(CheckFields(requested, dataset));
  ResolvedOptions r;
  r.options = requested;
  LoaderOptions& o = r.options;

  // Delivery: the conversion's own rules (normalisation needs a float dtype,
  // one mean and std or one per channel).
  STOKE_ASSIGN_OR_RETURN(r.convert, MakeConvertPlan(o, dataset.spec()));

  // Decode threads: auto is one per core for compute-bound decoding.
  if (o.decode_threads < 0) {
    o.decode_threads = AutoDecodeThreads(dataset.decode_is_compute_bound(), cores, o.device.kind);
  }

  // The plan, and the quasi order's windows (refused for a file per sample).
  PlanConfig& p = r.plan;
  p.dataset_size = dataset.size();
  p.order = o.order;
  p.seed = o.seed;
  p.block_samples = static_cast<uint64_t>(o.block_samples);
  p.batch_size = o.batch_size;
  p.drop_last = o.drop_last;
  p.rank = o.rank;
  p.world_size = o.world_size;
  if (o.order == Order::kQuasiRandom) {
    STOKE_ASSIGN_OR_RETURN(r.windows, WindowLayout::Make(dataset, o.window_bytes, o.direct_io));
    p.window_samples = r.windows.window_samples;
    p.group_windows = static_cast<uint64_t>(o.group_windows);
  }
  const Plan plan(p);
  if (plan.batches_per_epoch() == 0) {
    return Invalid("batch_size", "an epoch has no batches: " + std::to_string(dataset.size()) +
                                     " samples over world_size " + std::to_string(o.world_size) +
                                     " give " + std::to_string(plan.samples_per_epoch()) +
                                     " per rank, fewer than batch_size " +
                                     std::to_string(o.batch_size) + " with drop_last");
  }
  STOKE_ASSIGN_OR_RETURN(Resumed resumed, ResolveStart(o.start, p, "LoaderOptions.start"));
  r.plan = std::move(resumed.plan);
  o.start.epoch = resumed.start.epoch;
  o.start.batch = resumed.start.batch;
  return r;
}

StatusOr<Resumed> ResolveStart(const Position& position, const PlanConfig& plan,
                               const std::string& what) {
  auto bad = [&](const std::string& field, const std::string& why) {
    return InvalidArgumentError(what + field + ": " + why);
  };
  if (position.epoch < 0) return bad(".epoch", std::to_string(position.epoch) + " is below 0");
  if (position.batch < 0) return bad(".batch", std::to_string(position.batch) + " is below 0");
  Resumed r;
  r.plan = plan;
  r.plan.split_epoch = -1;
  r.plan.spans.clear();
  const EpochSplit& s = position.split;
  if (s.dataset_size == 0) {  // written by hand: this loader's own split
    const Plan own(r.plan);
    if (position.batch > own.batches_per_epoch()) {
      return bad(".batch", std::to_string(position.batch) + " is outside [0, " +
                               std::to_string(own.batches_per_epoch()) + "]");
    }
    r.start = {position.epoch, position.batch};
    return r;
  }
  // The same plan: dataset, seed, order and the order's own sizes.
  const auto differs = [&](const char* field, auto theirs, auto mine) {
    return bad(".split." + std::string(field),
               "the position's is " + std::to_string(theirs) + ", this loader's " +
                   std::to_string(mine) +
                   "; a position resumes only the same dataset, seed and order");
  };
  if (s.dataset_size != static_cast<int64_t>(plan.dataset_size)) {
    return differs("dataset_size", s.dataset_size, plan.dataset_size);
  }
  if (s.seed != plan.seed) return differs("seed", s.seed, plan.seed);
  if (s.order != plan.order) {
    return bad(".split.order", "the position's is " + std::string(OrderName(s.order)) +
                                   ", this loader's " + std::string(OrderName(plan.order)) +
                                   "; a position resumes only the same dataset, seed and order");
  }
  const bool block = plan.order == Order::kBlock;
  const bool quasi = plan.order == Order::kQuasiRandom;
  if (block && s.block_samples != static_cast<int64_t>(plan.block_samples)) {
    return differs("block_samples", s.block_samples, plan.block_samples);
  }
  if (quasi && s.window_samples != static_cast<int64_t>(plan.window_samples)) {
    return differs("window_samples", s.window_samples, plan.window_samples);
  }
  if (quasi && s.group_windows != static_cast<int64_t>(plan.group_windows)) {
    return differs("group_windows", s.group_windows, plan.group_windows);
  }
  // The bounds LoaderOptions has (a position read from text may hold anything).
  if (s.world_size < 1 || s.world_size > (1 << 20)) {
    return bad(".split.world_size", std::to_string(s.world_size) + " is outside [1, 2^20]");
  }
  if (s.batch_size < 1 || s.batch_size > (int64_t{1} << 24)) {
    return bad(".split.batch_size", std::to_string(s.batch_size) + " is outside [1, 2^24]");
  }
  int64_t at = 0;
  for (const OrderSpan& span : s.spans) {
    if (span.begin < at || span.end <= span.begin ||
        span.end > static_cast<int64_t>(plan.dataset_size)) {
      return bad(".split.spans", std::to_string(span.begin) + "-" + std::to_string(span.end) +
                                     " is not a span after the one before it inside [0, " +
                                     std::to_string(plan.dataset_size) + ")");
    }
    at = span.end;
  }
  // The split the position was taken in (rank 0's view: the same on every rank).
  PlanConfig then = r.plan;
  then.world_size = s.world_size;
  then.rank = 0;
  then.batch_size = s.batch_size;
  then.drop_last = s.drop_last;
  if (!s.spans.empty()) {
    then.split_epoch = position.epoch;
    then.spans = s.spans;
  }
  const Plan old(then);
  const int64_t batches = old.batches_in(position.epoch);
  if (position.batch > batches) {
    return bad(".batch", std::to_string(position.batch) + " is outside [0, " +
                             std::to_string(batches) + "] of its split");
  }
  if (s.world_size == plan.world_size && s.batch_size == plan.batch_size &&
      s.drop_last == plan.drop_last) {
    // The same split: exactly where it was (at its end too: Next then gives
    // the epoch's end, as it would have).
    r.plan.split_epoch = then.split_epoch;
    r.plan.spans = then.spans;
    r.start = {position.epoch, position.batch};
    return r;
  }
  if (position.batch == batches) {  // the epoch is over
    r.start = {position.epoch + 1, 0};
    return r;
  }
  // Another split: what every rank of the old one had not delivered yet.
  const int64_t delivered = std::min(position.batch * s.batch_size, old.samples_in(position.epoch));
  r.plan.spans = old.Remaining(position.epoch, delivered);
  if (r.plan.spans.empty()) {
    r.start = {position.epoch + 1, 0};
    return r;
  }
  r.plan.split_epoch = position.epoch;
  r.start = {position.epoch, 0};
  return r;
}

Position PositionOf(int64_t epoch, int64_t batch, const PlanConfig& plan) {
  Position p;
  p.epoch = epoch;
  p.batch = batch;
  EpochSplit& s = p.split;
  s.dataset_size = static_cast<int64_t>(plan.dataset_size);
  s.seed = plan.seed;
  s.order = plan.order;
  if (plan.order == Order::kBlock) s.block_samples = static_cast<int64_t>(plan.block_samples);
  if (plan.order == Order::kQuasiRandom) {
    s.window_samples = static_cast<int64_t>(plan.window_samples);
    s.group_windows = static_cast<int64_t>(plan.group_windows);
  }
  s.world_size = plan.world_size;
  s.batch_size = plan.batch_size;
  s.drop_last = plan.drop_last;
  if (epoch == plan.split_epoch) s.spans = plan.spans;
  return p;
}

void ResolveSizes(const Sizing& sizing, LoaderOptions* options) {
  options->ring_slots = sizing.ring_slots;
  options->samples_per_task = sizing.samples_per_task;
  options->reads_in_flight = sizing.in_flight();
}

}  // namespace stoke::internal

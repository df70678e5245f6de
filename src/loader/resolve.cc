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
  if (o.start.batch < 0 || o.start.batch > plan.batches_per_epoch()) {
    return Invalid("start.batch", std::to_string(o.start.batch) + " is outside [0, " +
                                      std::to_string(plan.batches_per_epoch()) + "]");
  }
  return r;
}

void ResolveSizes(const Sizing& sizing, LoaderOptions* options) {
  options->ring_slots = sizing.ring_slots;
  options->samples_per_task = sizing.samples_per_task;
  options->reads_in_flight = sizing.in_flight();
}

}  // namespace stoke::internal

// Options resolved once (leveldb's SanitizeOptions): what the user asked for
// becomes what the loader runs with, or an error naming the option. Every
// rule about LoaderOptions lives here, and every automatic choice is made
// here: ResolveOptions at open (the rules, decode threads, the plan, the
// quasi order's windows, the conversion), then ResolveSizes once the read
// backend is known (ring slots, samples per task, reads in flight). The
// loader writes neither its options nor its plan anywhere else, and
// Loader::options() returns the result.
//
// Thread safety: pure functions; ResolveOptions reads the dataset (Locate) for
// the quasi order's windows.
#ifndef STOKE_SRC_LOADER_RESOLVE_H_
#define STOKE_SRC_LOADER_RESOLVE_H_

#include "copy/convert.h"
#include "loader/plan.h"
#include "loader/sizing.h"
#include "loader/window_cache.h"
#include "stoke/dataset.h"
#include "stoke/options.h"

namespace stoke::internal {

struct ResolvedOptions {
  // Validated; decode_threads resolved (never -1). ResolveSizes fills
  // ring_slots, samples_per_task and reads_in_flight.
  LoaderOptions options;
  // The sample plan's configuration: an epoch of it has at least one batch,
  // and options.start lies within it.
  PlanConfig plan;
  // kQuasiRandom: the dataset's windows; otherwise empty.
  WindowLayout windows;
  // What delivery converts (output_dtype, normalisation), from the dataset's spec.
  ConvertPlan convert;
};

// InvalidArgument naming the option ("LoaderOptions.batch_size: ...") and the
// rule it breaks, or the dataset and why it cannot be loaded (empty, samples
// of rank above 8 or of 0 bytes). `cores`: for decode_threads = -1.
StatusOr<ResolvedOptions> ResolveOptions(const LoaderOptions& requested, const Dataset& dataset,
                                         int cores);

// Where a saved Position resumes a loader whose plan (for an ordinary epoch)
// is `plan`: the plan to run, with the resumed epoch split from what the
// position's split left when it differs from this loader's (another world
// size, batch size or drop_last; elastic resume), and the position to start
// at. A position written by hand (no split) is this loader's own. At the end
// of an epoch, or with nothing left of it, the start is the next epoch.
// InvalidArgument naming `what` and the field when the position belongs to
// another dataset, seed or order, or lies outside its epoch.
struct Resumed {
  PlanConfig plan;
  Position start;  // epoch and batch (its split is the plan's)
};
StatusOr<Resumed> ResolveStart(const Position& position, const PlanConfig& plan,
                               const std::string& what);

// The Position a loader reports at (epoch, batch) of `plan`: with the split it
// resumes from.
Position PositionOf(int64_t epoch, int64_t batch, const PlanConfig& plan);

// The automatic sizes, once the backend is known: ring_slots (when 0),
// samples_per_task (when 0) and reads_in_flight (when 0) become the sizes the
// loader runs with.
void ResolveSizes(const Sizing& sizing, LoaderOptions* options);

}  // namespace stoke::internal

#endif  // STOKE_SRC_LOADER_RESOLVE_H_

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

// The automatic sizes, once the backend is known: ring_slots (when 0),
// samples_per_task (when 0) and reads_in_flight (when 0) become the sizes the
// loader runs with.
void ResolveSizes(const Sizing& sizing, LoaderOptions* options);

}  // namespace stoke::internal

#endif  // STOKE_SRC_LOADER_RESOLVE_H_

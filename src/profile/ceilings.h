// The profiler's ceilings, measured on the spot: the storage's sequential and
// random read rates for the dataset's files (cold: each file is evicted from
// the page cache first, through posix_fadvise), one core's decode rate on the
// dataset's first samples (and on the same samples as `stoke pack` would
// store them, and as `stoke pack --short-side` would when they are larger
// than the output needs), and the host's memory copy bandwidth.
//
// Each measurement is bounded (about a second, and a few hundred MiB). Files
// read for the storage ceilings are left evicted: measure after the run.
#ifndef STOKE_SRC_PROFILE_CEILINGS_H_
#define STOKE_SRC_PROFILE_CEILINGS_H_

#include "profile/verdict.h"
#include "stoke/dataset.h"

namespace stoke::internal {

// Fills what can be measured for `dataset`; leaves 0 where not (a dataset in
// memory has no storage; one stored as its output has no decode). With
// `device_bytes_per_second` (a storage model's bandwidth), the sequential
// ceiling is that bandwidth: what packed shards would stream at, which a
// dataset of small files cannot show by reading them in order; and nothing is
// evicted, so the random reads are the model's (as the loader sees them).
Ceilings MeasureCeilings(const Dataset& dataset, double device_bytes_per_second = 0);

// The short side to pack images at for an output of `spec` (images: HWC or
// CHW): the output's short side x 8/7, as torchvision resizes to 256 for 224
// crops, so that random-resized crops still find the pixels they scale from.
// 0 when `spec` is not an image.
int ResizeShortSideFor(const SampleSpec& spec);

}  // namespace stoke::internal

#endif  // STOKE_SRC_PROFILE_CEILINGS_H_

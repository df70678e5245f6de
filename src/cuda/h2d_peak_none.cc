// A build without CUDA: no bus to measure.
#include "cuda/h2d_peak.h"

namespace stoke::internal {

double MeasurePinnedH2D(int, size_t) { return 0; }

}  // namespace stoke::internal

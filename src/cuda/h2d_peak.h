// The bus's host-to-device ceiling for the profiler: cudaMemcpyAsync of
// `bytes` from pinned memory to device `device`, best of a few rounds.
#ifndef STOKE_SRC_CUDA_H2D_PEAK_H_
#define STOKE_SRC_CUDA_H2D_PEAK_H_

#include <cstddef>

namespace stoke::internal {

// Bytes per second; 0 without CUDA, without that GPU, or on any CUDA error.
double MeasurePinnedH2D(int device, size_t bytes);

}  // namespace stoke::internal

#endif  // STOKE_SRC_CUDA_H2D_PEAK_H_

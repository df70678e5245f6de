// A synthetic training step for gpu_bench: a kernel that reads its batch and
// then keeps every SM busy for a chosen time.
#ifndef STOKE_TOOLS_BENCH_SPIN_KERNEL_H_
#define STOKE_TOOLS_BENCH_SPIN_KERNEL_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

// Queues a step on `stream`: sums a strided sample of `batch` (so the step
// depends on its data) into *sink, and spins until `nanoseconds` have passed
// on the GPU's clock.
cudaError_t LaunchSpinStep(const uint8_t* batch, size_t bytes, int64_t nanoseconds,
                           unsigned long long* sink, int blocks, cudaStream_t stream);

#endif  // STOKE_TOOLS_BENCH_SPIN_KERNEL_H_

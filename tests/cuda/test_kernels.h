// Kernels for the GPU tests: a stream that is slow on purpose, and a checksum
// computed on the device from what a batch holds when the stream gets to it.
#ifndef STOKE_TESTS_CUDA_TEST_KERNELS_H_
#define STOKE_TESTS_CUDA_TEST_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace stoke::testing {

// Queues a kernel that sleeps about `nanoseconds` on `stream`.
cudaError_t LaunchSleep(cudaStream_t stream, int64_t nanoseconds);

// Queues *sum += sum over i of bytes[i] * WeightOf(i) on `stream`.
cudaError_t LaunchChecksum(const uint8_t* bytes, size_t count, unsigned long long* sum,
                           cudaStream_t stream);

// The weight of byte i, on the host, for the expected checksum.
inline uint64_t WeightOf(size_t i) { return i % 251 + 1; }

}  // namespace stoke::testing

#endif  // STOKE_TESTS_CUDA_TEST_KERNELS_H_

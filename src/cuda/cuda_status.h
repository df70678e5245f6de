// CUDA runtime errors as Status: the call as written, CUDA's error name and
// message, and file:line. Only for files compiled with CUDA.
#ifndef STOKE_SRC_CUDA_CUDA_STATUS_H_
#define STOKE_SRC_CUDA_CUDA_STATUS_H_

#include <cuda_runtime_api.h>

#include "stoke/status.h"

namespace stoke::internal {

// ResourceExhausted for out-of-memory errors, Unavailable for a missing or
// unusable device or driver, Internal otherwise. Clears CUDA's last error.
Status CudaError(const char* call, cudaError_t error, const char* file, int line);

}  // namespace stoke::internal

// Returns the error of a CUDA runtime call from the enclosing function.
#define STOKE_CUDA_RETURN_IF_ERROR(call)                                                 \
  do {                                                                                   \
    const cudaError_t stoke_cuda_error_ = (call);                                        \
    if (stoke_cuda_error_ != cudaSuccess) {                                              \
      return ::stoke::internal::CudaError(#call, stoke_cuda_error_, __FILE__, __LINE__); \
    }                                                                                    \
  } while (false)

#endif  // STOKE_SRC_CUDA_CUDA_STATUS_H_

// The GPU trainer's calls into cuDNN and cuBLAS, through the table loaded by
// dlopen (cuda_libs.h), with errors that name the function; and a zeroed
// device allocation. For the trainer's sources only (built with cuDNN).
#ifndef STOKE_SRC_TRAIN_CUDA_CALLS_H_
#define STOKE_SRC_TRAIN_CUDA_CALLS_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <cassert>
#include <string>
#include <utility>

#include "cuda/cuda_status.h"
#include "stoke/status.h"
#include "train/cuda_libs.h"

namespace stoke::internal {

// cuDNN and cuBLAS, loaded by OpenCudaTrainer before any trainer exists.
inline const CudaLibs& Lib() {
  const StatusOr<const CudaLibs*> libs = LoadCudaLibs();
  assert(libs.ok());
  return *libs.value();
}

inline Status CudnnError(const char* call, cudnnStatus_t status, const char* file, int line) {
  const std::string message = "cuDNN: " + std::string(call) + ": " +
                              Lib().cudnnGetErrorString(status) + " (" + file + ":" +
                              std::to_string(line) + ")";
  return status == CUDNN_STATUS_ALLOC_FAILED ? ResourceExhaustedError(message)
                                             : InternalError(message);
}

inline Status CublasError(const char* call, cublasStatus_t status, const char* file, int line) {
  const std::string message = "cuBLAS: " + std::string(call) + ": " +
                              Lib().cublasGetStatusString(status) + " (" + file + ":" +
                              std::to_string(line) + ")";
  return status == CUBLAS_STATUS_ALLOC_FAILED ? ResourceExhaustedError(message)
                                              : InternalError(message);
}

// STOKE_CUDNN_RETURN_IF_ERROR(cudnnFunction, args...) calls the function
// through the loaded table and returns its error, named, if it fails.
#define STOKE_CUDNN_RETURN_IF_ERROR(function, ...)                                              \
  do {                                                                                          \
    const cudnnStatus_t stoke_cudnn_status_ = ::stoke::internal::Lib().function(__VA_ARGS__);   \
    if (stoke_cudnn_status_ != CUDNN_STATUS_SUCCESS) {                                          \
      return ::stoke::internal::CudnnError(#function, stoke_cudnn_status_, __FILE__, __LINE__); \
    }                                                                                           \
  } while (false)

// STOKE_CUBLAS_RETURN_IF_ERROR(cublasFunction, args...): the same for cuBLAS.
#define STOKE_CUBLAS_RETURN_IF_ERROR(function, ...)                                               \
  do {                                                                                            \
    const cublasStatus_t stoke_cublas_status_ = ::stoke::internal::Lib().function(__VA_ARGS__);   \
    if (stoke_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                          \
      return ::stoke::internal::CublasError(#function, stoke_cublas_status_, __FILE__, __LINE__); \
    }                                                                                             \
  } while (false)

// A zeroed device allocation, freed with its owner.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : p_(std::exchange(other.p_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  ~DeviceBuffer() {
    if (p_ != nullptr) cudaFree(p_);
  }
  Status Allocate(size_t bytes) {
    if (p_ != nullptr) cudaFree(p_);
    p_ = nullptr;
    STOKE_CUDA_RETURN_IF_ERROR(cudaMalloc(&p_, std::max<size_t>(bytes, 16)));
    STOKE_CUDA_RETURN_IF_ERROR(cudaMemset(p_, 0, std::max<size_t>(bytes, 16)));
    bytes_ = bytes;
    return Status::Ok();
  }
  template <typename T = float>
  T* get() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_TRAIN_CUDA_CALLS_H_

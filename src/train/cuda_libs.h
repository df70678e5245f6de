// cuDNN and cuBLAS, loaded when the first GPU trainer opens (dlopen), not when
// the program starts: CPU runs, `stoke help` and embedders that never train on
// a GPU do not pay for them (libcublasLt alone is about 210 MB resident once
// loaded), and a machine without cuDNN still runs everything else. Only the
// GPU trainer (cuda_trainer.cc) includes this.
#ifndef STOKE_SRC_TRAIN_CUDA_LIBS_H_
#define STOKE_SRC_TRAIN_CUDA_LIBS_H_

#include <cublas_v2.h>
#include <cudnn.h>

#include "stoke/status.h"

namespace stoke::internal {

// The functions the trainer calls, by their exported names (cuBLAS's v2 API
// exports cublasCreate as cublasCreate_v2, and so on).
#define STOKE_CUDNN_FUNCTIONS(X)                   \
  X(cudnnGetVersion)                               \
  X(cudnnGetErrorString)                           \
  X(cudnnCreate)                                   \
  X(cudnnDestroy)                                  \
  X(cudnnSetStream)                                \
  X(cudnnCreateTensorDescriptor)                   \
  X(cudnnSetTensor4dDescriptor)                    \
  X(cudnnDestroyTensorDescriptor)                  \
  X(cudnnCreateFilterDescriptor)                   \
  X(cudnnSetFilter4dDescriptor)                    \
  X(cudnnDestroyFilterDescriptor)                  \
  X(cudnnCreateConvolutionDescriptor)              \
  X(cudnnSetConvolution2dDescriptor)               \
  X(cudnnSetConvolutionMathType)                   \
  X(cudnnDestroyConvolutionDescriptor)             \
  X(cudnnCreatePoolingDescriptor)                  \
  X(cudnnSetPooling2dDescriptor)                   \
  X(cudnnDestroyPoolingDescriptor)                 \
  X(cudnnCreateActivationDescriptor)               \
  X(cudnnSetActivationDescriptor)                  \
  X(cudnnDestroyActivationDescriptor)              \
  X(cudnnGetConvolutionForwardAlgorithm_v7)        \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)   \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) \
  X(cudnnConvolutionForward)                       \
  X(cudnnConvolutionBackwardData)                  \
  X(cudnnConvolutionBackwardFilter)                \
  X(cudnnConvolutionBackwardBias)                  \
  X(cudnnAddTensor)                                \
  X(cudnnActivationForward)                        \
  X(cudnnActivationBackward)                       \
  X(cudnnPoolingForward)                           \
  X(cudnnPoolingBackward)                          \
  X(cudnnSoftmaxForward)

#define STOKE_CUBLAS_FUNCTIONS(X) \
  X(cublasGetStatusString)        \
  X(cublasCreate_v2)              \
  X(cublasDestroy_v2)             \
  X(cublasSetStream_v2)           \
  X(cublasSetWorkspace_v2)        \
  X(cublasSetMathMode)            \
  X(cublasSgemm_v2)               \
  X(cublasSgemv_v2)

struct CudaLibs {
#define STOKE_CUDA_LIBS_FIELD(name) decltype(&::name) name = nullptr;
  STOKE_CUDNN_FUNCTIONS(STOKE_CUDA_LIBS_FIELD)
  STOKE_CUBLAS_FUNCTIONS(STOKE_CUDA_LIBS_FIELD)
#undef STOKE_CUDA_LIBS_FIELD
};

// Loads both libraries once (later calls return the same table, or the same
// error). Unavailable naming the library that could not be loaded or the
// function it lacks, with dlerror's text and where the loader looked.
StatusOr<const CudaLibs*> LoadCudaLibs();

}  // namespace stoke::internal

#endif  // STOKE_SRC_TRAIN_CUDA_LIBS_H_

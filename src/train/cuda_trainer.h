// The trainer on a CUDA GPU: cuDNN for convolution, pooling, activation and
// softmax, cuBLAS for the linear layers, kernels of its own (cuda_kernels.cu)
// for the input scaling, bias, loss and optimisers; parameters, gradients and
// optimiser state live on the device. Built only with CUDA and cuDNN; without
// them OpenCudaTrainer is Unavailable.
#ifndef STOKE_SRC_TRAIN_CUDA_TRAINER_H_
#define STOKE_SRC_TRAIN_CUDA_TRAINER_H_

#include <memory>

#include "stoke/status.h"
#include "stoke/train.h"
#include "train/model_spec.h"

namespace stoke::internal {

// `options` already checked by Trainer::Open; options.device is cuda:N.
// Unavailable when that device is not there or CUDA is not built in.
StatusOr<std::unique_ptr<train::Trainer>> OpenCudaTrainer(const train::TrainOptions& options,
                                                          ModelSpec spec);

}  // namespace stoke::internal

#endif  // STOKE_SRC_TRAIN_CUDA_TRAINER_H_

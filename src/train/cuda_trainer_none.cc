// OpenCudaTrainer in a build without CUDA or cuDNN.
#include "stoke/device.h"
#include "train/cuda_trainer.h"

namespace stoke::internal {

StatusOr<std::unique_ptr<train::Trainer>> OpenCudaTrainer(const train::TrainOptions& options,
                                                          ModelSpec) {
  return UnavailableError("TrainOptions.device = " + DeviceName(options.device) +
                          ": this build of stoke has no CUDA training step (it needs the CUDA "
                          "toolkit and cuDNN at build time); train on cpu");
}

}  // namespace stoke::internal

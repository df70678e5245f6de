// The GPU trainer's own kernels, where neither cuDNN nor cuBLAS fits. Each
// launch is queued on `stream` and returns the launch's error.
#ifndef STOKE_SRC_TRAIN_CUDA_KERNELS_H_
#define STOKE_SRC_TRAIN_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace stoke::internal {

// Loss and accuracy summed on the device until the host collects them.
struct DeviceTotals {
  double loss_sum;
  unsigned long long correct;
  unsigned long long bad_labels;  // samples whose label was outside [0, classes)
  long long first_bad_label;      // one of them, for the message
};

// The input stage of train/input.h on the GPU: `samples` samples of `elements`
// each to float32 channels first, uint8 scaled by 1/255 as the CPU step scales,
// HWC transposed when `transpose` (channels x pixels per sample).
struct ToFloatArgs {
  enum Kind { kUint8, kFloat16, kFloat32 };
  Kind kind = kUint8;
  bool transpose = false;
  int64_t samples = 0;
  int64_t elements = 0;
  int64_t channels = 1;
  int64_t pixels = 0;
};
cudaError_t LaunchToFloat(const ToFloatArgs& args, const void* in, float* out, cudaStream_t stream);

// y[i][j] += bias[j] for n rows of `features`.
cudaError_t LaunchAddBias(float* y, const float* bias, int64_t n, int64_t features,
                          cudaStream_t stream);

// For n rows of log-probabilities (cuDNN's log-softmax): adds -logp[label] and
// whether the largest is the label's to *totals; with `diff`, writes
// d(mean loss)/d(logits) = (softmax - onehot) / n. A label outside
// [0, classes) is counted in totals->bad_labels, and its row's diff is zero.
cudaError_t LaunchSoftmaxLoss(const float* logp, const int64_t* labels, int64_t n, int64_t classes,
                              float* diff, DeviceTotals* totals, cudaStream_t stream);

// ++*step: the optimisers read the step number from the device, so that a
// captured graph replays correctly.
cudaError_t LaunchCountStep(int64_t* step, cudaStream_t stream);

// PyTorch's SGD and Adam, as loss.h's host loops, at step *step.
struct OptimizerArgs {
  float learning_rate, momentum, weight_decay, beta1, beta2, epsilon;
};
cudaError_t LaunchSgd(const OptimizerArgs& o, const int64_t* step, float* w, const float* g,
                      float* v, int64_t count, cudaStream_t stream);
cudaError_t LaunchAdam(const OptimizerArgs& o, const int64_t* step, float* w, const float* g,
                       float* m, float* v, int64_t count, cudaStream_t stream);

}  // namespace stoke::internal

#endif  // STOKE_SRC_TRAIN_CUDA_KERNELS_H_

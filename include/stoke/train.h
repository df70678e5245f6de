// stoke/train.h: a small, honest training step that consumes stoke batches.
//
// One model description runs on oneDNN on the CPU and on cuDNN + cuBLAS on a
// CUDA GPU (TrainOptions.device). The tools, examples and benchmarks use it to
// measure a pipeline against a real step. Models:
//   "mlp:784-300-100-10"  inputs, hidden layers (each followed by ReLU), classes;
//                         the input's features must equal the first number;
//   "cnn:32-64-128-10"    two blocks of 3x3 convolution (same padding), ReLU and
//                         2x2 max pooling with 32 and 64 channels, a hidden
//                         linear layer of 128 with ReLU, and 10 classes; for
//                         images (CxHxW, HxWxC, or HxW as one channel) whose
//                         sides are multiples of 4.
// Loss: softmax cross-entropy, averaged over the batch. Weights: He
// initialisation (normal, std sqrt(2 / fan_in)) before a ReLU and Glorot
// (uniform) for the last layer, biases 0, drawn from `seed`.
// Input: whatever a loader delivers. uint8 samples are scaled to [0, 1] by the
// step, float16 ones widened, float32 ones used as they are; HWC batches (uint8
// images as decoded, Batch::channels_last) are transposed into a CNN's
// channels-first input, on the GPU by the same kernel that scales them.
//
// On a GPU the step runs on the trainer's own stream, which waits for each
// batch on the GPU (Batch::MakeStreamWait), so the host never waits for a step
// unless it asks for its loss: pass a null result to Step and call Collect when
// the figures are wanted (once an epoch, say). Each batch size's step is
// captured as a CUDA graph after its first run and replayed (cuda_graphs).
//
// Thread safety: one thread uses a Trainer at a time.
//
//   stoke::train::TrainOptions options;                 // SGD, lr 0.01
//   auto trainer = stoke::train::Trainer::Open(options, loader->sample_spec());
//   for (stoke::Batch& batch : loader->Epoch(epoch)) (*trainer)->Step(batch, nullptr);
//   stoke::train::StepResult result;
//   (*trainer)->Collect(&result);                       // loss(), accuracy()
#ifndef STOKE_TRAIN_H_
#define STOKE_TRAIN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stoke/batch.h"
#include "stoke/dataset.h"
#include "stoke/device.h"
#include "stoke/status.h"

namespace stoke::train {

enum class Optimizer {
  kSgd,   // v = momentum v + (g + weight_decay w); w -= lr v   (PyTorch's SGD)
  kAdam,  // PyTorch's Adam (weight decay added to the gradient)
};

struct TrainOptions {
  std::string model = "mlp:784-300-100-10";
  Optimizer optimizer = Optimizer::kSgd;
  float learning_rate = 0.01f;
  float momentum = 0.0f;  // SGD
  float weight_decay = 0.0f;
  float beta1 = 0.9f;  // Adam
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  uint64_t seed = 0;       // initial weights
  DeviceSpec device = {};  // cpu (oneDNN), or cuda:N (cuDNN + cuBLAS)
  // cpu: threads oneDNN runs each layer on; 0 is OpenMP's default (every core).
  // Leave cores to the loader's decode threads when it decodes JPEGs: an OpenMP
  // team that shares its cores with busy threads waits a scheduler slice (ms)
  // at every barrier.
  int threads = 0;
  // cuda: capture each batch size's step (and evaluation) as a CUDA graph after
  // its first run and replay it, so that a small model's step is one launch,
  // not dozens. False launches every kernel every step. Default true.
  bool cuda_graphs = true;
};

// Sums over the samples of one or more batches.
struct StepResult {
  double loss_sum = 0;  // softmax cross-entropy, summed over samples
  int64_t correct = 0;  // samples whose largest logit is their label
  int64_t samples = 0;
  double loss() const { return samples ? loss_sum / static_cast<double>(samples) : 0; }
  double accuracy() const {
    return samples ? static_cast<double>(correct) / static_cast<double>(samples) : 0;
  }
};

class Trainer {
 public:
  // Builds the model of `options.model` for samples of `input` (the dataset's
  // spec, or the loader's delivered spec when it converts). InvalidArgument
  // naming TrainOptions.<field> for a bad spec, option or input shape;
  // Unavailable for a device that is not there, or a build without CUDA.
  static StatusOr<std::unique_ptr<Trainer>> Open(const TrainOptions& options,
                                                 const SampleSpec& input);
  virtual ~Trainer() = default;

  // Forward, loss, backward and one optimiser update on `batch`; adds its loss
  // and accuracy (before the update) to *result, or, with a null `result`, to
  // the totals Collect returns. A label outside [0, classes) is InvalidArgument
  // naming it (on a GPU from the call that waits: Step with a result, or
  // Collect). Allocates only for a batch size it has not seen before
  // (primitives, buffers and graphs are made once per shape). On a GPU,
  // `batch` may be on that GPU (the loader's device) or on the cpu.
  virtual Status Step(Batch& batch, StepResult* result) = 0;
  // Forward and loss only.
  virtual Status Evaluate(Batch& batch, StepResult* result) = 0;
  // Adds the totals of the steps and evaluations given a null result since
  // the last Collect to *result, and starts new totals. On a GPU it waits for
  // those steps: the one host synchronisation of a training loop.
  virtual Status Collect(StepResult* result) = 0;

  // "mlp:784-300-100-10, 266610 parameters, sgd, cpu (oneDNN)"
  virtual std::string Describe() const = 0;
  virtual int64_t classes() const = 0;
  // The parameters, layer by layer (weights, then bias), as host copies (on a
  // GPU after the steps queued so far).
  virtual std::vector<std::vector<float>> Parameters() const = 0;
};

std::string_view OptimizerName(Optimizer optimizer);

}  // namespace stoke::train

#endif  // STOKE_TRAIN_H_

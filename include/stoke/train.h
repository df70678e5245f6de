// stoke/train.h: a small, honest training step that consumes stoke batches.
//
// One model description runs on oneDNN on the CPU (and, later, cuDNN + cuBLAS on
// a GPU). The tools, examples and benchmarks use it to measure a pipeline
// against a real step. Models:
//   "mlp:784-300-100-10"  inputs, hidden layers (each followed by ReLU), classes;
//                         the input's features must equal the first number;
//   "cnn:32-64-128-10"    two blocks of 3x3 convolution (same padding), ReLU and
//                         2x2 max pooling with 32 and 64 channels, a hidden
//                         linear layer of 128 with ReLU, and 10 classes; for
//                         channels-first samples (CxHxW, or HxW as one channel)
//                         whose sides are multiples of 4.
// Loss: softmax cross-entropy, averaged over the batch. Weights: He
// initialisation (normal, std sqrt(2 / fan_in)) before a ReLU and Glorot
// (uniform) for the last layer, biases 0, drawn from `seed`. uint8 samples are
// scaled to [0, 1] by the step; float32 samples are used as they are.
//
// Thread safety: one thread uses a Trainer at a time.
//
//   stoke::train::TrainOptions options;                 // SGD, lr 0.01
//   auto trainer = stoke::train::Trainer::Open(options, dataset->spec());
//   stoke::train::StepResult result;
//   for (stoke::Batch& batch : loader->Epoch(epoch)) (*trainer)->Step(batch, &result);
//   // result.loss(), result.accuracy()
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
  DeviceSpec device = {};  // cpu (oneDNN)
  // cpu: threads oneDNN runs each layer on; 0 is OpenMP's default (every core).
  // Leave cores to the loader's decode threads when it decodes JPEGs: an OpenMP
  // team that shares its cores with busy threads waits a scheduler slice (ms)
  // at every barrier.
  int threads = 0;
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
  // Unavailable for a device that is not there (cuda: not yet implemented).
  static StatusOr<std::unique_ptr<Trainer>> Open(const TrainOptions& options,
                                                 const SampleSpec& input);
  virtual ~Trainer() = default;

  // Forward, loss, backward and one optimiser update on `batch`; adds its loss
  // and accuracy (before the update) to *result. Labels outside [0, classes)
  // are InvalidArgument naming the label. Allocates only for a batch size it
  // has not seen before (primitives are created once per shape).
  virtual Status Step(const Batch& batch, StepResult* result) = 0;
  // Forward and loss only.
  virtual Status Evaluate(const Batch& batch, StepResult* result) = 0;

  // "mlp:784-300-100-10, 266610 parameters, sgd, cpu (oneDNN)"
  virtual std::string Describe() const = 0;
  virtual int64_t classes() const = 0;
  // The parameters, layer by layer (weights, then bias), as host copies.
  virtual std::vector<std::vector<float>> Parameters() const = 0;
};

std::string_view OptimizerName(Optimizer optimizer);

}  // namespace stoke::train

#endif  // STOKE_TRAIN_H_

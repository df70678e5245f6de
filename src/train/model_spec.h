// Model descriptions (stoke/train.h): "mlp:784-300-100-10" and
// "cnn:32-64-128-10", parsed against the input sample into a list of layers
// with their shapes.
#ifndef STOKE_SRC_TRAIN_MODEL_SPEC_H_
#define STOKE_SRC_TRAIN_MODEL_SPEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stoke/dataset.h"
#include "stoke/status.h"

namespace stoke::internal {

struct LayerSpec {
  enum class Kind { kLinear, kConv3x3, kRelu, kMaxPool2x2 };
  Kind kind = Kind::kLinear;
  // Linear: in and out features. Conv: in and out channels over height x width.
  int64_t in = 0;
  int64_t out = 0;
  int64_t height = 0;  // conv and pool: the input's spatial size
  int64_t width = 0;
  bool followed_by_relu = false;  // weight initialisation: He if so, else Glorot
};

struct ModelSpec {
  std::string text;            // as given
  std::vector<int64_t> input;  // {features} for an MLP, {C, H, W} for a CNN
  std::vector<LayerSpec> layers;
  int64_t classes = 0;
  int64_t parameters = 0;
  // Elements of one sample's input.
  int64_t input_elements() const;
};

// One weight or bias tensor, row-major: linear {out, in}, conv {out, in, 3, 3},
// bias {out}.
struct InitialParam {
  std::vector<int64_t> dims;
  std::vector<float> value;
};

// The parameters of `spec` as drawn from `seed` (stoke/train.h), layer by
// layer, weights then bias: the same on every device.
std::vector<InitialParam> InitialParameters(const ModelSpec& spec, uint64_t seed);

// InvalidArgument naming TrainOptions.model and the cause: an unknown kind, a
// malformed or non-positive size, an input whose features or shape do not fit.
StatusOr<ModelSpec> ParseModel(std::string_view text, const SampleSpec& input);

}  // namespace stoke::internal

#endif  // STOKE_SRC_TRAIN_MODEL_SPEC_H_

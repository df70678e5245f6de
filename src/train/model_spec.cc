#include "train/model_spec.h"

#include <charconv>
#include <cmath>
#include <random>

namespace stoke::internal {
namespace {

Status Bad(std::string_view text, const std::string& why) {
  return InvalidArgumentError("TrainOptions.model '" + std::string(text) + "': " + why);
}

// "784-300-10" as numbers, each in [1, 1 << 20].
StatusOr<std::vector<int64_t>> Sizes(std::string_view text, std::string_view list) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find('-', start), list.size());
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(list.data() + start, list.data() + end, v);
    if (ec != std::errc() || ptr != list.data() + end || v < 1 || v > (1 << 20)) {
      return Bad(text, "'" + std::string(list.substr(start, end - start)) +
                           "' is not a size in [1, 1048576]");
    }
    out.push_back(v);
    start = end + 1;
  }
  return out;
}

}  // namespace

int64_t ModelSpec::input_elements() const {
  int64_t n = 1;
  for (int64_t d : input) n *= d;
  return n;
}

StatusOr<ModelSpec> ParseModel(std::string_view text, const SampleSpec& input) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    return Bad(text, "expected mlp:IN-HIDDEN...-CLASSES or cnn:C1-C2-HIDDEN-CLASSES");
  }
  const std::string_view kind = text.substr(0, colon);
  STOKE_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, Sizes(text, text.substr(colon + 1)));
  ModelSpec m;
  m.text = std::string(text);
  using Kind = LayerSpec::Kind;
  if (kind == "mlp") {
    if (sizes.size() < 2) return Bad(text, "an MLP needs at least inputs and classes");
    if (sizes.front() != input.elements()) {
      return Bad(text, "the model takes " + std::to_string(sizes.front()) +
                           " inputs but samples are " + input.ToString() + " (" +
                           std::to_string(input.elements()) + " elements)");
    }
    m.input = {sizes.front()};
    for (size_t i = 1; i < sizes.size(); ++i) {
      const bool last = i + 1 == sizes.size();
      m.layers.push_back({Kind::kLinear, sizes[i - 1], sizes[i], 0, 0, !last});
      if (!last) m.layers.push_back({Kind::kRelu, sizes[i], sizes[i], 0, 0, false});
    }
  } else if (kind == "cnn") {
    if (sizes.size() != 4) return Bad(text, "a CNN is cnn:C1-C2-HIDDEN-CLASSES");
    int64_t c, h, w;
    if (input.shape.size() == 2) {
      c = 1, h = input.shape[0], w = input.shape[1];
    } else if (input.shape.size() == 3 && !input.channels_last) {
      c = input.shape[0], h = input.shape[1], w = input.shape[2];
    } else if (input.shape.size() == 3) {
      // HWC, as images decode: the step's input stage transposes.
      c = input.shape[2], h = input.shape[0], w = input.shape[1];
    } else {
      return Bad(text, "a CNN takes images (CxHxW, HxWxC or HxW), not " + input.ToString());
    }
    if (h % 4 != 0 || w % 4 != 0) {
      return Bad(text, "sample sides " + std::to_string(h) + "x" + std::to_string(w) +
                           " are not multiples of 4 (two 2x2 poolings)");
    }
    m.input = {c, h, w};
    m.layers.push_back({Kind::kConv3x3, c, sizes[0], h, w, true});
    m.layers.push_back({Kind::kRelu, sizes[0], sizes[0], h, w, false});
    m.layers.push_back({Kind::kMaxPool2x2, sizes[0], sizes[0], h, w, false});
    m.layers.push_back({Kind::kConv3x3, sizes[0], sizes[1], h / 2, w / 2, true});
    m.layers.push_back({Kind::kRelu, sizes[1], sizes[1], h / 2, w / 2, false});
    m.layers.push_back({Kind::kMaxPool2x2, sizes[1], sizes[1], h / 2, w / 2, false});
    const int64_t flat = sizes[1] * (h / 4) * (w / 4);
    m.layers.push_back({Kind::kLinear, flat, sizes[2], 0, 0, true});
    m.layers.push_back({Kind::kRelu, sizes[2], sizes[2], 0, 0, false});
    m.layers.push_back({Kind::kLinear, sizes[2], sizes[3], 0, 0, false});
  } else {
    return Bad(text, "unknown model kind '" + std::string(kind) + "' (mlp or cnn)");
  }
  m.classes = sizes.back();
  if (m.classes < 2) return Bad(text, "needs at least 2 classes");
  for (const LayerSpec& l : m.layers) {
    if (l.kind == Kind::kLinear) m.parameters += l.in * l.out + l.out;
    if (l.kind == Kind::kConv3x3) m.parameters += l.in * l.out * 9 + l.out;
  }
  return m;
}

std::vector<InitialParam> InitialParameters(const ModelSpec& spec, uint64_t seed) {
  std::vector<InitialParam> params;
  std::mt19937_64 random(seed);
  for (const LayerSpec& l : spec.layers) {
    int64_t fan_in, fan_out;
    std::vector<int64_t> dims;
    if (l.kind == LayerSpec::Kind::kLinear) {
      fan_in = l.in, fan_out = l.out, dims = {l.out, l.in};
    } else if (l.kind == LayerSpec::Kind::kConv3x3) {
      fan_in = l.in * 9, fan_out = l.out * 9, dims = {l.out, l.in, 3, 3};
    } else {
      continue;
    }
    InitialParam w{dims, std::vector<float>(static_cast<size_t>(fan_in * l.out))};
    if (l.followed_by_relu) {  // He: N(0, 2 / fan_in)
      std::normal_distribution<float> he(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
      for (float& v : w.value) v = he(random);
    } else {  // Glorot: U(-a, a), a = sqrt(6 / (fan_in + fan_out))
      const float a = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
      std::uniform_real_distribution<float> glorot(-a, a);
      for (float& v : w.value) v = glorot(random);
    }
    params.push_back(std::move(w));
    params.push_back({{l.out}, std::vector<float>(static_cast<size_t>(l.out), 0.0f)});
  }
  return params;
}

}  // namespace stoke::internal

#include "train/loss.h"

#include <cmath>
#include <string>

namespace stoke::internal {

Status SoftmaxCrossEntropy(const float* logits, const int64_t* labels, int64_t n, int64_t classes,
                           float* diff, train::StepResult* result) {
  double loss = 0;
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t y = labels[i];
    if (y < 0 || y >= classes) {
      return InvalidArgumentError("label " + std::to_string(y) + " of sample " + std::to_string(i) +
                                  " of the batch is outside [0, " + std::to_string(classes) +
                                  ") for a model of " + std::to_string(classes) + " classes");
    }
    const float* z = logits + i * classes;
    int64_t best = 0;
    for (int64_t k = 1; k < classes; ++k) best = z[k] > z[best] ? k : best;
    const double top = z[best];
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(static_cast<double>(z[k]) - top);
    loss += std::log(sum) + top - z[y];
    correct += best == y;
    if (diff) {
      float* d = diff + i * classes;
      const double scale = 1.0 / (sum * static_cast<double>(n));
      for (int64_t k = 0; k < classes; ++k) {
        d[k] = static_cast<float>(std::exp(static_cast<double>(z[k]) - top) * scale);
      }
      d[y] -= static_cast<float>(1.0 / static_cast<double>(n));
    }
  }
  result->loss_sum += loss;
  result->correct += correct;
  result->samples += n;
  return Status::Ok();
}

void SgdUpdate(const train::TrainOptions& o, int64_t step, float* w, const float* g, float* v,
               size_t count) {
  const float lr = o.learning_rate, wd = o.weight_decay, mu = o.momentum;
  if (mu == 0.0f) {
    for (size_t i = 0; i < count; ++i) w[i] -= lr * (g[i] + wd * w[i]);
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    const float d = g[i] + wd * w[i];
    v[i] = step == 1 ? d : mu * v[i] + d;
    w[i] -= lr * v[i];
  }
}

void AdamUpdate(const train::TrainOptions& o, int64_t step, float* w, const float* g, float* m,
                float* v, size_t count) {
  const float b1 = o.beta1, b2 = o.beta2;
  const auto t = static_cast<double>(step);
  const auto correction1 = static_cast<float>(1.0 - std::pow(b1, t));
  const auto correction2 = static_cast<float>(std::sqrt(1.0 - std::pow(b2, t)));
  const float step_size = o.learning_rate / correction1;
  for (size_t i = 0; i < count; ++i) {
    const float d = g[i] + o.weight_decay * w[i];
    m[i] = b1 * m[i] + (1.0f - b1) * d;
    v[i] = b2 * v[i] + (1.0f - b2) * d * d;
    w[i] -= step_size * m[i] / (std::sqrt(v[i]) / correction2 + o.epsilon);
  }
}

}  // namespace stoke::internal

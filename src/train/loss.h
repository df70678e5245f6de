// Softmax cross-entropy over logits, and the optimisers' updates: plain loops
// on the host, shared by every CPU model.
#ifndef STOKE_SRC_TRAIN_LOSS_H_
#define STOKE_SRC_TRAIN_LOSS_H_

#include <cstdint>

#include "stoke/status.h"
#include "stoke/train.h"

namespace stoke::internal {

// For n rows of `classes` logits: adds each row's -log softmax[label] (in
// double) and whether its largest logit is the label to *result. With `diff`,
// writes d(mean loss)/d(logits) = (softmax - onehot) / n. InvalidArgument naming
// a label outside [0, classes).
Status SoftmaxCrossEntropy(const float* logits, const int64_t* labels, int64_t n, int64_t classes,
                           float* diff, train::StepResult* result);

// PyTorch's SGD: v = momentum v + (g + weight_decay w) (v = that gradient on
// the first step when momentum > 0); w -= lr v.
void SgdUpdate(const train::TrainOptions& o, int64_t step, float* w, const float* g, float* v,
               size_t count);
// PyTorch's Adam at step `step` (1-based), weight decay added to the gradient.
void AdamUpdate(const train::TrainOptions& o, int64_t step, float* w, const float* g, float* m,
                float* v, size_t count);

}  // namespace stoke::internal

#endif  // STOKE_SRC_TRAIN_LOSS_H_

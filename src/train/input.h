// The trainers' input stage: how a batch's samples become the model's float32
// input, the same on the CPU and the GPU. uint8 samples are scaled to [0, 1]
// (x / 255, rounded as the CPU does), float16 ones widened, float32 ones taken
// as they are; HWC samples (a uint8 image batch as decoded) are transposed into
// a CNN's channels-first input.
#ifndef STOKE_SRC_TRAIN_INPUT_H_
#define STOKE_SRC_TRAIN_INPUT_H_

#include <cstdint>

#include "stoke/batch.h"
#include "stoke/status.h"
#include "train/model_spec.h"

namespace stoke::internal {

struct InputFormat {
  DType dtype = DType::kUint8;  // uint8, float16 or float32
  bool transpose = false;       // HWC samples into a CNN's CHW input
  int64_t channels = 1;         // when transposing
  int64_t pixels = 0;           // per channel, when transposing
};

// How `batch` feeds `spec`. InvalidArgument naming the model, what it takes and
// what the batch holds: another dtype, another element count, or a CNN batch
// whose sample shape is neither the model's CxHxW nor its HxWxC.
StatusOr<InputFormat> InputFormatOf(const ModelSpec& spec, const Batch& batch);

// Converts `samples` samples of `elements` elements each from `in` (host
// memory, in `format`) to float32 channels-first in `out`.
void ToFloatInput(const InputFormat& format, const void* in, int64_t samples, int64_t elements,
                  float* out);

}  // namespace stoke::internal

#endif  // STOKE_SRC_TRAIN_INPUT_H_

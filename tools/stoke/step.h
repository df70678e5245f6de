// The consumer `stoke profile --step` models: none (the loader alone), a fixed
// step time (sleep:5ms), or a real stoke::train step (mlp:..., cnn:...).
#ifndef STOKE_TOOLS_STOKE_STEP_H_
#define STOKE_TOOLS_STOKE_STEP_H_

#include <chrono>
#include <memory>
#include <string>

#include "stoke/stoke.h"
#include "stoke/train.h"

namespace stoke::cli {

class Step {
 public:
  // "none", "sleep:T" (T with a unit: us, ms or s), or a model spec for samples
  // of `spec`, trained on `device` (the loader's: batches arrive there), on the
  // cpu with `threads` oneDNN threads. InvalidArgument naming the text.
  static StatusOr<std::unique_ptr<Step>> Parse(const std::string& text, const SampleSpec& spec,
                                               DeviceSpec device, int threads);
  // Consumes one batch; its time counts in busy_seconds() (on a GPU, until the
  // step is done: the step asks for its loss, which waits).
  Status Run(Batch& batch);
  double busy_seconds() const { return busy_seconds_; }
  // False for "none": the consumer takes no time of its own.
  bool bounded() const { return kind_ != Kind::kNone; }

 private:
  enum class Kind { kNone, kSleep, kTrain };
  Kind kind_ = Kind::kNone;
  std::chrono::nanoseconds sleep_{0};
  std::unique_ptr<train::Trainer> trainer_;
  train::StepResult result_;
  double busy_seconds_ = 0;
};

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_STEP_H_

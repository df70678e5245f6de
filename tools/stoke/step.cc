#include "step.h"

#include <cstdlib>
#include <thread>

namespace stoke::cli {

StatusOr<std::unique_ptr<Step>> Step::Parse(const std::string& text, const SampleSpec& spec,
                                            DeviceSpec device, int threads) {
  auto step = std::make_unique<Step>();
  if (text == "none") return step;
  if (text.starts_with("sleep:")) {
    const std::string value = text.substr(6);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    const std::string unit = end ? end : "";
    const double scale = unit == "us" ? 1e3 : unit == "ms" ? 1e6 : unit == "s" ? 1e9 : 0;
    if (value.empty() || end == value.c_str() || scale == 0 || !(v >= 0) || v * scale > 60e9) {
      return InvalidArgumentError("'" + text +
                                  "' is not sleep:T with T like 5ms, 500us or 0.1s "
                                  "(at most 60 s)");
    }
    step->kind_ = Kind::kSleep;
    step->sleep_ = std::chrono::nanoseconds(static_cast<int64_t>(v * scale));
    return step;
  }
  train::TrainOptions options;
  options.model = text;
  options.threads = threads;
  options.device = device;
  STOKE_ASSIGN_OR_RETURN(step->trainer_, train::Trainer::Open(options, spec));
  step->kind_ = Kind::kTrain;
  return step;
}

Status Step::Run(Batch& batch) {
  if (kind_ == Kind::kNone) return Status::Ok();
  const auto t0 = std::chrono::steady_clock::now();
  Status status = Status::Ok();
  if (kind_ == Kind::kSleep) {
    std::this_thread::sleep_for(sleep_);
  } else {
    status = trainer_->Step(batch, &result_);
  }
  busy_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return status;
}

}  // namespace stoke::cli

// Trainer::Open, and the CPU trainer: oneDNN for the layers (cpu_net.h), host
// loops for the input scaling, the loss and the optimiser. The GPU trainer is
// in cuda_trainer.cc.
#include <omp.h>

#include <cstring>
#include <string>

#include "stoke/train.h"
#include "train/cpu_net.h"
#include "train/cuda_trainer.h"
#include "train/input.h"
#include "train/loss.h"
#include "train/model_spec.h"

namespace stoke::train {
namespace {

class CpuTrainer final : public Trainer {
 public:
  CpuTrainer(const TrainOptions& options, std::unique_ptr<internal::CpuNet> net)
      : options_(options), net_(std::move(net)) {
    for (const internal::CpuNet::Param& p : net_->params()) {
      state1_.emplace_back(p.value.size(), 0.0f);
      if (options_.optimizer == Optimizer::kAdam) state2_.emplace_back(p.value.size(), 0.0f);
    }
  }

  Status Step(Batch& batch, StepResult* result) override {
    return Run(batch, true, result ? result : &pending_);
  }
  Status Evaluate(Batch& batch, StepResult* result) override {
    return Run(batch, false, result ? result : &pending_);
  }
  Status Collect(StepResult* result) override {
    result->loss_sum += pending_.loss_sum;
    result->correct += pending_.correct;
    result->samples += pending_.samples;
    pending_ = {};
    return Status::Ok();
  }

  std::string Describe() const override {
    return net_->spec().text + ", " + std::to_string(net_->spec().parameters) + " parameters, " +
           std::string(OptimizerName(options_.optimizer)) + ", cpu (oneDNN)";
  }
  int64_t classes() const override { return net_->spec().classes; }
  std::vector<std::vector<float>> Parameters() const override {
    std::vector<std::vector<float>> out;
    for (const internal::CpuNet::Param& p : net_->params()) out.push_back(p.value);
    return out;
  }

 private:
  Status Run(const Batch& batch, bool train, StepResult* result) {
    if (!batch) return InvalidArgumentError("Trainer: the batch is empty or released");
    if (options_.threads > 0) omp_set_num_threads(options_.threads);  // this thread's regions
    if (batch.device().kind != DeviceKind::kCpu) {
      return InvalidArgumentError("Trainer: a batch on " + DeviceName(batch.device()) +
                                  " needs a trainer on that device (TrainOptions.device)");
    }
    const int64_t n = batch.size();
    STOKE_ASSIGN_OR_RETURN(const internal::InputFormat format,
                           internal::InputFormatOf(net_->spec(), batch));
    STOKE_ASSIGN_OR_RETURN(float* input, net_->Input(n));
    internal::ToFloatInput(format, batch.data(), n, net_->spec().input_elements(), input);
    STOKE_RETURN_IF_ERROR(net_->Run(n, batch.labels().data(), train, result));
    if (!train) return Status::Ok();
    ++step_;
    std::vector<internal::CpuNet::Param>& params = net_->params();
    for (size_t i = 0; i < params.size(); ++i) {
      internal::CpuNet::Param& p = params[i];
      if (options_.optimizer == Optimizer::kSgd) {
        internal::SgdUpdate(options_, step_, p.value.data(), p.grad.data(), state1_[i].data(),
                            p.value.size());
      } else {
        internal::AdamUpdate(options_, step_, p.value.data(), p.grad.data(), state1_[i].data(),
                             state2_[i].data(), p.value.size());
      }
    }
    return Status::Ok();
  }

  const TrainOptions options_;
  std::unique_ptr<internal::CpuNet> net_;
  std::vector<std::vector<float>> state1_;  // momentum, or Adam's first moment
  std::vector<std::vector<float>> state2_;  // Adam's second moment
  int64_t step_ = 0;
  StepResult pending_;  // of steps given no result, for Collect
};

Status Invalid(const char* field, const std::string& why) {
  return InvalidArgumentError(std::string("TrainOptions.") + field + ": " + why);
}

}  // namespace

std::string_view OptimizerName(Optimizer optimizer) {
  return optimizer == Optimizer::kSgd ? "sgd" : "adam";
}

StatusOr<std::unique_ptr<Trainer>> Trainer::Open(const TrainOptions& o, const SampleSpec& input) {
  if (!(o.learning_rate > 0 && o.learning_rate < 1e3f)) {
    return Invalid("learning_rate", "must be in (0, 1000)");
  }
  if (!(o.momentum >= 0 && o.momentum < 1)) return Invalid("momentum", "must be in [0, 1)");
  if (!(o.weight_decay >= 0 && o.weight_decay < 1)) {
    return Invalid("weight_decay", "must be in [0, 1)");
  }
  if (!(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1)) {
    return Invalid("beta1/beta2", "must be in [0, 1)");
  }
  if (!(o.epsilon > 0)) return Invalid("epsilon", "must be positive");
  if (o.threads < 0 || o.threads > 4096) return Invalid("threads", "must be in [0, 4096]");
  STOKE_ASSIGN_OR_RETURN(internal::ModelSpec spec, internal::ParseModel(o.model, input));
  if (o.device.kind != DeviceKind::kCpu) return internal::OpenCudaTrainer(o, std::move(spec));
  STOKE_ASSIGN_OR_RETURN(std::unique_ptr<internal::CpuNet> net,
                         internal::CpuNet::Create(spec, o.seed));
  return std::unique_ptr<Trainer>(new CpuTrainer(o, std::move(net)));
}

}  // namespace stoke::train

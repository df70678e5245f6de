// The GPU trainer (cuda_trainer.h). Per batch size it keeps a pass: device
// activations and gradients, cuDNN descriptors and chosen algorithms, and,
// after the first run, a CUDA graph of the step (forward, loss, backward,
// update) and one of the evaluation. A step is then: wait for the batch on the
// GPU, scale it into the pass's input, copy its labels, launch the graph; the
// host waits only in Collect (or a Step given a result).
//
// Layouts are the CPU trainer's: activations NCHW (a linear layer's input is
// the flattened sample), weights row-major {out, in} or {out, in, 3, 3}. cuBLAS
// is column-major, so a row-major {rows, cols} matrix is its {cols, rows}
// matrix: Y = X W^T + b is gemm(T, N) on (W, X), and so on below.
#include "train/cuda_trainer.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_status.h"
#include "stoke/device.h"
#include "train/cuda_calls.h"
#include "train/cuda_kernels.h"
#include "train/cuda_libs.h"
#include "train/input.h"

namespace stoke::internal {
namespace {

// One layer of one pass: its descriptors and, for a convolution, algorithms.
struct LayerPass {
  LayerSpec::Kind kind = LayerSpec::Kind::kLinear;
  int64_t in = 0, out = 0;                 // linear features or conv channels
  cudnnTensorDescriptor_t x = nullptr;     // input (linear: n x in x 1 x 1)
  cudnnTensorDescriptor_t y = nullptr;     // output
  cudnnTensorDescriptor_t bias = nullptr;  // conv: 1 x out x 1 x 1
  cudnnFilterDescriptor_t w = nullptr;     // conv
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t forward_algo{};
  cudnnConvolutionBwdDataAlgo_t data_algo{};
  cudnnConvolutionBwdFilterAlgo_t filter_algo{};
  LayerPass() = default;
  LayerPass(const LayerPass&) = delete;
  LayerPass& operator=(const LayerPass&) = delete;
  ~LayerPass() {
    if (x) Lib().cudnnDestroyTensorDescriptor(x);
    if (y) Lib().cudnnDestroyTensorDescriptor(y);
    if (bias) Lib().cudnnDestroyTensorDescriptor(bias);
    if (w) Lib().cudnnDestroyFilterDescriptor(w);
    if (conv) Lib().cudnnDestroyConvolutionDescriptor(conv);
  }
};

struct Pass {
  int64_t n = 0;
  // acts[i] enters layer i, acts[layers] holds the logits; diffs[i] is the
  // gradient of the loss with respect to acts[i].
  std::vector<DeviceBuffer> acts, diffs;
  DeviceBuffer log_probs, labels, ones, staging;
  std::vector<std::unique_ptr<LayerPass>> layers;
  cudnnTensorDescriptor_t logits = nullptr;  // n x classes x 1 x 1
  cudaGraphExec_t step_graph = nullptr, eval_graph = nullptr;
  bool stepped = false, evaluated = false;  // run once, uncaptured
  Pass() = default;
  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;
  ~Pass() {
    if (step_graph) cudaGraphExecDestroy(step_graph);
    if (eval_graph) cudaGraphExecDestroy(eval_graph);
    if (logits) Lib().cudnnDestroyTensorDescriptor(logits);
  }
};

struct Param {
  std::vector<int64_t> dims;
  int64_t count = 0;
  DeviceBuffer value, grad, state1, state2;  // state: momentum, or Adam's moments
};

Status Describe4d(cudnnTensorDescriptor_t* d, int64_t n, int64_t c, int64_t h, int64_t w) {
  STOKE_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor, d);
  STOKE_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor, *d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                              static_cast<int>(n), static_cast<int>(c), static_cast<int>(h),
                              static_cast<int>(w));
  return Status::Ok();
}

class CudaTrainer final : public train::Trainer {
 public:
  CudaTrainer(const train::TrainOptions& options, ModelSpec spec)
      : options_(options), spec_(std::move(spec)) {}

  ~CudaTrainer() override {
    cudaSetDevice(options_.device.index);
    if (stream_) cudaStreamSynchronize(stream_);
    passes_.clear();
    params_.clear();
    if (relu_) Lib().cudnnDestroyActivationDescriptor(relu_);
    if (pool_) Lib().cudnnDestroyPoolingDescriptor(pool_);
    if (cudnn_) Lib().cudnnDestroy(cudnn_);
    if (cublas_) Lib().cublasDestroy_v2(cublas_);
    if (host_totals_) cudaFreeHost(host_totals_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  Status Init() {
    STOKE_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device.index));
    cudaDeviceProp prop{};
    STOKE_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, options_.device.index));
    gpu_name_ = prop.name;
    STOKE_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    STOKE_CUDNN_RETURN_IF_ERROR(cudnnCreate, &cudnn_);
    STOKE_CUDNN_RETURN_IF_ERROR(cudnnSetStream, cudnn_, stream_);
    STOKE_CUBLAS_RETURN_IF_ERROR(cublasCreate_v2, &cublas_);
    STOKE_CUBLAS_RETURN_IF_ERROR(cublasSetStream_v2, cublas_, stream_);
    // cuBLAS's own workspace, fixed before any capture (it must not allocate
    // inside a graph); plain FP32 math, as on the CPU.
    STOKE_RETURN_IF_ERROR(cublas_workspace_.Allocate(size_t{32} << 20));
    STOKE_CUBLAS_RETURN_IF_ERROR(cublasSetWorkspace_v2, cublas_, cublas_workspace_.get<void>(),
                                 cublas_workspace_.bytes());
    STOKE_CUBLAS_RETURN_IF_ERROR(cublasSetMathMode, cublas_, CUBLAS_DEFAULT_MATH);
    STOKE_CUDNN_RETURN_IF_ERROR(cudnnCreateActivationDescriptor, &relu_);
    STOKE_CUDNN_RETURN_IF_ERROR(cudnnSetActivationDescriptor, relu_, CUDNN_ACTIVATION_RELU,
                                CUDNN_PROPAGATE_NAN, 0.0);
    STOKE_CUDNN_RETURN_IF_ERROR(cudnnCreatePoolingDescriptor, &pool_);
    STOKE_CUDNN_RETURN_IF_ERROR(cudnnSetPooling2dDescriptor, pool_, CUDNN_POOLING_MAX,
                                CUDNN_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2);
    STOKE_RETURN_IF_ERROR(totals_.Allocate(sizeof(DeviceTotals)));
    STOKE_RETURN_IF_ERROR(step_count_.Allocate(sizeof(int64_t)));
    void* pinned = nullptr;
    STOKE_CUDA_RETURN_IF_ERROR(cudaMallocHost(&pinned, sizeof(DeviceTotals)));
    host_totals_ = static_cast<DeviceTotals*>(pinned);

    const bool adam = options_.optimizer == train::Optimizer::kAdam;
    for (InitialParam& initial : InitialParameters(spec_, options_.seed)) {
      auto p = std::make_unique<Param>();
      p->dims = initial.dims;
      p->count = static_cast<int64_t>(initial.value.size());
      const size_t bytes = initial.value.size() * sizeof(float);
      STOKE_RETURN_IF_ERROR(p->value.Allocate(bytes));
      STOKE_RETURN_IF_ERROR(p->grad.Allocate(bytes));
      STOKE_RETURN_IF_ERROR(p->state1.Allocate(bytes));
      if (adam) STOKE_RETURN_IF_ERROR(p->state2.Allocate(bytes));
      STOKE_CUDA_RETURN_IF_ERROR(
          cudaMemcpy(p->value.get(), initial.value.data(), bytes, cudaMemcpyHostToDevice));
      params_.push_back(std::move(p));
    }
    return Status::Ok();
  }

  Status Step(Batch& batch, train::StepResult* result) override { return Run(batch, true, result); }
  Status Evaluate(Batch& batch, train::StepResult* result) override {
    return Run(batch, false, result);
  }

  Status Collect(train::StepResult* result) override {
    STOKE_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device.index));
    train::StepResult device;
    STOKE_RETURN_IF_ERROR(CollectDevice(&device));
    result->loss_sum += held_.loss_sum + device.loss_sum;
    result->correct += held_.correct + device.correct;
    result->samples += held_.samples + device.samples;
    held_ = {};
    return Status::Ok();
  }

  std::string Describe() const override {
    return spec_.text + ", " + std::to_string(spec_.parameters) + " parameters, " +
           std::string(train::OptimizerName(options_.optimizer)) + ", " +
           DeviceName(options_.device) + " (" + gpu_name_ + "; cuDNN " +
           std::to_string(Lib().cudnnGetVersion()) + ", cuBLAS" +
           (options_.cuda_graphs ? ", CUDA graphs)" : ")");
  }
  int64_t classes() const override { return spec_.classes; }

  std::vector<std::vector<float>> Parameters() const override {
    std::vector<std::vector<float>> out;
    if (cudaSetDevice(options_.device.index) != cudaSuccess ||
        cudaStreamSynchronize(stream_) != cudaSuccess) {
      return out;
    }
    for (const auto& p : params_) {
      std::vector<float> host(static_cast<size_t>(p->count));
      if (cudaMemcpy(host.data(), p->value.get(), host.size() * sizeof(float),
                     cudaMemcpyDeviceToHost) != cudaSuccess) {
        return {};
      }
      out.push_back(std::move(host));
    }
    return out;
  }

 private:
  // The totals on the device since the last collection, waiting for them.
  Status CollectDevice(train::StepResult* result) {
    STOKE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        host_totals_, totals_.get<void>(), sizeof(DeviceTotals), cudaMemcpyDeviceToHost, stream_));
    STOKE_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(totals_.get<void>(), 0, sizeof(DeviceTotals), stream_));
    STOKE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    const DeviceTotals t = *host_totals_;
    const int64_t samples = pending_samples_;
    pending_samples_ = 0;
    if (t.bad_labels > 0) {
      return InvalidArgumentError("label " + std::to_string(t.first_bad_label) + " (and " +
                                  std::to_string(t.bad_labels - 1) +
                                  " more) of the batches is outside [0, " +
                                  std::to_string(spec_.classes) + ") for a model of " +
                                  std::to_string(spec_.classes) + " classes");
    }
    result->loss_sum += t.loss_sum;
    result->correct += static_cast<int64_t>(t.correct);
    result->samples += samples;
    return Status::Ok();
  }

  Status Run(Batch& batch, bool train, train::StepResult* result) {
    if (!batch) return InvalidArgumentError("Trainer: the batch is empty or released");
    STOKE_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device.index));
    const int64_t n = batch.size();
    STOKE_ASSIGN_OR_RETURN(const InputFormat format, InputFormatOf(spec_, batch));
    const DeviceSpec on = batch.device();
    if (on.kind == DeviceKind::kCuda && on.index != options_.device.index) {
      return InvalidArgumentError("Trainer: a batch on " + DeviceName(on) + " for a trainer on " +
                                  DeviceName(options_.device));
    }
    if (result != nullptr && pending_samples_ > 0) {  // keep earlier totals apart
      train::StepResult earlier;
      STOKE_RETURN_IF_ERROR(CollectDevice(&earlier));
      held_.loss_sum += earlier.loss_sum;
      held_.correct += earlier.correct;
      held_.samples += earlier.samples;
    }
    STOKE_ASSIGN_OR_RETURN(Pass * pass, PassFor(n));
    STOKE_RETURN_IF_ERROR(StageInput(batch, format, *pass));
    STOKE_RETURN_IF_ERROR(Launch(*pass, train));
    pending_samples_ += n;
    if (result != nullptr) return CollectDevice(result);
    return Status::Ok();
  }

  // The batch into the pass's input (scaled to float) and labels.
  Status StageInput(Batch& batch, const InputFormat& format, Pass& pass) {
    const size_t label_bytes = static_cast<size_t>(pass.n) * sizeof(int64_t);
    const void* samples = batch.data();
    if (batch.device().kind == DeviceKind::kCuda) {
      STOKE_RETURN_IF_ERROR(batch.MakeStreamWait(stream_));
      STOKE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(pass.labels.get<void>(), batch.device_labels(),
                                                 label_bytes, cudaMemcpyDeviceToDevice, stream_));
    } else {
      // A host batch: copied before Step returns, so the host waits for it.
      if (pass.staging.bytes() < batch.bytes()) {
        STOKE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
        STOKE_RETURN_IF_ERROR(pass.staging.Allocate(batch.bytes()));
      }
      STOKE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(pass.staging.get<void>(), batch.data(),
                                                 batch.bytes(), cudaMemcpyHostToDevice, stream_));
      STOKE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(pass.labels.get<void>(), batch.labels().data(),
                                                 label_bytes, cudaMemcpyHostToDevice, stream_));
      STOKE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
      samples = pass.staging.get<void>();
    }
    ToFloatArgs args;
    args.kind = format.dtype == DType::kUint8     ? ToFloatArgs::kUint8
                : format.dtype == DType::kFloat16 ? ToFloatArgs::kFloat16
                                                  : ToFloatArgs::kFloat32;
    args.transpose = format.transpose;
    args.samples = pass.n;
    args.elements = spec_.input_elements();
    args.channels = format.channels;
    args.pixels = format.pixels;
    STOKE_CUDA_RETURN_IF_ERROR(LaunchToFloat(args, samples, pass.acts[0].get(), stream_));
    return Status::Ok();
  }

  // The step or evaluation of `pass`: queued call by call the first time (cuDNN
  // and cuBLAS set themselves up then), captured as a graph the second, and
  // replayed from then on.
  Status Launch(Pass& pass, bool train) {
    cudaGraphExec_t& graph = train ? pass.step_graph : pass.eval_graph;
    bool& ran = train ? pass.stepped : pass.evaluated;
    if (!options_.cuda_graphs || !ran) {
      ran = true;
      return Enqueue(pass, train);
    }
    if (graph == nullptr) {
      STOKE_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      const Status queued = Enqueue(pass, train);
      cudaGraph_t captured = nullptr;
      const cudaError_t ended = cudaStreamEndCapture(stream_, &captured);
      if (!queued.ok()) {
        if (captured) cudaGraphDestroy(captured);
        return queued.WithContext("capturing the step as a CUDA graph");
      }
      STOKE_CUDA_RETURN_IF_ERROR(ended);
      const cudaError_t made = cudaGraphInstantiate(&graph, captured, 0);
      cudaGraphDestroy(captured);
      STOKE_CUDA_RETURN_IF_ERROR(made);
    }
    STOKE_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph, stream_));
    return Status::Ok();
  }

  Status Enqueue(Pass& pass, bool train) {
    const float one = 1.0f, zero = 0.0f;
    const int n = static_cast<int>(pass.n);
    const size_t layers = spec_.layers.size();
    void* workspace = workspace_.get<void>();
    const size_t workspace_bytes = workspace_.bytes();
    using Kind = LayerSpec::Kind;
    // Forward.
    size_t param = 0;
    std::vector<size_t> param_of(layers, 0);
    for (size_t i = 0; i < layers; ++i) {
      const LayerPass& l = *pass.layers[i];
      const float* x = pass.acts[i].get();
      float* y = pass.acts[i + 1].get();
      if (l.kind == Kind::kLinear || l.kind == Kind::kConv3x3) param_of[i] = param, param += 2;
      if (l.kind == Kind::kLinear) {
        const Param& w = *params_[param_of[i]];
        const Param& b = *params_[param_of[i] + 1];
        const int in = static_cast<int>(l.in), out = static_cast<int>(l.out);
        STOKE_CUBLAS_RETURN_IF_ERROR(cublasSgemm_v2, cublas_, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in,
                                     &one, w.value.get(), in, x, in, &zero, y, out);
        STOKE_CUDA_RETURN_IF_ERROR(LaunchAddBias(y, b.value.get(), pass.n, l.out, stream_));
      } else if (l.kind == Kind::kConv3x3) {
        const Param& w = *params_[param_of[i]];
        const Param& b = *params_[param_of[i] + 1];
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnConvolutionForward, cudnn_, &one, l.x, x, l.w,
                                    w.value.get(), l.conv, l.forward_algo, workspace,
                                    workspace_bytes, &zero, l.y, y);
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnAddTensor, cudnn_, &one, l.bias, b.value.get(), &one, l.y,
                                    y);
      } else if (l.kind == Kind::kRelu) {
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnActivationForward, cudnn_, relu_, &one, l.x, x, &zero, l.y,
                                    y);
      } else {
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnPoolingForward, cudnn_, pool_, &one, l.x, x, &zero, l.y,
                                    y);
      }
    }
    // Loss: cuDNN's log-softmax, then the loss, accuracy and gradient.
    STOKE_CUDNN_RETURN_IF_ERROR(cudnnSoftmaxForward, cudnn_, CUDNN_SOFTMAX_LOG,
                                CUDNN_SOFTMAX_MODE_INSTANCE, &one, pass.logits,
                                pass.acts[layers].get(), &zero, pass.logits, pass.log_probs.get());
    STOKE_CUDA_RETURN_IF_ERROR(LaunchSoftmaxLoss(
        pass.log_probs.get(), pass.labels.get<int64_t>(), pass.n, spec_.classes,
        train ? pass.diffs[layers].get() : nullptr, totals_.get<DeviceTotals>(), stream_));
    if (!train) return Status::Ok();
    // Backward: the parameters' gradients, and the input's where a layer
    // below needs it.
    for (size_t i = layers; i-- > 0;) {
      const LayerPass& l = *pass.layers[i];
      const float* x = pass.acts[i].get();
      const float* y = pass.acts[i + 1].get();
      const float* dy = pass.diffs[i + 1].get();
      float* dx = pass.diffs[i].get();
      if (l.kind == Kind::kLinear) {
        const Param& w = *params_[param_of[i]];
        const Param& b = *params_[param_of[i] + 1];
        const int in = static_cast<int>(l.in), out = static_cast<int>(l.out);
        STOKE_CUBLAS_RETURN_IF_ERROR(cublasSgemm_v2, cublas_, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n,
                                     &one, x, in, dy, out, &zero, w.grad.get(), in);
        STOKE_CUBLAS_RETURN_IF_ERROR(cublasSgemv_v2, cublas_, CUBLAS_OP_N, out, n, &one, dy, out,
                                     pass.ones.get(), 1, &zero, b.grad.get(), 1);
        if (i > 0) {
          STOKE_CUBLAS_RETURN_IF_ERROR(cublasSgemm_v2, cublas_, CUBLAS_OP_N, CUBLAS_OP_N, in, n,
                                       out, &one, w.value.get(), in, dy, out, &zero, dx, in);
        }
      } else if (l.kind == Kind::kConv3x3) {
        const Param& w = *params_[param_of[i]];
        const Param& b = *params_[param_of[i] + 1];
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardFilter, cudnn_, &one, l.x, x, l.y, dy,
                                    l.conv, l.filter_algo, workspace, workspace_bytes, &zero, l.w,
                                    w.grad.get());
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardBias, cudnn_, &one, l.y, dy, &zero,
                                    l.bias, b.grad.get());
        if (i > 0) {
          STOKE_CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardData, cudnn_, &one, l.w,
                                      w.value.get(), l.y, dy, l.conv, l.data_algo, workspace,
                                      workspace_bytes, &zero, l.x, dx);
        }
      } else if (i > 0 && l.kind == Kind::kRelu) {
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnActivationBackward, cudnn_, relu_, &one, l.y, y, l.y, dy,
                                    l.x, x, &zero, l.x, dx);
      } else if (i > 0) {
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnPoolingBackward, cudnn_, pool_, &one, l.y, y, l.y, dy, l.x,
                                    x, &zero, l.x, dx);
      }
    }
    // The update, at the step number the device counts.
    STOKE_CUDA_RETURN_IF_ERROR(LaunchCountStep(step_count_.get<int64_t>(), stream_));
    const OptimizerArgs o{options_.learning_rate, options_.momentum, options_.weight_decay,
                          options_.beta1,         options_.beta2,    options_.epsilon};
    for (const auto& p : params_) {
      if (options_.optimizer == train::Optimizer::kSgd) {
        STOKE_CUDA_RETURN_IF_ERROR(LaunchSgd(o, step_count_.get<int64_t>(), p->value.get(),
                                             p->grad.get(), p->state1.get(), p->count, stream_));
      } else {
        STOKE_CUDA_RETURN_IF_ERROR(LaunchAdam(o, step_count_.get<int64_t>(), p->value.get(),
                                              p->grad.get(), p->state1.get(), p->state2.get(),
                                              p->count, stream_));
      }
    }
    return Status::Ok();
  }

  StatusOr<Pass*> PassFor(int64_t n) {
    auto it = passes_.find(n);
    if (it != passes_.end()) return it->second.get();
    // Buffers may be freed and the workspace grown below: nothing queued may
    // still use them.
    STOKE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    auto pass = std::make_unique<Pass>();
    pass->n = n;
    using Kind = LayerSpec::Kind;
    // The shape entering each layer, as {C, H, W} (a vector is {F, 1, 1}).
    std::vector<std::array<int64_t, 3>> shapes;
    std::array<int64_t, 3> shape =
        spec_.input.size() == 1
            ? std::array<int64_t, 3>{spec_.input[0], 1, 1}
            : std::array<int64_t, 3>{spec_.input[0], spec_.input[1], spec_.input[2]};
    for (const LayerSpec& l : spec_.layers) {
      shapes.push_back(shape);
      if (l.kind == Kind::kLinear) shape = {l.out, 1, 1};
      if (l.kind == Kind::kConv3x3) shape = {l.out, l.height, l.width};
      if (l.kind == Kind::kMaxPool2x2) shape = {l.out, l.height / 2, l.width / 2};
    }
    shapes.push_back(shape);
    for (const auto& s : shapes) {
      const size_t bytes = static_cast<size_t>(n * s[0] * s[1] * s[2]) * sizeof(float);
      pass->acts.emplace_back();
      pass->diffs.emplace_back();
      STOKE_RETURN_IF_ERROR(pass->acts.back().Allocate(bytes));
      STOKE_RETURN_IF_ERROR(pass->diffs.back().Allocate(bytes));
    }
    STOKE_RETURN_IF_ERROR(
        pass->log_probs.Allocate(static_cast<size_t>(n * spec_.classes) * sizeof(float)));
    STOKE_RETURN_IF_ERROR(pass->labels.Allocate(static_cast<size_t>(n) * sizeof(int64_t)));
    STOKE_RETURN_IF_ERROR(pass->ones.Allocate(static_cast<size_t>(n) * sizeof(float)));
    const std::vector<float> ones(static_cast<size_t>(n), 1.0f);
    STOKE_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(pass->ones.get(), ones.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    STOKE_RETURN_IF_ERROR(Describe4d(&pass->logits, n, spec_.classes, 1, 1));

    size_t workspace_bytes = workspace_.bytes();
    for (size_t i = 0; i < spec_.layers.size(); ++i) {
      const LayerSpec& spec = spec_.layers[i];
      auto l = std::make_unique<LayerPass>();
      l->kind = spec.kind;
      l->in = spec.in;
      l->out = spec.out;
      const auto& in = shapes[i];
      const auto& out = shapes[i + 1];
      STOKE_RETURN_IF_ERROR(Describe4d(&l->x, n, in[0], in[1], in[2]));
      STOKE_RETURN_IF_ERROR(Describe4d(&l->y, n, out[0], out[1], out[2]));
      if (spec.kind == Kind::kConv3x3) {
        STOKE_RETURN_IF_ERROR(Describe4d(&l->bias, 1, spec.out, 1, 1));
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor, &l->w);
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor, l->w, CUDNN_DATA_FLOAT,
                                    CUDNN_TENSOR_NCHW, static_cast<int>(spec.out),
                                    static_cast<int>(spec.in), 3, 3);
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor, &l->conv);
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor, l->conv, 1, 1, 1, 1, 1, 1,
                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
        // FP32 arithmetic (no TF32), as on the CPU.
        STOKE_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType, l->conv, CUDNN_FMA_MATH);
        STOKE_RETURN_IF_ERROR(ChooseAlgorithms(*l, &workspace_bytes));
      }
      pass->layers.push_back(std::move(l));
    }
    if (workspace_bytes > workspace_.bytes()) {
      // Captured graphs hold the old workspace's address: capture them again.
      for (auto& [size, p] : passes_) {
        if (p->step_graph) cudaGraphExecDestroy(p->step_graph);
        if (p->eval_graph) cudaGraphExecDestroy(p->eval_graph);
        p->step_graph = p->eval_graph = nullptr;
      }
      STOKE_RETURN_IF_ERROR(workspace_.Allocate(workspace_bytes));
    }
    Pass* raw = pass.get();
    passes_[n] = std::move(pass);
    return raw;
  }

  // cuDNN's heuristic choice for each direction of a convolution: the first
  // that works within 1 GiB of workspace, a deterministic one where offered.
  Status ChooseAlgorithms(LayerPass& l, size_t* workspace_bytes) {
    constexpr size_t kLimit = size_t{1} << 30;
    constexpr int kMax = 16;
    int found = 0;
    cudnnConvolutionFwdAlgoPerf_t forward[kMax];
    STOKE_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithm_v7, cudnn_, l.x, l.w, l.conv,
                                l.y, kMax, &found, forward);
    STOKE_ASSIGN_OR_RETURN(const cudnnConvolutionFwdAlgoPerf_t* f, Pick(forward, found, kLimit));
    cudnnConvolutionBwdDataAlgoPerf_t data[kMax];
    STOKE_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithm_v7, cudnn_, l.w, l.y,
                                l.conv, l.x, kMax, &found, data);
    STOKE_ASSIGN_OR_RETURN(const cudnnConvolutionBwdDataAlgoPerf_t* d, Pick(data, found, kLimit));
    cudnnConvolutionBwdFilterAlgoPerf_t filter[kMax];
    STOKE_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithm_v7, cudnn_, l.x, l.y,
                                l.conv, l.w, kMax, &found, filter);
    STOKE_ASSIGN_OR_RETURN(const cudnnConvolutionBwdFilterAlgoPerf_t* g,
                           Pick(filter, found, kLimit));
    l.forward_algo = f->algo;
    l.data_algo = d->algo;
    l.filter_algo = g->algo;
    *workspace_bytes = std::max({*workspace_bytes, f->memory, d->memory, g->memory});
    return Status::Ok();
  }

  template <typename Perf>
  static StatusOr<const Perf*> Pick(const Perf* perf, int count, size_t limit) {
    const Perf* any = nullptr;
    for (int i = 0; i < count; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > limit) continue;
      if (perf[i].determinism == CUDNN_DETERMINISTIC) return &perf[i];
      if (any == nullptr) any = &perf[i];
    }
    if (any != nullptr) return any;
    return InternalError("cuDNN offers no convolution algorithm for this layer within " +
                         std::to_string(limit >> 20) + " MiB of workspace");
  }

  const train::TrainOptions options_;
  const ModelSpec spec_;
  std::string gpu_name_;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudnnActivationDescriptor_t relu_ = nullptr;
  cudnnPoolingDescriptor_t pool_ = nullptr;
  DeviceBuffer cublas_workspace_, workspace_, totals_, step_count_;
  DeviceTotals* host_totals_ = nullptr;  // pinned
  std::vector<std::unique_ptr<Param>> params_;
  std::map<int64_t, std::unique_ptr<Pass>> passes_;
  int64_t pending_samples_ = 0;  // in the device totals
  train::StepResult held_;       // collected early (by a Step given a result)
};

}  // namespace

StatusOr<std::unique_ptr<train::Trainer>> OpenCudaTrainer(const train::TrainOptions& options,
                                                          ModelSpec spec) {
  const int visible = CudaDeviceCount();
  if (options.device.index >= visible) {
    return UnavailableError("TrainOptions.device = " + DeviceName(options.device) +
                            ": no such CUDA device (" + std::to_string(visible) + " visible)");
  }
  if (const StatusOr<const CudaLibs*> libs = LoadCudaLibs(); !libs.ok()) {
    return libs.status().WithContext("TrainOptions.device = " + DeviceName(options.device));
  }
  auto trainer = std::make_unique<CudaTrainer>(options, std::move(spec));
  if (Status s = trainer->Init(); !s.ok()) {
    return s.WithContext("TrainOptions.device = " + DeviceName(options.device));
  }
  return std::unique_ptr<train::Trainer>(std::move(trainer));
}

}  // namespace stoke::internal

#include "train/cuda_kernels.h"

#include <cuda_fp16.h>

#include <cfloat>

namespace stoke::internal {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks > 0 ? blocks : 1) : 65535 * 16);
}

// Output element i (sample n, element k of its channels-first input) from the
// input element it comes from: the same index, or, transposing HWC, pixel p's
// channel c.
__global__ void ToFloat(ToFloatArgs a, const void* in, float* out) {
  const int64_t count = a.samples * a.elements;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t from = i;
    if (a.transpose) {
      const int64_t n = i / a.elements;
      const int64_t k = i - n * a.elements;
      const int64_t c = k / a.pixels;
      from = n * a.elements + (k - c * a.pixels) * a.channels + c;
    }
    switch (a.kind) {
      case ToFloatArgs::kUint8:
        out[i] =
            __fmul_rn(static_cast<float>(static_cast<const uint8_t*>(in)[from]), 1.0f / 255.0f);
        break;
      case ToFloatArgs::kFloat16:
        out[i] = __half2float(static_cast<const __half*>(in)[from]);
        break;
      default:
        out[i] = static_cast<const float*>(in)[from];
    }
  }
}

__global__ void AddBias(float* y, const float* bias, int64_t n, int64_t features) {
  const int64_t count = n * features;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] += bias[i % features];
  }
}

__global__ void SoftmaxLoss(const float* logp, const int64_t* labels, int64_t n, int64_t classes,
                            float* diff, DeviceTotals* totals) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const float* row = logp + i * classes;
  const int64_t y = labels[i];
  float* d = diff ? diff + i * classes : nullptr;
  if (y < 0 || y >= classes) {
    if (atomicAdd(&totals->bad_labels, 1ULL) == 0) totals->first_bad_label = y;
    if (d) {
      for (int64_t k = 0; k < classes; ++k) d[k] = 0.0f;
    }
    return;
  }
  int64_t best = 0;
  for (int64_t k = 1; k < classes; ++k) best = row[k] > row[best] ? k : best;
  atomicAdd(&totals->loss_sum, -static_cast<double>(row[y]));
  if (best == y) atomicAdd(&totals->correct, 1ULL);
  if (d) {
    const float inv_n = 1.0f / static_cast<float>(n);
    for (int64_t k = 0; k < classes; ++k) {
      d[k] = (expf(row[k]) - (k == y ? 1.0f : 0.0f)) * inv_n;
    }
  }
}

__global__ void CountStep(int64_t* step) { ++*step; }

__global__ void Sgd(OptimizerArgs o, const int64_t* step, float* w, const float* g, float* v,
                    int64_t count) {
  const bool first = *step == 1;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float d = g[i] + o.weight_decay * w[i];
    if (o.momentum == 0.0f) {
      w[i] -= o.learning_rate * d;
    } else {
      v[i] = first ? d : o.momentum * v[i] + d;
      w[i] -= o.learning_rate * v[i];
    }
  }
}

__global__ void Adam(OptimizerArgs o, const int64_t* step, float* w, const float* g, float* m,
                     float* v, int64_t count) {
  const double t = static_cast<double>(*step);
  const auto correction1 = static_cast<float>(1.0 - pow(static_cast<double>(o.beta1), t));
  const auto correction2 = static_cast<float>(sqrt(1.0 - pow(static_cast<double>(o.beta2), t)));
  const float step_size = o.learning_rate / correction1;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float d = g[i] + o.weight_decay * w[i];
    m[i] = o.beta1 * m[i] + (1.0f - o.beta1) * d;
    v[i] = o.beta2 * v[i] + (1.0f - o.beta2) * d * d;
    w[i] -= step_size * m[i] / (sqrtf(v[i]) / correction2 + o.epsilon);
  }
}

}  // namespace

cudaError_t LaunchToFloat(const ToFloatArgs& args, const void* in, float* out,
                          cudaStream_t stream) {
  ToFloat<<<Blocks(args.samples * args.elements), kThreads, 0, stream>>>(args, in, out);
  return cudaGetLastError();
}

cudaError_t LaunchAddBias(float* y, const float* bias, int64_t n, int64_t features,
                          cudaStream_t stream) {
  AddBias<<<Blocks(n * features), kThreads, 0, stream>>>(y, bias, n, features);
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxLoss(const float* logp, const int64_t* labels, int64_t n, int64_t classes,
                              float* diff, DeviceTotals* totals, cudaStream_t stream) {
  SoftmaxLoss<<<Blocks(n), kThreads, 0, stream>>>(logp, labels, n, classes, diff, totals);
  return cudaGetLastError();
}

cudaError_t LaunchCountStep(int64_t* step, cudaStream_t stream) {
  CountStep<<<1, 1, 0, stream>>>(step);
  return cudaGetLastError();
}

cudaError_t LaunchSgd(const OptimizerArgs& o, const int64_t* step, float* w, const float* g,
                      float* v, int64_t count, cudaStream_t stream) {
  Sgd<<<Blocks(count), kThreads, 0, stream>>>(o, step, w, g, v, count);
  return cudaGetLastError();
}

cudaError_t LaunchAdam(const OptimizerArgs& o, const int64_t* step, float* w, const float* g,
                       float* m, float* v, int64_t count, cudaStream_t stream) {
  Adam<<<Blocks(count), kThreads, 0, stream>>>(o, step, w, g, m, v, count);
  return cudaGetLastError();
}

}  // namespace stoke::internal

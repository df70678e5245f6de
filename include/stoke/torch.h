// stoke/torch.h: batches as libtorch tensors (target stoke::torch, built when
// CMake finds Torch; header-only, so it compiles against the consumer's own
// libtorch and its ABI).
//
// ToTensors takes a Batch and returns its images and labels as at::Tensors over
// the batch's own memory: the ring slot on the cpu device, the device buffer on
// a CUDA device. Nothing is copied. The two tensors share the batch's lease: the
// slot or buffer goes back to the loader when the last tensor (or view of one)
// using it is freed. Hold them only as long as the step that reads them: a
// loader of K ring slots (D device buffers) whose consumer holds K (D) batches
// gets ResourceExhausted from its next Next(), naming ring_slots or
// device_buffers, instead of waiting forever. clone() what must be kept.
//
// On a CUDA device, ToTensors makes the current c10 CUDA stream (the one
// libtorch queues the step's kernels on) wait for the batch's copy, on the GPU;
// when the last tensor is freed, the buffer is guarded by the work queued on
// that stream so far and refilled only after it. The host never synchronises.
// Work that reads the tensors on another stream must be joined back before they
// are freed (the current stream made to wait on an event recorded after that
// work); Tensor::record_stream does not apply, as the memory is the loader's,
// not libtorch's caching allocator's.
//
// Images: a batch of HxWxC samples (uint8, as images decode) comes as
// {N, C, H, W} in channels-last memory format (libtorch's NHWC strides), which
// torch::nn's convolutions take as they are; a CHW batch (float16 or float32
// after the loader's conversion) comes as contiguous {N, C, H, W}; any other
// sample shape as {N, dims...}. Labels: {N} int64, on the batch's device.
//
// Tensors must not outlive their Loader, as Batches must not: free them first,
// or pass the loader (as a shared_ptr) for the tensors to keep alive.
//
//   for (stoke::Batch& batch : loader->Epoch(epoch)) {
//     auto [images, labels] = stoke::torch::ToTensors(std::move(batch));
//     torch::Tensor loss = torch::nll_loss(model->forward(images.to(torch::kFloat)), labels);
//     ...
//   }  // the slot or buffer returns when images and labels are freed
#ifndef STOKE_TORCH_H_
#define STOKE_TORCH_H_

#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>

#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#ifdef STOKE_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

#include "stoke/batch.h"
#include "stoke/status.h"

namespace stoke::torch {

// A batch's samples and labels, sharing its lease.
struct Tensors {
  at::Tensor images;
  at::Tensor labels;
};

// The scalar type of a batch's dtype.
inline at::ScalarType ScalarType(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
      return at::kByte;
    case DType::kInt8:
      return at::kChar;
    case DType::kInt16:
      return at::kShort;
    case DType::kInt32:
      return at::kInt;
    case DType::kInt64:
      return at::kLong;
    case DType::kFloat16:
      return at::kHalf;
    case DType::kFloat32:
      return at::kFloat;
    case DType::kFloat64:
      return at::kDouble;
  }
  throw std::invalid_argument("stoke::torch: a batch of an unknown dtype");
}

namespace internal {
// The lease the tensors share: `keep_alive` (the loader, when given) is
// declared first, so it is destroyed after the batch is released.
struct Lease {
  std::shared_ptr<const void> keep_alive;
  Batch batch;
};
}  // namespace internal

// Takes `batch` and returns its images and labels as tensors over its memory
// (see above). Throws std::invalid_argument for an empty batch (the end of an
// epoch), stoke::Error with the CUDA call's Status when the stream cannot be
// made to wait, and std::runtime_error for a CUDA batch when this libtorch was
// found without CUDA.
inline Tensors ToTensors(Batch&& batch, std::shared_ptr<const void> keep_alive = nullptr) {
  if (!batch) throw std::invalid_argument("stoke::torch::ToTensors: an empty batch (end of epoch)");
  const DeviceSpec device = batch.device();
  at::Device where(at::kCPU);
  if (device.kind == DeviceKind::kCuda) {
#ifdef STOKE_TORCH_CUDA
    where = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device.index));
    CUstream_st* stream = c10::cuda::getCurrentCUDAStream(where.index()).stream();
    if (Status s = batch.MakeStreamWait(stream); !s.ok()) throw Error(s);
#else
    throw std::runtime_error(
        "stoke::torch::ToTensors: a batch on cuda:" + std::to_string(device.index) +
        ", but stoke::torch was built against a libtorch without CUDA");
#endif
  }
  auto lease = std::make_shared<internal::Lease>();
  lease->keep_alive = std::move(keep_alive);
  lease->batch = std::move(batch);
  const Batch& b = lease->batch;
  // Each tensor's storage holds a share of the lease; the last frees it.
  auto share = [lease](void*) mutable { lease.reset(); };

  const auto dims = b.shape();
  std::vector<int64_t> shape(dims.begin(), dims.end());
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  if (b.channels_last() && shape.size() == 4) {
    // {N, H, W, C} in memory, {N, C, H, W} to torch: channels-last strides.
    shape = {dims[0], dims[3], dims[1], dims[2]};
    strides = {dims[1] * dims[2] * dims[3], 1, dims[2] * dims[3], dims[3]};
  }
  Tensors t;
  t.images = at::from_blob(const_cast<void*>(b.data()), shape, strides, share,
                           at::TensorOptions().dtype(ScalarType(b.dtype())).device(where));
  const int64_t* labels = device.kind == DeviceKind::kCuda ? b.device_labels() : b.labels().data();
  t.labels = at::from_blob(const_cast<int64_t*>(labels), {b.size()}, share,
                           at::TensorOptions().dtype(at::kLong).device(where));
  return t;
}

}  // namespace stoke::torch

#endif  // STOKE_TORCH_H_

// stoke/batch.h: one batch, a move-only lease on one ring slot or device buffer.
//
// On the cpu device the batch's samples live in the loader's ring slot, written
// there in place by the loader's threads; nothing is copied to hand it over. On
// a CUDA device (LoaderOptions::device) they live in one of the loader's device
// buffers, copied there on the loader's copy stream: data() is a device pointer,
// and the consumer's stream must wait for the copy (MakeStreamWait) before it
// reads them. Destroying the Batch (or calling Release) gives the slot or buffer
// back; a device buffer is refilled only after the work queued on the consumer's
// stream up to the release has finished, so release a batch as soon as its step
// is queued, without synchronising. Hold a batch only as long as the step that
// reads it: a ring of K slots (or D device buffers) stalls while the consumer
// holds K (D) batches. A Batch must not outlive its Loader: destroying a
// Loader while a Batch holds one of its buffers aborts, saying so.
//
// Thread safety: a Batch may be moved to and released on another thread; one Batch
// object is not safe for concurrent use.
//
//   for (stoke::Batch& batch : loader->Epoch(0)) {
//     const uint8_t* pixels = batch.data<uint8_t>();   // size() x sample shape
//     stoke::Span<const int64_t> labels = batch.labels();
//   }
//
//   // device = cuda: the step's stream waits on the copy, on the GPU.
//   for (stoke::Batch& batch : loader->Epoch(0)) {
//     if (stoke::Status s = batch.MakeStreamWait(stream); !s.ok()) return s;
//     Step<<<grid, block, 0, stream>>>(batch.data<float>(), batch.device_labels());
//   }  // released here: the buffer is reused after the step, not before
#ifndef STOKE_BATCH_H_
#define STOKE_BATCH_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "stoke/dataset.h"
#include "stoke/device.h"
#include "stoke/span.h"
#include "stoke/status.h"

namespace stoke {

namespace internal {
// Implemented by the loader (ring slots) and its copy engine (device buffers).
class SlotOwner {
 public:
  // Takes lease `lease` back; a device buffer once the work queued on `stream`
  // (null: CUDA's legacy default stream) has finished.
  virtual void ReleaseLease(int lease, CUstream_st* stream) = 0;
  // Before ReleaseLease(lease, into): makes `into` wait for the work queued on
  // `from` so far, so that the release guards the work of both. A failure is
  // the owner's sticky error.
  virtual void JoinStreams(int lease, CUstream_st* into, CUstream_st* from) = 0;
  virtual Status MakeStreamWait(int lease, CUstream_st* stream) = 0;
  virtual Status CopyToHost(int lease, void* out, size_t bytes) = 0;

 protected:
  ~SlotOwner() = default;
};
}  // namespace internal

class Batch {
 public:
  // An empty batch: what Loader::Next returns at the end of an epoch.
  Batch() = default;
  Batch(Batch&& other) noexcept { *this = std::move(other); }
  Batch& operator=(Batch&& other) noexcept;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch() { Release(); }

  // False for an empty batch (end of epoch) and after Release.
  explicit operator bool() const { return owner_ != nullptr; }

  // Samples in the batch: batch_size, or fewer for an epoch's last batch.
  int64_t size() const { return size_; }
  int64_t epoch() const { return epoch_; }
  // The batch's number within its epoch.
  int64_t index() const { return index_; }
  // {size(), sample dims...}, e.g. {32, 28, 28}.
  Span<const int64_t> shape() const { return {shape_.data(), static_cast<size_t>(rank_)}; }
  DType dtype() const { return dtype_; }
  // Whether a sample's last dimension is its channels (HWC, as images decode);
  // false for channels first (CHW), which float16 and float32 batches always
  // are (the loader's conversion transposes).
  bool channels_last() const { return channels_last_; }
  size_t bytes() const { return bytes_; }
  // Where data() and device_labels() point: cpu, or the CUDA device.
  DeviceSpec device() const { return device_; }

  // The samples, contiguous, C order, native byte order: host memory on the cpu
  // device, device memory on a CUDA device. Valid until Release (on a CUDA
  // device: for work queued on a stream before Release).
  const void* data() const { return data_; }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  // One label per sample.
  Span<const int64_t> labels() const { return {labels_, static_cast<size_t>(size_)}; }
  // The dataset index of each sample (after any skip-and-refill).
  Span<const uint64_t> indices() const { return {indices_, static_cast<size_t>(size_)}; }
  // The labels where data() is: device memory on a CUDA device (int64, size()
  // of them), the same as labels() on the cpu device.
  const int64_t* device_labels() const { return device_labels_; }

  // Makes `stream` (a cudaStream_t) wait, on the GPU and without blocking the
  // host, until this batch's copy and conversion are complete, and remembers
  // it: Release then guards the buffer with the work queued on `stream`. Call
  // it before queueing the work that reads the batch. Up to two streams (the
  // images read on one, the labels on another): Release guards the buffer
  // with the work of both (the first then waits for the second's, from the
  // release on). On the cpu device there is nothing to wait for: OK. The CUDA
  // call and its message on failure; InvalidArgument for an empty batch or a
  // third stream.
  Status MakeStreamWait(CUstream_st* stream);

  // Copies the samples (bytes() of them) to host memory `out`, waiting for the
  // batch's copy to complete first: a host synchronisation, meant for checks,
  // digests and debugging, not for a training loop. InvalidArgument for an
  // empty batch or an `out` shorter than bytes(); the CUDA error otherwise.
  Status CopyToHost(Span<std::byte> out) const;

  // Gives the slot or buffer back now (see above). Idempotent. On a CUDA device
  // without MakeStreamWait, the buffer is guarded by CUDA's legacy default
  // stream of the calling thread's current device, which must then be the
  // batch's device (else the CUDA error is the loader's next error).
  void Release();

 private:
  friend class LoaderImpl;
  internal::SlotOwner* owner_ = nullptr;
  int slot_ = -1;
  int64_t size_ = 0;
  int64_t epoch_ = 0;
  int64_t index_ = 0;
  // Up to 8 sample dimensions plus the batch dimension; no allocation per batch.
  std::array<int64_t, 9> shape_{};
  int rank_ = 0;
  DType dtype_ = DType::kUint8;
  bool channels_last_ = false;
  size_t bytes_ = 0;
  const void* data_ = nullptr;
  const int64_t* labels_ = nullptr;
  const uint64_t* indices_ = nullptr;
  const int64_t* device_labels_ = nullptr;
  DeviceSpec device_{};
  // The streams given to MakeStreamWait, in order; streams_[0..stream_count_).
  std::array<CUstream_st*, 2> streams_{};
  int stream_count_ = 0;
};

}  // namespace stoke

#endif  // STOKE_BATCH_H_

#include "ring/ring.h"

namespace stoke::internal {
namespace {

constexpr size_t kPage = kHostPage;

size_t RoundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

// Per-slot layout: samples, then labels, then indices, each page-aligned.
size_t SlotStride(int64_t batch_size, size_t sample_bytes) {
  const auto b = static_cast<size_t>(batch_size);
  return RoundUp(b * sample_bytes, kPage) + RoundUp(b * sizeof(int64_t), kPage) +
         RoundUp(b * sizeof(uint64_t), kPage);
}

}  // namespace

void Slot::RecordError(int64_t position, Status status) {
  std::lock_guard<std::mutex> lock(error_mu_);
  if (error_position_ < 0 || position < error_position_) {
    error_position_ = position;
    error_ = std::move(status);
  }
}

void Slot::RecordSkip(uint64_t index, Status status) {
  std::lock_guard<std::mutex> lock(error_mu_);
  skips_.emplace_back(index, std::move(status));
}

void Slot::ClearErrors() {
  std::lock_guard<std::mutex> lock(error_mu_);
  error_position_ = -1;
  error_ = Status::Ok();
  skips_.clear();
}

void Slot::TakeSkips(std::vector<std::pair<uint64_t, Status>>* out) {
  std::lock_guard<std::mutex> lock(error_mu_);
  for (auto& skip : skips_) out->push_back(std::move(skip));
  skips_.clear();
}

Status Slot::error() const {
  std::lock_guard<std::mutex> lock(error_mu_);
  return error_;
}

uint64_t Ring::BytesFor(int slots, int64_t batch_size, size_t sample_bytes) {
  return static_cast<uint64_t>(slots) * SlotStride(batch_size, sample_bytes);
}

StatusOr<std::unique_ptr<Ring>> Ring::Create(int slots, int64_t batch_size, size_t sample_bytes,
                                             HostMemory* memory) {
  std::unique_ptr<Ring> ring(new Ring());
  const size_t stride = SlotStride(batch_size, sample_bytes);
  STOKE_ASSIGN_OR_RETURN(ring->buffer_, HostBuffer::Allocate(memory, stride * slots));
  ring->sample_bytes_ = sample_bytes;
  const auto b = static_cast<size_t>(batch_size);
  for (int i = 0; i < slots; ++i) {
    auto slot = std::make_unique<Slot>();
    std::byte* base = ring->buffer_.data() + stride * i;
    slot->data = base;
    base += RoundUp(b * sample_bytes, kPage);
    slot->labels = reinterpret_cast<int64_t*>(base);
    base += RoundUp(b * sizeof(int64_t), kPage);
    slot->indices = reinterpret_cast<uint64_t*>(base);
    ring->slots_.push_back(std::move(slot));
  }
  return ring;
}

}  // namespace stoke::internal

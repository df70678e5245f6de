#include "ring/ring.h"

#include <cstdlib>
#include <new>

namespace stoke::internal {
namespace {

constexpr size_t kPage = 4096;

size_t RoundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

class AlignedMemory final : public HostMemory {
 public:
  StatusOr<std::byte*> Allocate(size_t bytes) override {
    void* p = std::aligned_alloc(kPage, RoundUp(bytes == 0 ? 1 : bytes, kPage));
    if (!p) {
      return ResourceExhaustedError("could not allocate " + std::to_string(bytes) +
                                    " bytes of host memory");
    }
    return static_cast<std::byte*>(p);
  }
  void Free(std::byte* p, size_t) override { std::free(p); }
};

// Per-slot layout: samples, then labels, then indices, each page-aligned.
size_t SlotStride(int64_t batch_size, size_t sample_bytes) {
  const auto b = static_cast<size_t>(batch_size);
  return RoundUp(b * sample_bytes, kPage) + RoundUp(b * sizeof(int64_t), kPage) +
         RoundUp(b * sizeof(uint64_t), kPage);
}

}  // namespace

HostMemory* AlignedHostMemory() {
  static HostMemory* memory = new AlignedMemory();
  return memory;
}

StatusOr<HostBuffer> HostBuffer::Allocate(HostMemory* memory, size_t bytes) {
  STOKE_ASSIGN_OR_RETURN(std::byte * p, memory->Allocate(bytes));
  HostBuffer b;
  b.memory_ = memory;
  b.data_ = p;
  b.size_ = bytes;
  return b;
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    if (data_) memory_->Free(data_, size_);
    memory_ = o.memory_;
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

HostBuffer::~HostBuffer() {
  if (data_) memory_->Free(data_, size_);
}

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

uint64_t Arena::BytesFor(int count, size_t capacity) {
  return static_cast<uint64_t>(count) * RoundUp(capacity, kPage);
}

StatusOr<std::unique_ptr<Arena>> Arena::Create(int count, size_t capacity, HostMemory* memory) {
  std::unique_ptr<Arena> arena(new Arena());
  arena->capacity_ = capacity;
  arena->stride_ = RoundUp(capacity, kPage);
  STOKE_ASSIGN_OR_RETURN(arena->buffer_,
                         HostBuffer::Allocate(memory, arena->stride_ * static_cast<size_t>(count)));
  return arena;
}

}  // namespace stoke::internal

#include "util/host_memory.h"

#include <cstdlib>
#include <new>
#include <string>

namespace stoke::internal {
namespace {

size_t RoundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

class AlignedMemory final : public HostMemory {
 public:
  StatusOr<std::byte*> Allocate(size_t bytes) override {
    void* p = std::aligned_alloc(kHostPage, RoundUp(bytes == 0 ? 1 : bytes, kHostPage));
    if (!p) {
      return ResourceExhaustedError("could not allocate " + std::to_string(bytes) +
                                    " bytes of host memory");
    }
    return static_cast<std::byte*>(p);
  }
  void Free(std::byte* p, size_t) override { std::free(p); }
};

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

}  // namespace stoke::internal

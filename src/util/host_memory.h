// Host memory for the loader's fixed buffers: a HostMemory hands out
// page-aligned blocks (plain aligned memory, or pinned memory from a CUDA
// device), and a HostBuffer owns one block. Knows nothing of CUDA.
//
// Thread safety: AlignedHostMemory() may be called from any thread; a
// HostBuffer is owned by one object.
#ifndef STOKE_SRC_UTIL_HOST_MEMORY_H_
#define STOKE_SRC_UTIL_HOST_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <utility>

#include "stoke/status.h"

namespace stoke::internal {

inline constexpr size_t kHostPage = 4096;

// Where slot and arena memory comes from.
class HostMemory {
 public:
  virtual ~HostMemory() = default;
  // `bytes` of memory aligned to 4096. ResourceExhausted on failure.
  virtual StatusOr<std::byte*> Allocate(size_t bytes) = 0;
  virtual void Free(std::byte* p, size_t bytes) = 0;
};

// Plain page-aligned memory (the host device). Never null; lives forever.
HostMemory* AlignedHostMemory();

// One block of memory from a HostMemory, freed on destruction.
class HostBuffer {
 public:
  HostBuffer() = default;
  static StatusOr<HostBuffer> Allocate(HostMemory* memory, size_t bytes);
  HostBuffer(HostBuffer&& o) noexcept { *this = std::move(o); }
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  ~HostBuffer();
  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  HostMemory* memory_ = nullptr;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_UTIL_HOST_MEMORY_H_

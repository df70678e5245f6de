#include "io/arena.h"

namespace stoke::internal {
namespace {

size_t RoundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

uint64_t Arena::BytesFor(int count, size_t capacity) {
  return static_cast<uint64_t>(count) * RoundUp(capacity, kHostPage);
}

StatusOr<std::unique_ptr<Arena>> Arena::Create(int count, size_t capacity, HostMemory* memory) {
  std::unique_ptr<Arena> arena(new Arena());
  arena->capacity_ = capacity;
  arena->stride_ = RoundUp(capacity, kHostPage);
  STOKE_ASSIGN_OR_RETURN(arena->buffer_,
                         HostBuffer::Allocate(memory, arena->stride_ * static_cast<size_t>(count)));
  return arena;
}

}  // namespace stoke::internal

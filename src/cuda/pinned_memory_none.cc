// Without CUDA (STOKE_WITH_CUDA=OFF): there is no pinned memory to give.
#include "cuda/pinned_memory.h"

namespace stoke::internal {

StatusOr<HostMemory*> PinnedHostMemory() {
  return UnavailableError(
      "pinned memory needs CUDA, and this stoke was built without it (STOKE_WITH_CUDA=OFF)");
}

bool IsPinned(const void*) { return false; }

}  // namespace stoke::internal

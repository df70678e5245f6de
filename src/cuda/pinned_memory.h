// Page-locked host memory for the ring's slots (LoaderOptions::pin_memory), so
// that copies to a GPU run asynchronously at full PCIe speed. With CUDA it is
// cudaHostAlloc(cudaHostAllocPortable); a build without CUDA, or a machine
// without a visible GPU, gets an error naming the cause at open.
#ifndef STOKE_SRC_CUDA_PINNED_MEMORY_H_
#define STOKE_SRC_CUDA_PINNED_MEMORY_H_

#include "stoke/status.h"
#include "util/host_memory.h"

namespace stoke::internal {

// Never null on success; lives forever. Unavailable when no CUDA device is
// visible or stoke was built without CUDA.
StatusOr<HostMemory*> PinnedHostMemory();

// Whether `p` is page-locked memory CUDA knows (false without CUDA).
bool IsPinned(const void* p);

}  // namespace stoke::internal

#endif  // STOKE_SRC_CUDA_PINNED_MEMORY_H_

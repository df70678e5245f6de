// Whole-file gzip decompression for dataset files that are small enough to hold
// in memory (IDX labels and images).
#ifndef STOKE_SRC_DATASET_GZIP_H_
#define STOKE_SRC_DATASET_GZIP_H_

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "stoke/status.h"

namespace stoke::internal {

// True if `data` starts with the gzip magic bytes 1f 8b.
bool IsGzip(std::span<const std::byte> data);

// Decompresses a gzip stream (concatenated members allowed). DataLoss naming
// `name` on a corrupt or truncated stream; ResourceExhausted beyond `max_bytes`.
StatusOr<std::vector<std::byte>> Gunzip(std::span<const std::byte> data, const std::string& name,
                                        uint64_t max_bytes);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_GZIP_H_

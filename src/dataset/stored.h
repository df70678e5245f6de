// Reading one sample's stored bytes outside the loader (packing, ceilings):
// from memory, a range of a file, or a whole file, through the dataset's file
// system. Allocates; not for the loader's steady state.
#ifndef STOKE_SRC_DATASET_STORED_H_
#define STOKE_SRC_DATASET_STORED_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stoke/dataset.h"

namespace stoke::internal {

// Replaces *out with sample `index`'s stored bytes. The file system's errors
// (naming the file); DataLoss when a whole file exceeds its length ceiling.
Status ReadStoredSample(const Dataset& dataset, uint64_t index, std::vector<std::byte>* out);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_STORED_H_

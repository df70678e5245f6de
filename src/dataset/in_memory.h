// LoaderOptions::preload: a dataset's stored bytes, read once into memory.
#ifndef STOKE_SRC_DATASET_IN_MEMORY_H_
#define STOKE_SRC_DATASET_IN_MEMORY_H_

#include <memory>

#include "stoke/dataset.h"

namespace stoke::internal {

// Reads every sample's stored bytes, in index order, into one block; the result
// serves them from memory and decodes them as `dataset` does (augmentations
// still vary by epoch). ResourceExhausted, naming preload_max_bytes and the
// figures, past `max_bytes`; a sample that cannot be read fails it, named.
StatusOr<std::shared_ptr<Dataset>> PreloadStored(std::shared_ptr<const Dataset> dataset,
                                                 uint64_t max_bytes);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_IN_MEMORY_H_

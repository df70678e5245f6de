// Reading one sample's stored bytes outside the loader (packing, ceilings):
// from memory, a range of a file, or a whole file, through the dataset's file
// system. Allocates; not for the loader's steady state.
#ifndef STOKE_SRC_DATASET_STORED_H_
#define STOKE_SRC_DATASET_STORED_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "stoke/dataset.h"

namespace stoke::internal {

// Replaces *out with sample `index`'s stored bytes. The file system's errors
// (naming the file); DataLoss when a whole file exceeds its length ceiling.
Status ReadStoredSample(const Dataset& dataset, uint64_t index, std::vector<std::byte>* out);

// Fills `dst` from `file` at `offset`; DataLoss naming the file and the offset
// where it ends first.
Status ReadExactly(RandomAccessFile& file, uint64_t offset, std::span<std::byte> dst);

// The sizes a dataset reports for samples of these stored sizes: the largest
// (Dataset::max_stored_bytes), and the typical (Dataset::typical_stored_bytes:
// the 99th percentile with a quarter more headroom, at least 64 KiB, or 0 when
// the largest is within twice that: no outliers worth a buffer of their own).
struct StoredSizes {
  uint64_t largest = 0;
  uint64_t typical = 0;
};
StoredSizes SizesOf(std::vector<uint64_t> sizes);
// The same over `items`, each one's stored size given by `size_of(item)`.
template <typename Items, typename SizeOf>
StoredSizes SizesOf(const Items& items, SizeOf size_of) {
  std::vector<uint64_t> sizes;
  sizes.reserve(items.size());
  for (const auto& item : items) sizes.push_back(size_of(item));
  return SizesOf(std::move(sizes));
}

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_STORED_H_

// The NumPy .npy header (format versions 1.0, 2.0 and 3.0).
#ifndef STOKE_SRC_DATASET_NPY_H_
#define STOKE_SRC_DATASET_NPY_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "stoke/dataset.h"

namespace stoke::internal {

struct NpyHeader {
  static constexpr int kMaxRank = 8;
  DType dtype = DType::kUint8;
  int rank = 0;
  std::array<int64_t, kMaxRank> shape{};
  uint64_t data_offset = 0;  // where the array's bytes start
  bool Matches(const SampleSpec& spec) const;
  SampleSpec ToSpec() const;
};

// Parses the header at the start of `file`. DataLoss naming `name` on a bad
// magic, a truncated header, Fortran order, big-endian or unsupported dtypes.
// Does not allocate on success.
StatusOr<NpyHeader> ParseNpyHeader(std::span<const std::byte> file, const std::string& name);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_NPY_H_

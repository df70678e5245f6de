// CRC-32 (zlib's) of byte ranges of any length: zlib takes uInt lengths, so a
// range of 4 GiB or more is checksummed in pieces. The shard writer and reader
// both use it, so that records and indexes of any size agree.
#ifndef STOKE_SRC_DATASET_CRC32_H_
#define STOKE_SRC_DATASET_CRC32_H_

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace stoke::internal {

// The CRC-32 of [p, p + n), continuing `crc` (0 to start). Never allocates.
inline uint32_t Crc32(const void* p, size_t n, uint32_t crc = 0) {
  uLong c = crc;
  const auto* bytes = static_cast<const Bytef*>(p);
  while (n > 0) {
    const auto chunk = static_cast<uInt>(std::min<size_t>(n, size_t{1} << 30));
    c = crc32(c, bytes, chunk);
    bytes += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(c);
}

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_CRC32_H_

// Byte-order helpers for the dataset parsers.
#ifndef STOKE_SRC_DATASET_BYTE_ORDER_H_
#define STOKE_SRC_DATASET_BYTE_ORDER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

namespace stoke::internal {

inline uint16_t LoadBigEndian16(const void* p) {
  const auto* b = static_cast<const uint8_t*>(p);
  return static_cast<uint16_t>((b[0] << 8) | b[1]);
}

inline uint32_t LoadBigEndian32(const void* p) {
  const auto* b = static_cast<const uint8_t*>(p);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

// Copies `in` to `out` (same size), reversing each `width`-byte element's bytes
// (big-endian file to little-endian host). width 1 is a plain copy.
inline void CopyFromBigEndian(std::span<const std::byte> in, std::span<std::byte> out,
                              size_t width) {
  if (width == 1) {
    std::memcpy(out.data(), in.data(), in.size());
    return;
  }
  for (size_t i = 0; i + width <= in.size(); i += width) {
    for (size_t j = 0; j < width; ++j) out[i + j] = in[i + width - 1 - j];
  }
}

inline std::string Hex(uint8_t v) {
  const char* digits = "0123456789abcdef";
  return {digits[v >> 4], digits[v & 15]};
}

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_BYTE_ORDER_H_

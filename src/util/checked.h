// Size arithmetic on numbers read from files: every product and sum of sizes a
// header declares goes through these, so that a hostile header is refused by
// its declared values instead of wrapping (unsigned) or overflowing (signed,
// undefined). Messages then print the declared dimensions, never a product.
#ifndef STOKE_SRC_UTIL_CHECKED_H_
#define STOKE_SRC_UTIL_CHECKED_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace stoke::internal {

// a * b, or nothing if it does not fit in 64 bits.
inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a + b, or nothing if it does not fit in 64 bits.
inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// element_bytes x dims[0] x dims[1] x ..., or nothing if it does not fit in 64
// bits or a dimension is negative.
inline std::optional<uint64_t> CheckedBytes(uint64_t element_bytes, std::span<const int64_t> dims) {
  std::optional<uint64_t> n = element_bytes;
  for (int64_t d : dims) {
    if (d < 0 || !n) return std::nullopt;
    n = CheckedMul(*n, static_cast<uint64_t>(d));
  }
  return n;
}

// A sample larger than this is refused as absurd where a file declares it.
inline constexpr uint64_t kMaxDeclaredSampleBytes = uint64_t{1} << 40;

// "28x28x60000": declared dimensions, for messages.
inline std::string DimsText(std::span<const int64_t> dims) {
  std::string s;
  for (int64_t d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

}  // namespace stoke::internal

#endif  // STOKE_SRC_UTIL_CHECKED_H_

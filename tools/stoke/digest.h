// A 64-bit digest of a stream of batches (bytes and labels, in delivery order),
// to check that two runs delivered the same data. Not cryptographic.
#ifndef STOKE_TOOLS_STOKE_DIGEST_H_
#define STOKE_TOOLS_STOKE_DIGEST_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace stoke::cli {

class Digest {
 public:
  void Update(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      Mix(w);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, p + i, n - i);
    Mix(tail ^ (uint64_t{n - i} << 56));
    Mix(n);  // lengths too, so that boundaries count
  }
  std::string Hex() const {
    static const char* digits = "0123456789abcdef";
    std::string s(16, '0');
    for (int i = 0; i < 16; ++i) s[15 - i] = digits[(h_ >> (4 * i)) & 15];
    return s;
  }

 private:
  void Mix(uint64_t w) {
    h_ = (h_ ^ w) * 0x9e3779b97f4a7c15ull;
    h_ ^= h_ >> 29;
  }
  uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_DIGEST_H_

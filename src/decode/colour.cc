#include "decode/colour.h"

#include <algorithm>
#include <array>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define STOKE_COLOUR_AVX2 1
#include <immintrin.h>
#endif

namespace stoke::internal {
namespace {

// libjpeg's constants: 1.402, 0.34414, 0.71414 and 1.772 in 16 fractional bits.
constexpr int kCrToR = 91881, kCbToG = -22554, kCrToG = -46802, kCbToB = 116130;
constexpr int kHalf = 1 << 15;

struct Rgb {
  uint8_t r, g, b;
};

Rgb Convert(int luma, int cb, int cr) {
  const int u = cb - 128, v = cr - 128;
  auto clamp = [](int x) { return static_cast<uint8_t>(std::clamp(x, 0, 255)); };
  return {clamp(luma + ((kCrToR * v + kHalf) >> 16)),
          clamp(luma + ((kCbToG * u + kCrToG * v + kHalf) >> 16)),
          clamp(luma + ((kCbToB * u + kHalf) >> 16))};
}

#ifdef STOKE_COLOUR_AVX2

// Each constant is a whole multiple of 2^16 plus a part that fits 16 bits:
// 91881 = 65536 + 26345, -46802 = -65536 + 18734, 116130 = 131072 - 14942.
// For x and k of 16 bits, (k * x + 2^15) >> 16 is the product's high half plus
// its low half's top bit: the rounding, exactly.
constexpr int16_t kCrToRPart = 26345, kCrToGPart = 18734, kCbToBPart = -14942;

__attribute__((target("avx2"))) inline __m256i ScaledHalf(__m256i x, int16_t k) {
  const __m256i factor = _mm256_set1_epi16(k);
  return _mm256_add_epi16(_mm256_mulhi_epi16(x, factor),
                          _mm256_srli_epi16(_mm256_mullo_epi16(x, factor), 15));
}

__attribute__((target("avx2"))) inline __m128i ToBytes(__m256i x) {
  // Saturating: the clamp to [0, 255].
  return _mm_packus_epi16(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
}

__attribute__((target("avx2"))) inline __m256i Widen(const uint8_t* p) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 16 pixels from y, cb and cr to 16 bytes each of R, G and B.
__attribute__((target("avx2"))) inline void Convert16(const uint8_t* y, const uint8_t* cb,
                                                      const uint8_t* cr, __m128i* r, __m128i* g,
                                                      __m128i* b) {
  const __m256i luma = Widen(y);
  const __m256i bias = _mm256_set1_epi16(128);
  const __m256i u = _mm256_sub_epi16(Widen(cb), bias);
  const __m256i v = _mm256_sub_epi16(Widen(cr), bias);
  // R = Y + v + (26345 v + 2^15) >> 16;  B = Y + 2u + (-14942 u + 2^15) >> 16.
  *r = ToBytes(_mm256_add_epi16(luma, _mm256_add_epi16(v, ScaledHalf(v, kCrToRPart))));
  *b = ToBytes(
      _mm256_add_epi16(luma, _mm256_add_epi16(_mm256_add_epi16(u, u), ScaledHalf(u, kCbToBPart))));
  // G = Y - v + (-22554 u + 18734 v + 2^15) >> 16: a sum of two products, so in
  // 32 bits (a multiply-add of each (u, v) pair), packed back to 16.
  const __m256i pair_factors = _mm256_set1_epi32(
      static_cast<int>((static_cast<uint32_t>(kCrToGPart) << 16) | static_cast<uint16_t>(kCbToG)));
  const __m256i half = _mm256_set1_epi32(kHalf);
  const __m256i low = _mm256_srai_epi32(
      _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpacklo_epi16(u, v), pair_factors), half), 16);
  const __m256i high = _mm256_srai_epi32(
      _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpackhi_epi16(u, v), pair_factors), half), 16);
  // unpacklo/hi and packs both work within 128-bit lanes: the order comes back.
  *g = ToBytes(_mm256_add_epi16(_mm256_sub_epi16(luma, v), _mm256_packs_epi32(low, high)));
}

// pshufb masks that interleave 16 R, 16 G and 16 B bytes into 48 bytes of
// triples: kInterleave[t][c] picks channel c's bytes of output block t (-128:
// none, a zero to OR with).
constexpr auto kInterleave = [] {
  std::array<std::array<std::array<int8_t, 16>, 3>, 3> masks{};
  for (int t = 0; t < 3; ++t) {
    for (int c = 0; c < 3; ++c) {
      for (int j = 0; j < 16; ++j) {
        const int q = 16 * t + j;  // byte of the 48
        masks[t][c][j] = static_cast<int8_t>(q % 3 == c ? q / 3 : -128);
      }
    }
  }
  return masks;
}();

__attribute__((target("avx2"))) void PixelsAvx2(const uint8_t* y, const uint8_t* cb,
                                                const uint8_t* cr, size_t n, uint8_t* rgb) {
  __m128i masks[3][3];
  for (int t = 0; t < 3; ++t) {
    for (int c = 0; c < 3; ++c) {
      masks[t][c] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kInterleave[t][c].data()));
    }
  }
  for (size_t i = 0; i + 16 <= n; i += 16) {
    __m128i planes[3];
    Convert16(y + i, cb + i, cr + i, &planes[0], &planes[1], &planes[2]);
    for (int t = 0; t < 3; ++t) {
      const __m128i block = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(planes[0], masks[t][0]),
                                                      _mm_shuffle_epi8(planes[1], masks[t][1])),
                                         _mm_shuffle_epi8(planes[2], masks[t][2]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(rgb + 3 * i + 16 * t), block);
    }
  }
}

__attribute__((target("avx2"))) void PlanesAvx2(const uint8_t* y, const uint8_t* cb,
                                                const uint8_t* cr, size_t n, uint8_t* r, uint8_t* g,
                                                uint8_t* b) {
  for (size_t i = 0; i + 16 <= n; i += 16) {
    __m128i pr, pg, pb;
    Convert16(y + i, cb + i, cr + i, &pr, &pg, &pb);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(r + i), pr);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(g + i), pg);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b + i), pb);
  }
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

#endif  // STOKE_COLOUR_AVX2

}  // namespace

void YccToRgbPlanes(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, size_t n, uint8_t* r,
                    uint8_t* g, uint8_t* b) {
  size_t i = 0;
#ifdef STOKE_COLOUR_AVX2
  if (HasAvx2()) {
    PlanesAvx2(y, cb, cr, n, r, g, b);
    i = n - n % 16;
  }
#endif
  for (; i < n; ++i) {
    const Rgb p = Convert(y[i], cb[i], cr[i]);
    r[i] = p.r;
    g[i] = p.g;
    b[i] = p.b;
  }
}

void YccToRgbPixels(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, size_t n,
                    uint8_t* rgb) {
  size_t i = 0;
#ifdef STOKE_COLOUR_AVX2
  if (HasAvx2()) {
    PixelsAvx2(y, cb, cr, n, rgb);
    i = n - n % 16;
  }
#endif
  for (; i < n; ++i) {
    const Rgb p = Convert(y[i], cb[i], cr[i]);
    rgb[3 * i] = p.r;
    rgb[3 * i + 1] = p.g;
    rgb[3 * i + 2] = p.b;
  }
}

}  // namespace stoke::internal

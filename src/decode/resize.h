// Resampling a region of an 8-bit image to an output size: separable triangle
// filter whose support widens with the shrink factor, so shrinking averages
// every source pixel (antialiased, like PIL's and torchvision's bilinear with
// antialias) and enlarging is plain bilinear. Pixels outside the region are
// never read: edges clamp to it, as if the region had been cropped first.
//
// Thread safety: one Resampler per thread; it keeps its scratch between calls,
// so the steady state allocates nothing.
#ifndef STOKE_SRC_DECODE_RESIZE_H_
#define STOKE_SRC_DECODE_RESIZE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace stoke::internal {

// A region in source pixel coordinates (pixel i covers [i, i + 1)).
struct Region {
  double x = 0, y = 0, width = 0, height = 0;
};

enum class PixelLayout { kHwc, kChw };

// Where the resampled pixels go.
struct ResizeTarget {
  int width = 0, height = 0;
  int channels = 3;   // as the source
  bool flip = false;  // mirror left-right
  PixelLayout layout = PixelLayout::kHwc;
};

class Resampler {
 public:
  // `src`: rows of `src_width` pixels x `channels` bytes, `src_stride` bytes
  // apart, `src_height` rows; `region` inside [0, src_width) x [0, src_height).
  // Writes target.height x target.width x channels bytes to `out` in its layout.
  void Resize(const uint8_t* src, int src_width, int src_height, size_t src_stride,
              const Region& region, const ResizeTarget& target, std::span<std::byte> out);

 private:
  // Fixed-point weights of `bits` fractional bits, each pixel's summing to
  // exactly 1. Narrow windows use 8 bits: a weighted sum of uint8 then fits in
  // uint16, so the inner loops are 16-bit multiply-adds over whole rows, which
  // the compiler vectorises; wide ones (big shrinks) 14 bits and 32-bit sums.
  struct Taps {
    std::vector<int> first;         // per output pixel: first source pixel
    std::vector<int> count;         // per output pixel: taps used
    std::vector<uint16_t> weights;  // per output pixel: max_taps weights
    int max_taps = 0;
    int bits = 8;
    std::vector<double> scratch;  // one output pixel's weights before quantising
    struct Key {                  // ComputeTaps's arguments
      double begin = 0, length = 0;
      int lo = 0, hi = 0, out = -1;
      bool operator==(const Key&) const = default;
    } key;
  };
  static void ComputeTaps(double begin, double length, int lo, int hi, int out, Taps* taps);
  // Output line `o` of `taps` from its source lines (see WeightedLines).
  void Weighted(const Taps& taps, int o, const uint8_t* lines, size_t stride, size_t n,
                uint8_t* out);

  // Vertical pass over whole source rows, a transpose, then the horizontal pass
  // as another pass over whole (transposed) rows.
  Taps horizontal_, vertical_;
  std::vector<uint16_t> narrow_sums_;  // one output line's sums, 8-bit weights
  std::vector<uint32_t> wide_sums_;    // the same, 14-bit weights
  std::vector<uint8_t> vertical_out_;  // target.height rows of the region's columns
  std::vector<uint8_t> transposed_;    // the same, column-major: columns x (height x channels)
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_DECODE_RESIZE_H_

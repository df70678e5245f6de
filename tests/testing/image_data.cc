#include "testing/image_data.h"

#include <random>
#include <vector>

namespace stoke::testing {

std::shared_ptr<Dataset> ColourQuadrants(uint64_t n, bool channels_last, uint32_t seed) {
  constexpr int kSide = 8;
  constexpr int kChannels = 3;
  constexpr size_t kBytes = kSide * kSide * kChannels;
  SampleSpec spec;
  spec.shape = channels_last ? std::vector<int64_t>{kSide, kSide, kChannels}
                             : std::vector<int64_t>{kChannels, kSide, kSide};
  spec.channels_last = channels_last;
  std::vector<std::byte> bytes(n * kBytes);
  std::vector<int64_t> labels(n);
  std::mt19937 random(seed);
  // Each class lights its quadrant in its own mix of the channels.
  const int colour[4][kChannels] = {{150, 0, 0}, {0, 150, 0}, {0, 0, 150}, {150, 150, 0}};
  for (uint64_t i = 0; i < n; ++i) {
    const int k = static_cast<int>(random() % 4);
    labels[i] = k;
    for (int y = 0; y < kSide; ++y) {
      for (int x = 0; x < kSide; ++x) {
        const bool lit = (y / 4) * 2 + (x / 4) == k;
        for (int c = 0; c < kChannels; ++c) {
          const auto v = static_cast<std::byte>((lit ? colour[k][c] : 0) + random() % 100);
          const size_t at =
              channels_last ? (y * kSide + x) * kChannels + c : (c * kSide + y) * kSide + x;
          bytes[i * kBytes + at] = v;
        }
      }
    }
  }
  return FromMemory(std::move(spec), std::move(bytes), std::move(labels), "colour quadrants")
      .value();
}

}  // namespace stoke::testing

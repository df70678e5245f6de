#include "decode/synth_image.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "decode/crop.h"

namespace stoke::internal {

std::vector<uint8_t> SynthPixels(int width, int height, uint64_t seed, int label, int classes) {
  SampleRandom rng(SampleRandom(seed ^ 0x5354414b45ULL).Next());
  std::vector<uint8_t> p(static_cast<size_t>(width) * height * 3);
  // Background: a gradient between two colours along a random direction.
  double c0[3], c1[3];
  for (int c = 0; c < 3; ++c) {
    c0[c] = rng.Int(0, 255);
    c1[c] = rng.Int(0, 255);
  }
  if (classes > 0) {  // the class's hue, at full saturation, +-20 of jitter
    const double hue = 6.0 * label / classes;
    for (int c = 0; c < 3; ++c) {
      const double d = std::fmod(hue - 2.0 * c + 6.0, 6.0);  // distance to channel c's hue
      const double level = std::clamp(2.0 - std::min(d, 6.0 - d), 0.0, 1.0);
      c0[c] = std::clamp(level * 215.0 + 20.0 + (rng.Uniform() - 0.5) * 40.0, 0.0, 255.0);
    }
  }
  const double angle = rng.Uniform() * 6.283185307179586;
  const double dx = std::cos(angle), dy = std::sin(angle);
  const double norm = std::abs(dx) * width + std::abs(dy) * height + 1;
  // Texture: a sinusoid of random frequency and colour weight.
  const double fx = 0.02 + rng.Uniform() * 0.2, fy = 0.02 + rng.Uniform() * 0.2;
  const double tex_amp = 10 + rng.Uniform() * 30;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      double t = ((x * dx + y * dy) + (std::abs(dx) * width + std::abs(dy) * height) / 2) / norm;
      t = std::clamp(t, 0.0, 1.0);
      const double tex = tex_amp * std::sin(x * fx + std::sin(y * fy) * 2);
      for (int c = 0; c < 3; ++c) {
        const double v = c0[c] * (1 - t) + c1[c] * t + tex * (c == 1 ? -0.5 : 1.0);
        p[(static_cast<size_t>(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
    }
  }
  // Shapes: filled circles and rectangles of random colours.
  const int shapes = rng.Int(3, 9);
  for (int s = 0; s < shapes; ++s) {
    const bool circle = rng.Uniform() < 0.5;
    const int cx = rng.Int(0, width - 1), cy = rng.Int(0, height - 1);
    const int r = rng.Int(std::max(2, std::min(width, height) / 20),
                          std::max(3, std::min(width, height) / 3));
    uint8_t color[3];
    for (auto& c : color) c = static_cast<uint8_t>(rng.Int(0, 255));
    for (int y = std::max(0, cy - r); y < std::min(height, cy + r); ++y) {
      for (int x = std::max(0, cx - r); x < std::min(width, cx + r); ++x) {
        if (circle && (x - cx) * (x - cx) + (y - cy) * (y - cy) > r * r) continue;
        uint8_t* px = &p[(static_cast<size_t>(y) * width + x) * 3];
        for (int c = 0; c < 3; ++c) px[c] = color[c];
      }
    }
  }
  // Noise: +-12 per channel, from a hash of the position.
  for (size_t i = 0; i < p.size(); ++i) {
    const int n = static_cast<int>(SampleRandom(seed * 0x100000001b3ULL + i).Next() % 25) - 12;
    p[i] = static_cast<uint8_t>(std::clamp(p[i] + n, 0, 255));
  }
  return p;
}

}  // namespace stoke::internal

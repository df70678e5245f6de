#include "decode/crop.h"

#include <algorithm>
#include <cmath>

namespace stoke::internal {

uint64_t SampleRandom::Next() {
  uint64_t x = (state_ += 0x9e3779b97f4a7c15ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double SampleRandom::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

double SampleRandom::Uniform(double a, double b) { return a + (b - a) * Uniform(); }

int64_t SampleRandom::Int(int64_t lo, int64_t hi) {
  const auto span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(Next() % span);
}

uint64_t SampleSeed(uint64_t seed, int64_t epoch, uint64_t index) {
  SampleRandom r(seed ^ 0x63726f70ULL);
  uint64_t s = r.Next() ^ static_cast<uint64_t>(epoch);
  SampleRandom r2(s);
  return r2.Next() ^ (index * 0xd1b54a32d192ed03ULL);
}

Region CenterCrop(int width, int height, int out_width, int out_height, double fraction) {
  const double s = fraction * std::min(static_cast<double>(width) / out_width,
                                       static_cast<double>(height) / out_height);
  const double w = std::max(1.0, out_width * s), h = std::max(1.0, out_height * s);
  return {(width - w) / 2, (height - h) / 2, w, h};
}

Region RandomResizedCrop(int width, int height, double min_scale, double max_scale,
                         double min_ratio, double max_ratio, SampleRandom& random) {
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(min_ratio), log_hi = std::log(max_ratio);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * random.Uniform(min_scale, max_scale);
    const double aspect = std::exp(random.Uniform(log_lo, log_hi));
    const auto w = static_cast<int64_t>(std::lround(std::sqrt(target * aspect)));
    const auto h = static_cast<int64_t>(std::lround(std::sqrt(target / aspect)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int64_t top = random.Int(0, height - h);
      const int64_t left = random.Int(0, width - w);
      return {static_cast<double>(left), static_cast<double>(top), static_cast<double>(w),
              static_cast<double>(h)};
    }
  }
  // Fallback: the centre crop of the whole image, clamped to the ratio range.
  const double in_ratio = static_cast<double>(width) / height;
  int64_t w = width, h = height;
  if (in_ratio < min_ratio) {
    h = std::lround(w / min_ratio);
  } else if (in_ratio > max_ratio) {
    w = std::lround(h * max_ratio);
  }
  return {static_cast<double>((width - w) / 2), static_cast<double>((height - h) / 2),
          static_cast<double>(w), static_cast<double>(h)};
}

}  // namespace stoke::internal

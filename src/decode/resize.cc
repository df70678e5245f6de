#include "decode/resize.h"

#include <algorithm>
#include <cmath>

namespace stoke::internal {

void Resampler::ComputeTaps(double begin, double length, int lo, int hi, int out, Taps* taps) {
  const double scale = length / out;
  const double support = std::max(1.0, scale);  // the triangle's half width, in source pixels
  taps->max_taps = static_cast<int>(std::ceil(support)) * 2 + 3;
  taps->first.resize(static_cast<size_t>(out));
  taps->count.resize(static_cast<size_t>(out));
  taps->weights.assign(static_cast<size_t>(out) * taps->max_taps, 0.0f);
  for (int o = 0; o < out; ++o) {
    const double center = begin + (o + 0.5) * scale;  // in source coordinates
    int first = static_cast<int>(std::floor(center - support));
    int last = static_cast<int>(std::ceil(center + support));
    first = std::max(first, lo);
    last = std::min(last, hi);
    float* w = &taps->weights[static_cast<size_t>(o) * taps->max_taps];
    double total = 0;
    int n = 0;
    for (int s = first; s <= last && n < taps->max_taps; ++s) {
      const double d = std::abs((s + 0.5) - center) / support;
      const double v = d < 1.0 ? 1.0 - d : 0.0;
      w[n++] = static_cast<float>(v);
      total += v;
    }
    if (total <= 0) {  // a region narrower than a pixel: take the nearest
      n = 1;
      first = std::clamp(static_cast<int>(std::floor(center)), lo, hi);
      w[0] = 1.0f;
      total = 1.0;
    }
    for (int k = 0; k < n; ++k) w[k] = static_cast<float>(w[k] / total);
    taps->first[o] = first;
    taps->count[o] = n;
  }
}

void Resampler::Resize(const uint8_t* src, int src_width, int src_height, size_t src_stride,
                       const Region& region, const ResizeTarget& target, std::span<std::byte> out) {
  const int channels = target.channels;
  // Source pixels whose centres lie in the region (at least one).
  const int x_lo = std::clamp(static_cast<int>(std::floor(region.x)), 0, src_width - 1);
  const int x_hi =
      std::clamp(static_cast<int>(std::ceil(region.x + region.width)) - 1, x_lo, src_width - 1);
  const int y_lo = std::clamp(static_cast<int>(std::floor(region.y)), 0, src_height - 1);
  const int y_hi =
      std::clamp(static_cast<int>(std::ceil(region.y + region.height)) - 1, y_lo, src_height - 1);
  ComputeTaps(region.x, region.width, x_lo, x_hi, target.width, &horizontal_);
  ComputeTaps(region.y, region.height, y_lo, y_hi, target.height, &vertical_);

  // 1. Horizontal: every source row the vertical pass needs, to target.width.
  const int rows = y_hi - y_lo + 1;
  const size_t row_floats = static_cast<size_t>(target.width) * channels;
  rows_.resize(static_cast<size_t>(rows) * row_floats);
  for (int r = 0; r < rows; ++r) {
    const uint8_t* in = src + static_cast<size_t>(y_lo + r) * src_stride;
    float* dst = &rows_[static_cast<size_t>(r) * row_floats];
    for (int o = 0; o < target.width; ++o) {
      const float* w = &horizontal_.weights[static_cast<size_t>(o) * horizontal_.max_taps];
      const uint8_t* p = in + static_cast<size_t>(horizontal_.first[o]) * channels;
      for (int c = 0; c < channels; ++c) {
        float acc = 0;
        for (int k = 0; k < horizontal_.count[o]; ++k) acc += w[k] * p[k * channels + c];
        dst[o * channels + c] = acc;
      }
    }
  }

  // 2. Vertical, rounding to uint8 and writing in the target's layout.
  auto* bytes = reinterpret_cast<uint8_t*>(out.data());
  const size_t plane = static_cast<size_t>(target.width) * target.height;
  for (int oy = 0; oy < target.height; ++oy) {
    const float* w = &vertical_.weights[static_cast<size_t>(oy) * vertical_.max_taps];
    const int first = vertical_.first[oy] - y_lo;
    for (int ox = 0; ox < target.width; ++ox) {
      const int x = target.flip ? target.width - 1 - ox : ox;
      for (int c = 0; c < channels; ++c) {
        float acc = 0;
        for (int k = 0; k < vertical_.count[oy]; ++k) {
          acc += w[k] * rows_[static_cast<size_t>(first + k) * row_floats + ox * channels + c];
        }
        const auto v = static_cast<uint8_t>(std::clamp(std::lround(acc), 0L, 255L));
        if (target.layout == PixelLayout::kHwc) {
          bytes[(static_cast<size_t>(oy) * target.width + x) * channels + c] = v;
        } else {
          bytes[c * plane + static_cast<size_t>(oy) * target.width + x] = v;
        }
      }
    }
  }
}

}  // namespace stoke::internal

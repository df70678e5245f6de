#include "decode/synth_image.h"

#include <cstdio>
// clang-format off
#include <jpeglib.h>
// clang-format on

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <string>

#include "decode/crop.h"

namespace stoke::internal {
namespace {

struct EncodeError {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void EncodeErrorExit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<EncodeError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

}  // namespace

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

StatusOr<std::vector<std::byte>> EncodeJpeg(const std::vector<uint8_t>& pixels, int width,
                                            int height, const JpegEncodeOptions& options) {
  using Color = JpegEncodeOptions::Color;
  const int components = options.color == Color::kGray ? 1 : options.color == Color::kCmyk ? 4 : 3;
  std::vector<uint8_t> input(static_cast<size_t>(width) * height * components);
  for (size_t i = 0; i < static_cast<size_t>(width) * height; ++i) {
    const uint8_t* rgb = &pixels[i * 3];
    if (components == 1) {
      input[i] = static_cast<uint8_t>((299 * rgb[0] + 587 * rgb[1] + 114 * rgb[2] + 500) / 1000);
    } else if (components == 3) {
      std::copy(rgb, rgb + 3, &input[i * 3]);
    } else {
      // CMYK with K = 255 - max(R, G, B), stored inverted as Photoshop does.
      const int k = 255 - std::max({rgb[0], rgb[1], rgb[2]});
      for (int c = 0; c < 3; ++c) {
        const int v = k == 255 ? 0 : (255 - rgb[c] - k) * 255 / (255 - k);
        input[i * 4 + c] = static_cast<uint8_t>(255 - v);
      }
      input[i * 4 + 3] = static_cast<uint8_t>(255 - k);
    }
  }
  jpeg_compress_struct cinfo;
  EncodeError err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = EncodeErrorExit;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  if (setjmp(err.jump)) {
    // `buffer` may be stale here (set inside libjpeg after setjmp): not freed.
    jpeg_destroy_compress(&cinfo);
    return InternalError(std::string("JPEG encoding failed: ") + err.message);
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = components;
  cinfo.in_color_space = components == 1 ? JCS_GRAYSCALE : components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  if (components == 4) jpeg_set_colorspace(&cinfo, JCS_YCCK);  // with an Adobe marker
  jpeg_set_quality(&cinfo, options.quality, TRUE);
  if (options.progressive) jpeg_simple_progression(&cinfo);
  cinfo.restart_interval = static_cast<unsigned>(options.restart_mcus);
  cinfo.restart_in_rows = options.restart_rows;
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = &input[static_cast<size_t>(cinfo.next_scanline) * width * components];
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::vector<std::byte> out(reinterpret_cast<std::byte*>(buffer),
                             reinterpret_cast<std::byte*>(buffer) + size);
  std::free(buffer);
  return out;
}

}  // namespace stoke::internal

// Synthetic images for demos, tests and benchmarks, and a JPEG encoder for them
// (libjpeg API: baseline or progressive, restart markers, grayscale, RGB or
// Adobe CMYK). The scenes are not trivially compressible: a gradient
// background, random shapes, a sinusoidal texture and per-pixel noise, all
// deterministic from a seed.
#ifndef STOKE_SRC_DECODE_SYNTH_IMAGE_H_
#define STOKE_SRC_DECODE_SYNTH_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stoke/status.h"

namespace stoke::internal {

// width x height x 3 RGB bytes, row-major. Same seed, same pixels.
// With classes > 0, image `label` of `classes` carries a class signal a small
// model can learn: the background gradient starts from a hue of the class's
// own (spread around the colour wheel), jittered by the seed.
std::vector<uint8_t> SynthPixels(int width, int height, uint64_t seed, int label = 0,
                                 int classes = 0);

struct JpegEncodeOptions {
  int quality = 90;
  bool progressive = false;
  int restart_rows = 0;  // restart marker every N MCU rows (0: none)
  int restart_mcus = 0;  // or every N MCUs (0: none); restart_rows wins
  enum class Color { kRgb, kGray, kCmyk } color = Color::kRgb;
};

// Encodes RGB `pixels` (width x height x 3) as a JPEG, converting to gray or to
// Adobe-style inverted CMYK first when asked.
StatusOr<std::vector<std::byte>> EncodeJpeg(const std::vector<uint8_t>& pixels, int width,
                                            int height, const JpegEncodeOptions& options);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DECODE_SYNTH_IMAGE_H_

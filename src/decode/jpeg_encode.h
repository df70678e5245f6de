// A JPEG encoder (libjpeg API): baseline or progressive, restart markers,
// grayscale, RGB or Adobe CMYK. Used by stoke pack's resampling and by the
// synthetic images. Errors come back as Status.
#ifndef STOKE_SRC_DECODE_JPEG_ENCODE_H_
#define STOKE_SRC_DECODE_JPEG_ENCODE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stoke/status.h"

namespace stoke::internal {

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

#endif  // STOKE_SRC_DECODE_JPEG_ENCODE_H_

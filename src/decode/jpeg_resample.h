// Packing at the resolution training uses (stoke pack --short-side/--max-side,
// FFCV's max_resolution): a JPEG larger than needed is decoded once, resampled
// with the loader's own antialiased resampler, and re-encoded at a given
// quality, with a restart marker per MCU so that crops decode only what they
// cover. Smaller JPEGs are left to the lossless rewrite.
//
// Thread safety: one JpegDecoder per thread.
#ifndef STOKE_SRC_DECODE_JPEG_RESAMPLE_H_
#define STOKE_SRC_DECODE_JPEG_RESAMPLE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "decode/jpeg_decoder.h"
#include "stoke/status.h"

namespace stoke::internal {

struct ResampleJpegOptions {
  enum class Side { kShort, kLong };
  Side side = Side::kShort;  // which side is brought down to `pixels`
  int pixels = 0;            // > 0
  int quality = 90;          // 1..100
  bool restart_markers = true;
  uint64_t max_pixels = uint64_t{1} << 28;  // a decompression bomb is an error
};

// The size `width` x `height` comes down to: the chosen side at `pixels`, the
// other in proportion (at least 1); the same size when that side is already
// at most `pixels`.
void ResampledSize(int width, int height, const ResampleJpegOptions& options, int* out_width,
                   int* out_height);

// False when `jpeg` is no larger than needed (it is left as it is); true with
// the resampled JPEG in *out. DataLoss naming libjpeg's complaint for a JPEG it
// cannot decode.
StatusOr<bool> ResampleJpeg(std::span<const std::byte> jpeg, const ResampleJpegOptions& options,
                            JpegDecoder* decoder, std::vector<std::byte>* out);

// stoke pack --store raw: a JPEG decoded once into a pixel record, a header of
// kPixelRecordHeader bytes (width and height, uint32 each, little-endian)
// then width x height x 3 bytes of RGB, row by row (grayscale JPEGs are stored
// as RGB too). Resampled first as ResampleJpeg would when `options.pixels`
// > 0 and the JPEG is larger; *resampled says whether it was. DataLoss naming
// libjpeg's complaint for a JPEG it cannot decode.
inline constexpr size_t kPixelRecordHeader = 8;
Status DecodePixelRecord(std::span<const std::byte> jpeg, const ResampleJpegOptions& options,
                         JpegDecoder* decoder, std::vector<std::byte>* record, bool* resampled);

// A pixel record's size and pixels; false (and nothing set) when `record` is
// not one: too short, or not exactly the header's width x height x 3 bytes.
bool ParsePixelRecord(std::span<const std::byte> record, int* width, int* height,
                      const uint8_t** pixels);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DECODE_JPEG_RESAMPLE_H_

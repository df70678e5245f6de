// JPEG decoding with the least work that gives the right pixels: read the
// header, let the caller choose the crop from the image size, then decode at the
// smallest fast DCT scale (1/8, 1/4, 1/2 or 1) that still covers the output, only the columns
// (jpeg_crop_scanline) and rows (jpeg_skip_scanlines) the crop needs, and
// resample that region to the output size (see resize.h). Built on
// libjpeg-turbo's libjpeg API; errors come back as Status, never as exits.
//
// A sequential JPEG with restart markers at MCU or MCU-row boundaries (see
// jpeg_restart.h, and `stoke pack`) is first cut to the segments covering the
// crop, so that only those are entropy-decoded; the pixels are the same.
//
// Grayscale, YCbCr, RGB, CMYK and YCCK (Adobe) JPEGs, baseline or progressive,
// with or without restart markers, decode to 3 channels (RGB) or 1 (luma).
// A JPEG that only warns (e.g. corrupt data the decoder recovered from) decodes;
// warnings() counts them.
//
// Thread safety: one JpegDecoder per thread, reused: it keeps its libjpeg state
// and scratch, so the steady state allocates nothing.
#ifndef STOKE_SRC_DECODE_JPEG_DECODER_H_
#define STOKE_SRC_DECODE_JPEG_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "decode/jpeg_restart.h"
#include "decode/resize.h"
#include "stoke/status.h"

namespace stoke::internal {

struct JpegHeader {
  int width = 0;
  int height = 0;
  int components = 0;  // 1, 3 or 4
  bool progressive = false;
};

class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // Reads the header of `jpeg`, which must stay alive until Finish. DataLoss with
  // libjpeg's message when it is not a JPEG or is corrupt; ResourceExhausted when
  // width x height exceeds `max_pixels` (a decompression bomb).
  Status Begin(std::span<const std::byte> jpeg, uint64_t max_pixels, JpegHeader* header);

  // Decodes `region` (in the header's pixel coordinates, inside the image) of the
  // JPEG given to Begin and resamples it to `target`, writing
  // target.height x target.width x target.channels bytes to `out`.
  Status Finish(const Region& region, const ResizeTarget& target, std::span<std::byte> out);

  // What Finish(region, target) entropy-decodes, and nothing else: the same
  // cut (the restart segments the region covers) or, without one, every row
  // down to the region's bottom edge, Huffman-decoded with no IDCT, colour
  // or resampling (libjpeg-turbo's jpeg_skip_scanlines discards the decoded
  // coefficients). The profiler's entropy floor: no decode of this JPEG for
  // this region can do less. Instead of Finish, after Begin.
  Status EntropyDecode(const Region& region, const ResizeTarget& target);

  // What Finish(region, target) asks of libjpeg, and nothing else: the same
  // cut, DCT scale and rows, entropy-decoded and through the IDCT (and, for
  // JPEGs not decoded as planes, libjpeg's upsampling and colour conversion),
  // but not resampled to the target nor converted to RGB by this decoder.
  // Writes nothing; OK or the error Finish would give for the JPEG. The
  // profiler's codec share: Finish's time less this is the resampling's and
  // colour conversion's. Instead of Finish, after Begin.
  Status CodecDecode(const Region& region, const ResizeTarget& target);

  // Warnings of the last decode (recoverable corrupt data).
  int warnings() const;
  // The DCT scale numerator (of 8) the last Finish decoded at, for tests.
  int last_scale() const { return last_scale_; }
  // Whether the last Finish decoded a cut of the JPEG (restart segments only).
  bool last_cut() const { return last_cut_; }
  // Bytes of scratch (decoded rows, planes, cuts) the decoder holds between
  // images. Finish keeps at most kKeptScratchBytes of it: one huge image
  // grows the scratch for its own decode only, not for the hours after.
  size_t scratch_bytes() const;
  static constexpr size_t kKeptScratchBytes = size_t{32} << 20;

 private:
  struct State;
  // Replaces the JPEG being decoded by its cut to the restart segments that
  // `region` and `margin` pixels around it cover, and moves `region` into the
  // cut's coordinates; does nothing when the JPEG cannot be cut or the cut is
  // whole.
  Status CutToRegion(int margin, Region* region);
  // Finish, or with `codec_only` CodecDecode (out unused).
  Status Decode(const Region& region, const ResizeTarget& target, std::span<std::byte> out,
                bool codec_only);
  // Gives back scratch above kKeptScratchBytes.
  void TrimScratch();
  // Decodes at DCT scale n/8 (the accurate integer IDCT) from the next start.
  void SetScale(int n);
  Status DecodeRows(int n, const Region& region, const ResizeTarget& target, Region* in_buffer);
  // YCbCr to RGB without libjpeg's chroma upsampling and colour conversion:
  // the Y, Cb and Cr planes as the IDCT leaves them, each resampled to the
  // output (chroma from its own, smaller plane), then converted at the output
  // size. False when the JPEG's components do not suit (not YCbCr 4:4:4,
  // 4:2:2, 4:2:0 or 4:4:0, or not to 3 channels).
  bool CanDecodePlanes(const ResizeTarget& target) const;
  Status DecodePlanes(int n, const Region& region, const ResizeTarget& target,
                      std::span<std::byte> out, bool codec_only);

  std::span<const std::byte> jpeg_;  // given to Begin
  RestartLayout restart_layout_;
  std::vector<std::byte> cut_;  // the JPEG CutToRegion made
  bool last_cut_ = false;

  std::unique_ptr<State> state_;
  Resampler resampler_;
  std::vector<uint8_t> pixels_;       // the decoded rows of the region
  std::vector<unsigned char*> rows_;  // pointers to them, for libjpeg
  std::vector<uint8_t> planes_[3];    // DecodePlanes: Y, Cb, Cr as decoded
  std::vector<unsigned char*> plane_rows_[3];
  std::vector<uint8_t> resized_[3];           // each plane at the output size
  int pixels_width_ = 0, pixels_height_ = 0;  // of target.channels each
  int last_scale_ = 8;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_DECODE_JPEG_DECODER_H_

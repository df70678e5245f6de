// Cutting a JPEG to a rectangle of MCUs without decoding it, through its
// restart markers.
//
// In a sequential JPEG every row of MCUs is entropy-coded after the one above,
// so a decoder cropping to a region must still Huffman-decode every row above
// the region's bottom edge, all the way across. A restart marker resets the
// entropy coder (byte-aligned, DC predictions back to zero), so the segments
// between markers can be copied independently: with a marker every MCU, or every
// few MCUs, or every MCU row, the segments that cover a region form a smaller,
// valid JPEG of just that region, built with a memcpy per segment. Decoding it
// costs in proportion to the region, not to the image.
//
// AddRestartMarkers rewrites a JPEG losslessly (the same DCT coefficients, so
// the same pixels) with a marker after every MCU: `stoke pack` does it once, and
// every later decode of a crop benefits.
#ifndef STOKE_SRC_DECODE_JPEG_RESTART_H_
#define STOKE_SRC_DECODE_JPEG_RESTART_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "stoke/status.h"

namespace stoke::internal {

// Where a single-scan Huffman JPEG's restart segments lie.
class RestartLayout {
 public:
  // Parses `jpeg`'s markers and finds its restart segments. False when the
  // JPEG cannot be cut: no restart markers, a progressive or arithmetic-coded
  // or multi-scan JPEG, a restart interval that is neither a divisor nor a
  // multiple of the MCUs in a row, or markers out of their expected places
  // (corrupt data: the caller then decodes the whole file, and libjpeg reports).
  bool Parse(std::span<const std::byte> jpeg);

  // A JPEG of the smallest rectangle of segments covering the pixels
  // [x0, x1) x [y0, y1) (inside the image) goes to `out`; its top-left pixel is
  // the image's (*origin_x, *origin_y). False, leaving `out` alone, when that
  // rectangle is the whole image or empty.
  bool Cut(int x0, int y0, int x1, int y1, std::vector<std::byte>* out, int* origin_x,
           int* origin_y) const;

  int width() const { return width_; }
  int height() const { return height_; }
  int mcu_width() const { return mcu_width_; }
  int mcu_height() const { return mcu_height_; }
  int restart_interval() const { return interval_; }
  size_t segments() const { return segment_begin_.size(); }

 private:
  std::span<const std::byte> jpeg_;
  int width_ = 0, height_ = 0;
  int mcu_width_ = 0, mcu_height_ = 0;
  int mcus_per_row_ = 0, mcu_rows_ = 0;
  int interval_ = 0;                     // MCUs per segment
  size_t size_offset_ = 0;               // of the frame header's height (then width)
  size_t scan_offset_ = 0;               // the first byte of entropy-coded data
  std::vector<uint32_t> segment_begin_;  // each segment's first byte
  std::vector<uint32_t> segment_end_;    // one past its last (before its marker)
};

// Rewrites `jpeg` losslessly with a restart marker after every MCU and
// optimised Huffman tables. Progressive and arithmetic-coded input becomes
// sequential Huffman; markers other than JFIF and Adobe (EXIF, ICC) are dropped.
// DataLoss with libjpeg's message when `jpeg` cannot be read; ResourceExhausted,
// with the declared size, when its DCT coefficients (128 bytes per 8x8 block of
// each component, all held at once) would exceed kMaxRewriteCoefficientBytes.
inline constexpr uint64_t kMaxRewriteCoefficientBytes = uint64_t{256} << 20;
Status AddRestartMarkers(std::span<const std::byte> jpeg, std::vector<std::byte>* out);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DECODE_JPEG_RESTART_H_

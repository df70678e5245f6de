#include "decode/jpeg_resample.h"

#include <cstring>

#include <algorithm>
#include <cmath>

#include "decode/jpeg_encode.h"

namespace stoke::internal {

void ResampledSize(int width, int height, const ResampleJpegOptions& options, int* out_width,
                   int* out_height) {
  const int side = options.side == ResampleJpegOptions::Side::kShort ? std::min(width, height)
                                                                     : std::max(width, height);
  if (side <= options.pixels) {
    *out_width = width;
    *out_height = height;
    return;
  }
  const double scale = static_cast<double>(options.pixels) / side;
  *out_width = std::max(1, static_cast<int>(std::lround(width * scale)));
  *out_height = std::max(1, static_cast<int>(std::lround(height * scale)));
}

StatusOr<bool> ResampleJpeg(std::span<const std::byte> jpeg, const ResampleJpegOptions& options,
                            JpegDecoder* decoder, std::vector<std::byte>* out) {
  JpegHeader header;
  STOKE_RETURN_IF_ERROR(decoder->Begin(jpeg, options.max_pixels, &header));
  int width = 0;
  int height = 0;
  ResampledSize(header.width, header.height, options, &width, &height);
  if (width == header.width && height == header.height) return false;
  ResizeTarget target;
  target.width = width;
  target.height = height;
  target.channels = 3;
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * 3);
  const Region whole{0, 0, static_cast<double>(header.width), static_cast<double>(header.height)};
  STOKE_RETURN_IF_ERROR(decoder->Finish(whole, target, std::as_writable_bytes(std::span(pixels))));
  JpegEncodeOptions encode;
  encode.quality = options.quality;
  encode.restart_mcus = options.restart_markers ? 1 : 0;
  encode.color =
      header.components == 1 ? JpegEncodeOptions::Color::kGray : JpegEncodeOptions::Color::kRgb;
  STOKE_ASSIGN_OR_RETURN(*out, EncodeJpeg(pixels, width, height, encode));
  return true;
}

Status DecodePixelRecord(std::span<const std::byte> jpeg, const ResampleJpegOptions& options,
                         JpegDecoder* decoder, std::vector<std::byte>* record, bool* resampled) {
  JpegHeader header;
  STOKE_RETURN_IF_ERROR(decoder->Begin(jpeg, options.max_pixels, &header));
  int width = header.width;
  int height = header.height;
  if (options.pixels > 0) ResampledSize(header.width, header.height, options, &width, &height);
  *resampled = width != header.width || height != header.height;
  ResizeTarget target;
  target.width = width;
  target.height = height;
  target.channels = 3;
  const size_t pixels = static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
  record->resize(kPixelRecordHeader + pixels);
  const uint32_t size[2] = {static_cast<uint32_t>(width), static_cast<uint32_t>(height)};
  std::memcpy(record->data(), size, sizeof size);  // little-endian hosts only (x86, arm64)
  const Region whole{0, 0, static_cast<double>(header.width), static_cast<double>(header.height)};
  return decoder->Finish(whole, target, std::span(*record).subspan(kPixelRecordHeader));
}

bool ParsePixelRecord(std::span<const std::byte> record, int* width, int* height,
                      const uint8_t** pixels) {
  if (record.size() < kPixelRecordHeader) return false;
  uint32_t size[2];
  std::memcpy(size, record.data(), sizeof size);
  if (size[0] == 0 || size[1] == 0 || size[0] > 65535 || size[1] > 65535) return false;
  if (record.size() - kPixelRecordHeader != uint64_t{size[0]} * size[1] * 3) return false;
  *width = static_cast<int>(size[0]);
  *height = static_cast<int>(size[1]);
  *pixels = reinterpret_cast<const uint8_t*>(record.data() + kPixelRecordHeader);
  return true;
}

}  // namespace stoke::internal

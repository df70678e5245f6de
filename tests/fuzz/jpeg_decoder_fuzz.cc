// libFuzzer target over the JPEG decoder as the loader uses it: header, crop
// choice, partial decode and resize. The first bytes choose the output; the
// rest is the file. It must never crash, hang, leak or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "decode/crop.h"
#include "decode/jpeg_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  static stoke::internal::JpegDecoder decoder;  // reused, as on a loader thread
  const uint8_t mode = data[0], w = data[1], h = data[2], seed = data[3];
  std::span<const std::byte> jpeg(reinterpret_cast<const std::byte*>(data + 4), size - 4);
  stoke::internal::JpegHeader header;
  // A small pixel limit keeps each run fast; larger headers are refused.
  if (!decoder.Begin(jpeg, uint64_t{1} << 22, &header).ok()) return 0;
  stoke::internal::ResizeTarget target;
  target.width = 1 + w % 64;
  target.height = 1 + h % 64;
  target.channels = (mode & 1) ? 1 : 3;
  target.flip = (mode & 2) != 0;
  target.layout =
      (mode & 4) ? stoke::internal::PixelLayout::kChw : stoke::internal::PixelLayout::kHwc;
  stoke::internal::SampleRandom random(seed);
  const stoke::internal::Region region =
      (mode & 8) ? stoke::internal::RandomResizedCrop(header.width, header.height, 0.08, 1.0,
                                                      3.0 / 4, 4.0 / 3, random)
                 : stoke::internal::CenterCrop(header.width, header.height, target.width,
                                               target.height, 0.875);
  std::vector<std::byte> out(static_cast<size_t>(target.width) * target.height * target.channels);
  decoder.Finish(region, target, out).IgnoreError();
  return 0;
}

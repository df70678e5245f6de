// JPEG helpers shared by the decoder's tests: synthetic JPEGs, TurboJPEG's full
// decode as the independent reference, and one region decoded through
// JpegDecoder. Header-only: each checks with gtest's EXPECT in the test using it.
#ifndef STOKE_TESTS_TESTING_JPEG_TESTING_H_
#define STOKE_TESTS_TESTING_JPEG_TESTING_H_

#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "decode/jpeg_decoder.h"
#include "decode/synth_image.h"

namespace stoke::testing {

using JpegBytes = std::vector<std::byte>;
inline constexpr uint64_t kTestMaxPixels = uint64_t{1} << 28;

// A synthetic scene of w x h from `seed`, encoded with `options`.
inline JpegBytes EncodeSynthJpeg(int w, int h, uint64_t seed,
                                 internal::JpegEncodeOptions options = {}) {
  auto jpeg = internal::EncodeJpeg(internal::SynthPixels(w, h, seed), w, h, options);
  EXPECT_TRUE(jpeg.ok()) << jpeg.status();
  return jpeg.ok() ? *jpeg : JpegBytes{};
}

// TurboJPEG at full size, accurate IDCT: width x height x `channels` bytes
// (1 gray, 3 RGB, 4 CMYK).
inline std::vector<uint8_t> FullDecode(const JpegBytes& jpeg, int channels, int* w, int* h) {
  tjhandle tj = tjInitDecompress();
  int subsamp = 0, colorspace = 0;
  auto* data = reinterpret_cast<const unsigned char*>(jpeg.data());
  EXPECT_EQ(tjDecompressHeader3(tj, data, jpeg.size(), w, h, &subsamp, &colorspace), 0);
  std::vector<uint8_t> pixels(static_cast<size_t>(*w) * *h * channels);
  EXPECT_EQ(tjDecompress2(tj, data, jpeg.size(), pixels.data(), *w, 0, *h,
                          channels == 1   ? TJPF_GRAY
                          : channels == 4 ? TJPF_CMYK
                                          : TJPF_RGB,
                          TJFLAG_ACCURATEDCT),
            0)
      << tjGetErrorStr2(tj);
  tjDestroy(tj);
  return pixels;
}

// `region` of `jpeg` resampled to `target` by `decoder`.
inline std::vector<uint8_t> DecodeRegion(internal::JpegDecoder& decoder, const JpegBytes& jpeg,
                                         const internal::Region& region,
                                         const internal::ResizeTarget& target) {
  internal::JpegHeader header;
  Status s = decoder.Begin(jpeg, kTestMaxPixels, &header);
  EXPECT_TRUE(s.ok()) << s;
  std::vector<uint8_t> out(static_cast<size_t>(target.width) * target.height * target.channels);
  s = decoder.Finish(region, target, std::as_writable_bytes(std::span(out)));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

}  // namespace stoke::testing

#endif  // STOKE_TESTS_TESTING_JPEG_TESTING_H_

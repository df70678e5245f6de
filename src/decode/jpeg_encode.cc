#include "decode/jpeg_encode.h"

#include <cstdio>
// clang-format off
#include <jpeglib.h>
// clang-format on

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <string>

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

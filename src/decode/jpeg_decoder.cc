#include "decode/jpeg_decoder.h"

// jpeglib.h needs FILE and size_t declared first.
#include <cstdio>
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstring>
#include <string>

#include "decode/colour.h"

namespace stoke::internal {

// libjpeg reports errors through error_exit, which must not return: it longjmps
// back to the setjmp of the call in progress. Nothing with a destructor lives on
// the stack between a setjmp and a libjpeg call in this file.
namespace {

struct Error {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  int warnings = 0;
  bool premature_end = false;  // ran out of data: a truncated file
};

}  // namespace

struct JpegDecoder::State {
  Error err;
  jpeg_decompress_struct cinfo;
  bool created = false;
};

namespace {

Error* ErrorOf(j_common_ptr cinfo) { return reinterpret_cast<Error*>(cinfo->err); }

[[noreturn]] void ErrorExit(j_common_ptr cinfo) {
  Error* e = ErrorOf(cinfo);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void EmitMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  Error* e = ErrorOf(cinfo);
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) e->premature_end = true;
  if (e->warnings++ == 0) (*cinfo->err->format_message)(cinfo, e->message);
}

void OutputMessage(j_common_ptr) {}

}  // namespace

JpegDecoder::JpegDecoder() : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.cinfo.err = jpeg_std_error(&s.err.pub);
  s.err.pub.error_exit = ErrorExit;
  s.err.pub.emit_message = EmitMessage;
  s.err.pub.output_message = OutputMessage;
  if (setjmp(s.err.jump)) return;  // out of memory: created stays false
  jpeg_create_decompress(&s.cinfo);
  s.created = true;
}

JpegDecoder::~JpegDecoder() {
  if (state_->created) jpeg_destroy_decompress(&state_->cinfo);
}

int JpegDecoder::warnings() const { return state_->err.warnings; }

Status JpegDecoder::Begin(std::span<const std::byte> jpeg, uint64_t max_pixels,
                          JpegHeader* header) {
  State& s = *state_;
  if (!s.created) return ResourceExhaustedError("JPEG decoder: libjpeg could not be set up");
  jpeg_decompress_struct* c = &s.cinfo;
  jpeg_abort_decompress(c);  // whatever the last image left, back to the start
  s.err.warnings = 0;
  s.err.premature_end = false;
  s.err.message[0] = '\0';
  if (setjmp(s.err.jump)) {
    jpeg_abort_decompress(c);
    return DataLossError(std::string("not a decodable JPEG: ") + s.err.message);
  }
  jpeg_ = jpeg;
  jpeg_mem_src(c, reinterpret_cast<const unsigned char*>(jpeg.data()),
               static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(c, TRUE);
  header->width = static_cast<int>(c->image_width);
  header->height = static_cast<int>(c->image_height);
  header->components = c->num_components;
  header->progressive = jpeg_has_multiple_scans(c);
  const uint64_t pixels = uint64_t{c->image_width} * c->image_height;
  if (pixels > max_pixels) {
    jpeg_abort_decompress(c);
    return ResourceExhaustedError("JPEG of " + std::to_string(c->image_width) + "x" +
                                  std::to_string(c->image_height) +
                                  " pixels is above the limit of " + std::to_string(max_pixels) +
                                  " pixels (a decompression bomb?)");
  }
  if (c->num_components != 1 && c->num_components != 3 && c->num_components != 4) {
    jpeg_abort_decompress(c);
    return DataLossError("JPEG with " + std::to_string(c->num_components) +
                         " components is not supported (1, 3 or 4)");
  }
  return Status::Ok();
}

Status JpegDecoder::Finish(const Region& region, const ResizeTarget& target,
                           std::span<std::byte> out) {
  Status status = Decode(region, target, out, /*codec_only=*/false);
  TrimScratch();
  return status;
}

Status JpegDecoder::CodecDecode(const Region& region, const ResizeTarget& target) {
  Status status = Decode(region, target, {}, /*codec_only=*/true);
  TrimScratch();
  return status;
}

void JpegDecoder::TrimScratch() {
  if (scratch_bytes() > kKeptScratchBytes) {
    // An outlier (a huge image at full scale): give its scratch back rather
    // than hold it outside the memory budget for the rest of the run.
    std::vector<std::byte>().swap(cut_);
    std::vector<uint8_t>().swap(pixels_);
    for (int i = 0; i < 3; ++i) {
      std::vector<uint8_t>().swap(planes_[i]);
      std::vector<uint8_t>().swap(resized_[i]);
    }
  }
}

Status JpegDecoder::EntropyDecode(const Region& region, const ResizeTarget& target) {
  State& s = *state_;
  jpeg_decompress_struct* c = &s.cinfo;
  // The cut Decode makes, with its widest margin (4 pixels at full scale).
  Region decoded = region;
  STOKE_RETURN_IF_ERROR(CutToRegion(CanDecodePlanes(target) ? 0 : 4, &decoded));
  SetScale(8);
  c->do_fancy_upsampling = FALSE;  // no context rows: whole iMCU rows are skipped
  if (setjmp(s.err.jump)) {
    jpeg_abort_decompress(c);
    return DataLossError(std::string("corrupt JPEG: ") + s.err.message);
  }
  jpeg_start_decompress(c);
  const auto height = static_cast<int>(c->output_height);
  const int bottom = std::clamp(static_cast<int>(std::ceil(decoded.y + decoded.height)), 1, height);
  // Skipping to the image's end decodes nothing (libjpeg-turbo just ends the
  // pass): the last row is read instead, with its iMCU row's IDCT.
  if (bottom > 1) jpeg_skip_scanlines(c, static_cast<JDIMENSION>(std::min(bottom, height - 1)));
  if (bottom == height) {
    pixels_.resize(static_cast<size_t>(c->output_width) * c->output_components);
    JSAMPROW row = pixels_.data();
    jpeg_read_scanlines(c, &row, 1);
  }
  jpeg_abort_decompress(c);
  return Status::Ok();
}

size_t JpegDecoder::scratch_bytes() const {
  size_t bytes = cut_.capacity() + pixels_.capacity();
  for (int i = 0; i < 3; ++i) bytes += planes_[i].capacity() + resized_[i].capacity();
  return bytes;
}

Status JpegDecoder::Decode(const Region& region, const ResizeTarget& target,
                           std::span<std::byte> out, bool codec_only) {
  // The smallest DCT scale n/8 at which the region still covers the output,
  // among those libjpeg-turbo runs with SIMD (1/8, 2/8, 4/8, 8/8): its other
  // scales (3/8, 5/8, 6/8, 7/8, and the 10x10, 12x12... IDCTs they use for
  // chroma) are plain C, and measured slower than a full-scale SIMD decode.
  int n = 8;
  for (int k : {1, 2, 4}) {
    if (region.width * k / 8 >= target.width && region.height * k / 8 >= target.height) {
      n = k;
      break;
    }
  }
  // DecodePlanes reads only the region's pixels, each from its own 8x8 block's
  // IDCT: a cut at the region's edge changes none of them. DecodeRows reads a
  // scaled pixel beyond the region on each side, and fancy upsampling of chroma
  // looks one more beyond that: two more to spare, and no pixel read changes.
  const bool planes = CanDecodePlanes(target);
  Region decoded = region;
  STOKE_RETURN_IF_ERROR(CutToRegion(planes ? 0 : 4 * 8 / n, &decoded));
  if (planes) return DecodePlanes(n, decoded, target, out, codec_only);
  Region in_buffer;
  STOKE_RETURN_IF_ERROR(DecodeRows(n, decoded, target, &in_buffer));
  if (codec_only) return Status::Ok();
  resampler_.Resize(pixels_.data(), pixels_width_, pixels_height_,
                    static_cast<size_t>(pixels_width_) * target.channels, in_buffer, target, out);
  return Status::Ok();
}

Status JpegDecoder::CutToRegion(int margin, Region* region) {
  State& s = *state_;
  jpeg_decompress_struct* c = &s.cinfo;
  last_cut_ = false;
  if (c->restart_interval == 0 || jpeg_has_multiple_scans(c) || !restart_layout_.Parse(jpeg_)) {
    return Status::Ok();
  }
  const int width = static_cast<int>(c->image_width), height = static_cast<int>(c->image_height);
  const int x0 = std::max(0, static_cast<int>(std::floor(region->x)) - margin);
  const int y0 = std::max(0, static_cast<int>(std::floor(region->y)) - margin);
  const int x1 = std::min(width, static_cast<int>(std::ceil(region->x + region->width)) + margin);
  const int y1 = std::min(height, static_cast<int>(std::ceil(region->y + region->height)) + margin);
  int origin_x = 0, origin_y = 0;
  if (!restart_layout_.Cut(x0, y0, x1, y1, &cut_, &origin_x, &origin_y)) return Status::Ok();
  jpeg_abort_decompress(c);
  if (setjmp(s.err.jump)) {
    jpeg_abort_decompress(c);
    return DataLossError(std::string("corrupt JPEG: ") + s.err.message);
  }
  jpeg_mem_src(c, reinterpret_cast<const unsigned char*>(cut_.data()),
               static_cast<unsigned long>(cut_.size()));
  jpeg_read_header(c, TRUE);
  region->x -= origin_x;
  region->y -= origin_y;
  last_cut_ = true;
  return Status::Ok();
}

void JpegDecoder::SetScale(int n) {
  jpeg_decompress_struct* c = &state_->cinfo;
  last_scale_ = n;
  c->scale_num = static_cast<unsigned>(n);
  c->scale_denom = 8;
  c->dct_method = JDCT_ISLOW;
}

bool JpegDecoder::CanDecodePlanes(const ResizeTarget& target) const {
  const jpeg_decompress_struct* c = &state_->cinfo;
  if (target.channels != 3 || c->jpeg_color_space != JCS_YCbCr || c->num_components != 3) {
    return false;
  }
  const jpeg_component_info* y = &c->comp_info[0];
  const jpeg_component_info* cb = &c->comp_info[1];
  const jpeg_component_info* cr = &c->comp_info[2];
  const int h = y->h_samp_factor, v = y->v_samp_factor;
  return cb->h_samp_factor == 1 && cb->v_samp_factor == 1 && cr->h_samp_factor == 1 &&
         cr->v_samp_factor == 1 && (h == 1 || h == 2) && (v == 1 || v == 2);
}

Status JpegDecoder::DecodePlanes(int n, const Region& region, const ResizeTarget& target,
                                 std::span<std::byte> out, bool codec_only) {
  State& s = *state_;
  jpeg_decompress_struct* c = &s.cinfo;
  SetScale(n);
  c->raw_data_out = TRUE;
  if (setjmp(s.err.jump)) {
    jpeg_abort_decompress(c);
    return DataLossError(std::string("corrupt JPEG: ") + s.err.message);
  }
  jpeg_start_decompress(c);
  const double f = n / 8.0;
  const Region scaled{region.x * f, region.y * f, region.width * f, region.height * f};
  const int full_height = static_cast<int>(c->output_height);
  // Luma rows down to the resampler's last (with a margin), whole iMCU rows:
  // what jpeg_read_raw_data hands over at a time.
  const int y1 =
      std::clamp(static_cast<int>(std::ceil(scaled.y + scaled.height)) + 1, 1, full_height);
  const int group = c->max_v_samp_factor * c->min_DCT_scaled_size;
  const int groups = (y1 + group - 1) / group;
  JSAMPARRAY arrays[3];
  for (int i = 0; i < 3; ++i) {
    const jpeg_component_info* comp = &c->comp_info[i];
    const size_t stride = static_cast<size_t>(comp->width_in_blocks) * comp->DCT_scaled_size;
    const size_t rows = static_cast<size_t>(groups) * comp->v_samp_factor * comp->DCT_scaled_size;
    planes_[i].resize(stride * rows);
    plane_rows_[i].resize(rows);
    for (size_t r = 0; r < rows; ++r) plane_rows_[i][r] = &planes_[i][r * stride];
  }
  for (int g = 0; g < groups && c->output_scanline < c->output_height; ++g) {
    for (int i = 0; i < 3; ++i) {
      const jpeg_component_info* comp = &c->comp_info[i];
      arrays[i] =
          &plane_rows_[i][static_cast<size_t>(g) * comp->v_samp_factor * comp->DCT_scaled_size];
    }
    jpeg_read_raw_data(c, arrays, static_cast<JDIMENSION>(group));
  }
  const bool truncated = s.err.premature_end;
  int widths[3], heights[3];
  size_t strides[3];
  double fx[3], fy[3];
  for (int i = 0; i < 3; ++i) {
    const jpeg_component_info* comp = &c->comp_info[i];
    widths[i] = static_cast<int>(comp->downsampled_width);
    heights[i] = std::min(static_cast<int>(comp->downsampled_height),
                          static_cast<int>(plane_rows_[i].size()));
    strides[i] = static_cast<size_t>(comp->width_in_blocks) * comp->DCT_scaled_size;
    // Samples per luma pixel: libjpeg scales chroma's IDCT up, not down, when it
    // can (at 4/8 and below, 4:2:0 chroma comes out at the luma's size).
    fx[i] = static_cast<double>(comp->h_samp_factor * comp->DCT_scaled_size) /
            (c->max_h_samp_factor * c->min_DCT_scaled_size);
    fy[i] = static_cast<double>(comp->v_samp_factor * comp->DCT_scaled_size) /
            (c->max_v_samp_factor * c->min_DCT_scaled_size);
  }
  jpeg_abort_decompress(c);  // also clears raw_data_out
  if (truncated) return DataLossError(std::string("truncated JPEG: ") + s.err.message);
  if (codec_only) return Status::Ok();

  // Each plane to the output size (a sample covers 1/fx x 1/fy luma pixels),
  // mirrored if asked, then to RGB there, laid out as asked.
  const size_t pixels = static_cast<size_t>(target.width) * target.height;
  const ResizeTarget plane{target.width, target.height, 1, target.flip, PixelLayout::kHwc};
  for (int i = 0; i < 3; ++i) {
    resized_[i].resize(pixels);
    const Region r{scaled.x * fx[i], scaled.y * fy[i], scaled.width * fx[i], scaled.height * fy[i]};
    resampler_.Resize(planes_[i].data(), widths[i], heights[i], strides[i], r, plane,
                      std::as_writable_bytes(std::span(resized_[i])));
  }
  auto* bytes = reinterpret_cast<uint8_t*>(out.data());
  if (target.layout == PixelLayout::kChw) {
    YccToRgbPlanes(resized_[0].data(), resized_[1].data(), resized_[2].data(), pixels, bytes,
                   bytes + pixels, bytes + 2 * pixels);
  } else {
    YccToRgbPixels(resized_[0].data(), resized_[1].data(), resized_[2].data(), pixels, bytes);
  }
  return Status::Ok();
}

Status JpegDecoder::DecodeRows(int n, const Region& region, const ResizeTarget& target,
                               Region* in_buffer) {
  State& s = *state_;
  jpeg_decompress_struct* c = &s.cinfo;
  SetScale(n);
  const bool cmyk = c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK;
  c->out_color_space = cmyk ? JCS_CMYK : (target.channels == 1 ? JCS_GRAYSCALE : JCS_RGB);
  if (setjmp(s.err.jump)) {
    jpeg_abort_decompress(c);
    return DataLossError(std::string("corrupt JPEG: ") + s.err.message);
  }
  jpeg_start_decompress(c);
  const int full_width = static_cast<int>(c->output_width);
  const int full_height = static_cast<int>(c->output_height);
  // Scaled pixel i covers pixels [i * 8/n, (i + 1) * 8/n); the last may be partial.
  const double f = n / 8.0;
  const Region scaled{region.x * f, region.y * f, region.width * f, region.height * f};

  // The columns and rows the resampler reads (with a margin), and no others.
  const int x0 = std::clamp(static_cast<int>(std::floor(scaled.x)) - 1, 0, full_width - 1);
  const int x1 =
      std::clamp(static_cast<int>(std::ceil(scaled.x + scaled.width)) + 1, x0 + 1, full_width);
  const int y0 = std::clamp(static_cast<int>(std::floor(scaled.y)) - 1, 0, full_height - 1);
  const int y1 =
      std::clamp(static_cast<int>(std::ceil(scaled.y + scaled.height)) + 1, y0 + 1, full_height);
  JDIMENSION xoffset = static_cast<JDIMENSION>(x0);
  JDIMENSION width = static_cast<JDIMENSION>(x1 - x0);
  if (width < c->output_width) jpeg_crop_scanline(c, &xoffset, &width);  // widened to iMCUs
  if (y0 > 0) jpeg_skip_scanlines(c, static_cast<JDIMENSION>(y0));

  const int components = c->output_components;
  const size_t stride = static_cast<size_t>(width) * components;
  pixels_.resize(stride * static_cast<size_t>(y1 - y0));
  // All rows at once: libjpeg then hands over whole row groups without copies.
  rows_.resize(static_cast<size_t>(y1 - y0));
  for (int r = 0; r < y1 - y0; ++r) rows_[r] = &pixels_[static_cast<size_t>(r) * stride];
  while (c->output_scanline < static_cast<JDIMENSION>(y1)) {
    const JDIMENSION at = c->output_scanline - static_cast<JDIMENSION>(y0);
    jpeg_read_scanlines(c, &rows_[at], static_cast<JDIMENSION>(y1) - c->output_scanline);
  }
  const bool truncated = s.err.premature_end;
  const bool adobe = c->saw_Adobe_marker;
  jpeg_abort_decompress(c);
  if (truncated) {
    return DataLossError(std::string("truncated JPEG: ") + s.err.message);
  }

  if (cmyk) {
    // To RGB (or luma) in place. Adobe's CMYK JPEGs store inverted values.
    const size_t count = static_cast<size_t>(width) * (y1 - y0);
    uint8_t* p = pixels_.data();
    for (size_t i = 0; i < count; ++i) {
      int cc = p[4 * i], m = p[4 * i + 1], y = p[4 * i + 2], k = p[4 * i + 3];
      if (!adobe) {
        cc = 255 - cc;
        m = 255 - m;
        y = 255 - y;
        k = 255 - k;
      }
      const int r = cc * k / 255, g = m * k / 255, b = y * k / 255;
      if (target.channels == 1) {
        p[i] = static_cast<uint8_t>((299 * r + 587 * g + 114 * b + 500) / 1000);
      } else {
        p[3 * i] = static_cast<uint8_t>(r);
        p[3 * i + 1] = static_cast<uint8_t>(g);
        p[3 * i + 2] = static_cast<uint8_t>(b);
      }
    }
  }
  pixels_width_ = static_cast<int>(width);
  pixels_height_ = y1 - y0;
  *in_buffer = {scaled.x - xoffset, scaled.y - y0, scaled.width, scaled.height};
  return Status::Ok();
}

}  // namespace stoke::internal

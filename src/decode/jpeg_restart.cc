#include "decode/jpeg_restart.h"

// jpeglib.h needs FILE and size_t declared first.
#include <cstdio>
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace stoke::internal {
namespace {

// Marker codes (the byte after 0xFF).
constexpr int kSoi = 0xD8, kEoi = 0xD9, kSos = 0xDA, kDri = 0xDD;
constexpr int kRst0 = 0xD0, kRst7 = 0xD7;
constexpr int kSof0 = 0xC0, kSof1 = 0xC1;  // baseline and extended sequential, Huffman

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

}  // namespace

bool RestartLayout::Parse(std::span<const std::byte> jpeg) {
  jpeg_ = jpeg;
  segment_begin_.clear();
  segment_end_.clear();
  interval_ = 0;
  const auto* p = reinterpret_cast<const uint8_t*>(jpeg.data());
  const size_t n = jpeg.size();
  if (n < 4 || n > UINT32_MAX || p[0] != 0xFF || p[1] != kSoi) return false;
  auto u16 = [p](size_t at) { return (p[at] << 8) | p[at + 1]; };

  // The marker segments up to the start of the scan.
  bool frame = false;
  int components = 0, hmax = 1, vmax = 1;
  size_t at = 2;
  for (;;) {
    if (at + 4 > n || p[at] != 0xFF) return false;
    const int marker = p[at + 1];
    if (marker == 0xFF) {  // fill byte
      ++at;
      continue;
    }
    const size_t length = static_cast<size_t>(u16(at + 2));
    if (length < 2 || at + 2 + length > n) return false;
    const size_t body = at + 4;
    if (marker == kSof0 || marker == kSof1) {
      if (length < 8) return false;
      size_offset_ = body + 1;
      height_ = u16(body + 1);
      width_ = u16(body + 3);
      components = p[body + 5];
      if (height_ == 0 || width_ == 0 || components < 1 || length != 8 + 3u * components) {
        return false;
      }
      for (int c = 0; c < components; ++c) {
        const int h = p[body + 7 + 3 * c] >> 4, v = p[body + 7 + 3 * c] & 15;
        if (h < 1 || h > 4 || v < 1 || v > 4) return false;
        hmax = std::max(hmax, h);
        vmax = std::max(vmax, v);
      }
      frame = true;
    } else if ((marker >= 0xC2 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 &&
                marker != 0xCC)) {
      return false;  // progressive, lossless or arithmetic-coded
    } else if (marker == kDri) {
      if (length != 4) return false;
      interval_ = u16(body);
    } else if (marker == kSos) {
      if (!frame || p[body] != components) return false;  // one scan of every component
      scan_offset_ = at + 2 + length;
      break;
    }
    at += 2 + length;
  }
  if (interval_ == 0) return false;
  // An interleaved scan's MCU spans the largest sampling factors' blocks; a
  // single component's is one 8x8 block.
  mcu_width_ = components == 1 ? 8 : 8 * hmax;
  mcu_height_ = components == 1 ? 8 : 8 * vmax;
  mcus_per_row_ = CeilDiv(width_, mcu_width_);
  mcu_rows_ = CeilDiv(height_, mcu_height_);
  if (mcus_per_row_ % interval_ != 0 && interval_ % mcus_per_row_ != 0) return false;

  // The entropy-coded data: segments end at RSTn (n counting 0..7 in turn), the
  // last at EOI. 0xFF00 is a stuffed data byte, 0xFFFF a fill byte.
  const int64_t expected = CeilDiv(mcus_per_row_ * mcu_rows_, interval_);
  segment_begin_.reserve(static_cast<size_t>(expected));
  segment_end_.reserve(static_cast<size_t>(expected));
  size_t begin = scan_offset_;
  at = scan_offset_;
  for (;;) {
    const void* ff = std::memchr(p + at, 0xFF, n - at);
    if (ff == nullptr) return false;  // no EOI: truncated
    at = static_cast<size_t>(static_cast<const uint8_t*>(ff) - p);
    if (at + 1 >= n) return false;
    const int next = p[at + 1];
    if (next == 0x00 || next == 0xFF) {
      at += 1 + (next == 0x00);
      continue;
    }
    segment_begin_.push_back(static_cast<uint32_t>(begin));
    segment_end_.push_back(static_cast<uint32_t>(at));
    if (next == kEoi) break;
    const int64_t index = static_cast<int64_t>(segment_begin_.size()) - 1;
    if (next < kRst0 || next > kRst7 || next - kRst0 != index % 8 || index + 1 >= expected) {
      return false;  // another scan, or markers out of order
    }
    at += 2;
    begin = at;
  }
  return static_cast<int64_t>(segment_begin_.size()) == expected;
}

bool RestartLayout::Cut(int x0, int y0, int x1, int y1, std::vector<std::byte>* out, int* origin_x,
                        int* origin_y) const {
  // The segment grid: columns of `group_width` pixels, rows of `group_height`.
  const bool within_row = mcus_per_row_ % interval_ == 0;
  const int columns = within_row ? mcus_per_row_ / interval_ : 1;
  const int group_width = within_row ? interval_ * mcu_width_ : width_;
  const int group_height = within_row ? mcu_height_ : interval_ / mcus_per_row_ * mcu_height_;
  const int rows = CeilDiv(height_, group_height);
  const int c0 = x0 / group_width, c1 = std::min(CeilDiv(x1, group_width), columns);
  const int r0 = y0 / group_height, r1 = std::min(CeilDiv(y1, group_height), rows);
  if (c1 <= c0 || r1 <= r0) return false;  // an empty rectangle: nothing to cut to
  if (c0 == 0 && c1 == columns && r0 == 0 && r1 == rows) return false;
  *origin_x = c0 * group_width;
  *origin_y = r0 * group_height;
  const int width = std::min(c1 * group_width, width_) - *origin_x;
  const int height = std::min(r1 * group_height, height_) - *origin_y;

  size_t bytes = scan_offset_ + 2;
  for (int r = r0; r < r1; ++r) {
    for (int c = c0; c < c1; ++c) {
      const size_t s = static_cast<size_t>(r) * columns + c;
      bytes += segment_end_[s] - segment_begin_[s] + 2;
    }
  }
  out->resize(bytes);
  auto* o = reinterpret_cast<uint8_t*>(out->data());
  std::memcpy(o, jpeg_.data(), scan_offset_);
  o[size_offset_] = static_cast<uint8_t>(height >> 8);
  o[size_offset_ + 1] = static_cast<uint8_t>(height);
  o[size_offset_ + 2] = static_cast<uint8_t>(width >> 8);
  o[size_offset_ + 3] = static_cast<uint8_t>(width);
  size_t at = scan_offset_;
  int written = 0;
  const int total = (r1 - r0) * (c1 - c0);
  for (int r = r0; r < r1; ++r) {
    for (int c = c0; c < c1; ++c) {
      const size_t s = static_cast<size_t>(r) * columns + c;
      const size_t length = segment_end_[s] - segment_begin_[s];
      std::memcpy(o + at, jpeg_.data() + segment_begin_[s], length);
      at += length;
      o[at++] = 0xFF;
      o[at++] = static_cast<uint8_t>(++written == total ? kEoi : kRst0 + (written - 1) % 8);
    }
  }
  return true;
}

namespace {

struct TranscodeError {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool warned = false;
};

[[noreturn]] void TranscodeErrorExit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<TranscodeError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void KeepFirstWarning(j_common_ptr cinfo, int level) {
  auto* e = reinterpret_cast<TranscodeError*>(cinfo->err);
  if (level >= 0 || e->warned) return;  // trace messages, later warnings
  e->warned = true;
  (*cinfo->err->format_message)(cinfo, e->message);
}

// libjpeg's output into a vector we own. (jpeg_mem_dest's buffer is not safe
// to free after an error: when it has grown, the pointer it hands back still
// names the first allocation, which libjpeg has freed already.)
struct VectorDestination {
  jpeg_destination_mgr pub;
  std::vector<std::byte>* out;
};

VectorDestination* DestinationOf(j_compress_ptr c) {
  return reinterpret_cast<VectorDestination*>(c->dest);
}

// Grows the vector to `bytes`, with libjpeg's out-of-memory error on failure
// (no C++ exception may cross libjpeg's frames).
void Grow(j_compress_ptr c, size_t bytes) {
  bool failed = false;
  try {
    DestinationOf(c)->out->resize(bytes);
  } catch (const std::bad_alloc&) {
    failed = true;
  }
  if (failed) {  // outside the handler: error_exit does not return
    c->err->msg_code = JERR_OUT_OF_MEMORY;
    (*c->err->error_exit)(reinterpret_cast<j_common_ptr>(c));
  }
}

void InitDestination(j_compress_ptr c) {
  VectorDestination* d = DestinationOf(c);
  Grow(c, size_t{1} << 16);
  d->pub.next_output_byte = reinterpret_cast<JOCTET*>(d->out->data());
  d->pub.free_in_buffer = d->out->size();
}

boolean EmptyOutputBuffer(j_compress_ptr c) {  // the whole buffer is full
  VectorDestination* d = DestinationOf(c);
  const size_t used = d->out->size();
  Grow(c, used * 2);
  d->pub.next_output_byte = reinterpret_cast<JOCTET*>(d->out->data() + used);
  d->pub.free_in_buffer = d->out->size() - used;
  return TRUE;
}

void TermDestination(j_compress_ptr c) {
  VectorDestination* d = DestinationOf(c);
  d->out->resize(d->out->size() - d->pub.free_in_buffer);
}

// libjpeg's state for one transcode, released however it ends.
struct Transcoder {
  TranscodeError err;  // for both
  jpeg_decompress_struct src;
  jpeg_compress_struct dst;
  std::vector<std::byte> buffer;
  VectorDestination dest{{}, &buffer};
  bool src_created = false, dst_created = false;
  ~Transcoder() {
    if (dst_created) jpeg_destroy_compress(&dst);
    if (src_created) jpeg_destroy_decompress(&src);
  }
};

}  // namespace

Status AddRestartMarkers(std::span<const std::byte> jpeg, std::vector<std::byte>* out) {
  auto t = std::make_unique<Transcoder>();
  t->src.err = t->dst.err = jpeg_std_error(&t->err.pub);
  t->err.pub.error_exit = TranscodeErrorExit;
  t->err.pub.emit_message = KeepFirstWarning;
  t->err.message[0] = '\0';
  // Nothing with a destructor is created between here and the last libjpeg call.
  if (setjmp(t->err.jump)) {
    return DataLossError(std::string("JPEG cannot be rewritten with restart markers: ") +
                         t->err.message);
  }
  jpeg_create_decompress(&t->src);
  t->src_created = true;
  jpeg_create_compress(&t->dst);
  t->dst_created = true;
  jpeg_mem_src(&t->src, reinterpret_cast<const unsigned char*>(jpeg.data()),
               static_cast<unsigned long>(jpeg.size()));
  jpeg_save_markers(&t->src, JPEG_COM, 0xFFFF);
  for (int m = 1; m < 14; ++m) jpeg_save_markers(&t->src, JPEG_APP0 + m, 0xFFFF);
  jpeg_read_header(&t->src, TRUE);
  // The rewrite holds every DCT coefficient of the image: bounded before libjpeg
  // allocates them (a small file may declare a giant image).
  uint64_t blocks = 0;
  for (int c = 0; c < t->src.num_components; ++c) {
    const jpeg_component_info& comp = t->src.comp_info[c];
    blocks += uint64_t{comp.width_in_blocks} * comp.height_in_blocks;
  }
  if (blocks * sizeof(JBLOCK) > kMaxRewriteCoefficientBytes) {
    return ResourceExhaustedError(
        "JPEG not rewritten with restart markers: it declares " +
        std::to_string(t->src.image_width) + "x" + std::to_string(t->src.image_height) + "x" +
        std::to_string(t->src.num_components) + ", whose coefficients need " +
        std::to_string(blocks * sizeof(JBLOCK) >> 20) + " MiB, more than the " +
        std::to_string(kMaxRewriteCoefficientBytes >> 20) + " MiB a rewrite may hold");
  }
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&t->src);
  t->dest.pub.init_destination = InitDestination;
  t->dest.pub.empty_output_buffer = EmptyOutputBuffer;
  t->dest.pub.term_destination = TermDestination;
  t->dst.dest = &t->dest.pub;
  jpeg_copy_critical_parameters(&t->src, &t->dst);
  t->dst.optimize_coding = TRUE;
  t->dst.restart_interval = 1;
  jpeg_write_coefficients(&t->dst, coefficients);
  for (jpeg_saved_marker_ptr m = t->src.marker_list; m != nullptr; m = m->next) {
    jpeg_write_marker(&t->dst, m->marker, m->data, m->data_length);
  }
  jpeg_finish_compress(&t->dst);
  jpeg_finish_decompress(&t->src);
  if (t->err.warned) {
    // The rewrite would be a clean JPEG of the damaged pixels, hiding the damage.
    return DataLossError(std::string("JPEG not rewritten with restart markers, it is damaged: ") +
                         t->err.message);
  }
  out->assign(t->buffer.begin(), t->buffer.end());
  return Status::Ok();
}

}  // namespace stoke::internal

#include "dataset/gzip.h"

#include <zlib.h>

#include <algorithm>

namespace stoke::internal {

bool IsGzip(std::span<const std::byte> data) {
  return data.size() >= 2 && data[0] == std::byte{0x1f} && data[1] == std::byte{0x8b};
}

struct GzipReader::Stream {
  z_stream z{};
  bool initialised = false;
  ~Stream() {
    if (initialised) inflateEnd(&z);
  }
};

GzipReader::GzipReader(std::span<const std::byte> compressed, std::string name)
    : stream_(std::make_unique<Stream>()), in_(compressed), name_(std::move(name)) {
  // 16 + MAX_WBITS: gzip wrapper only.
  stream_->initialised = inflateInit2(&stream_->z, 16 + MAX_WBITS) == Z_OK;
}

GzipReader::~GzipReader() = default;

StatusOr<size_t> GzipReader::Inflate(std::span<std::byte> out) {
  if (!stream_->initialised) return InternalError(name_ + ": zlib inflateInit2 failed");
  z_stream& zs = stream_->z;
  size_t written = 0;
  while (written < out.size() && !ended_) {
    const size_t in_chunk = std::min<size_t>(in_.size() - consumed_, 1u << 30);
    const size_t out_chunk = std::min<size_t>(out.size() - written, 1u << 30);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in_.data() + consumed_));
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + written);
    zs.avail_out = static_cast<uInt>(out_chunk);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    consumed_ += in_chunk - zs.avail_in;
    written += out_chunk - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow.
      if (consumed_ < in_.size() && IsGzip(in_.subspan(consumed_))) {
        inflateReset(&zs);
      } else {
        ended_ = true;
      }
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_out != 0 && consumed_ == in_.size()) {
      return DataLossError(name_ + ": truncated gzip stream after " + std::to_string(consumed_) +
                           " compressed bytes");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string why = zs.msg ? zs.msg : "zlib error " + std::to_string(rc);
      return DataLossError(name_ + ": corrupt gzip data at compressed byte " +
                           std::to_string(consumed_) + ": " + why);
    }
  }
  produced_ += written;
  return written;
}

Status GzipReader::Read(std::span<std::byte> out) {
  STOKE_ASSIGN_OR_RETURN(const size_t got, Inflate(out));
  if (got < out.size()) {
    return DataLossError(name_ + ": the gzip stream ends after " + std::to_string(produced_) +
                         " decompressed bytes; " + std::to_string(produced_ - got + out.size()) +
                         " were expected");
  }
  return Status::Ok();
}

StatusOr<bool> GzipReader::AtEnd() {
  std::byte one[1];
  STOKE_ASSIGN_OR_RETURN(const size_t got, Inflate(one));
  return got == 0;
}

}  // namespace stoke::internal

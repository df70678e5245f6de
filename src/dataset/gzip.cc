#include "dataset/gzip.h"

#include <zlib.h>

#include <algorithm>

namespace stoke::internal {

bool IsGzip(std::span<const std::byte> data) {
  return data.size() >= 2 && data[0] == std::byte{0x1f} && data[1] == std::byte{0x8b};
}

StatusOr<std::vector<std::byte>> Gunzip(std::span<const std::byte> data, const std::string& name,
                                        uint64_t max_bytes) {
  z_stream zs{};
  // 16 + MAX_WBITS: gzip wrapper only.
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    return InternalError(name + ": zlib inflateInit2 failed");
  }
  std::vector<std::byte> out;
  out.resize(std::min<uint64_t>(max_bytes, std::max<size_t>(data.size() * 4, 4096)));
  size_t produced = 0;
  size_t consumed = 0;
  int rc = Z_OK;
  while (true) {
    if (produced == out.size()) {
      if (out.size() >= max_bytes) {
        inflateEnd(&zs);
        return ResourceExhaustedError(name + ": decompresses to more than " +
                                      std::to_string(max_bytes) + " bytes");
      }
      out.resize(std::min<uint64_t>(max_bytes, out.size() * 2));
    }
    const size_t in_chunk = std::min<size_t>(data.size() - consumed, 1u << 30);
    const size_t out_chunk = std::min<size_t>(out.size() - produced, 1u << 30);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(data.data() + consumed));
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(out_chunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    consumed += in_chunk - zs.avail_in;
    produced += out_chunk - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow.
      if (consumed < data.size() && IsGzip(data.subspan(consumed))) {
        inflateReset(&zs);
        continue;
      }
      break;
    }
    if (rc == Z_BUF_ERROR && zs.avail_out != 0 && consumed == data.size()) {
      inflateEnd(&zs);
      return DataLossError(name + ": truncated gzip stream after " + std::to_string(consumed) +
                           " compressed bytes");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      std::string why = zs.msg ? zs.msg : "zlib error " + std::to_string(rc);
      inflateEnd(&zs);
      return DataLossError(name + ": corrupt gzip data at compressed byte " +
                           std::to_string(consumed) + ": " + why);
    }
  }
  inflateEnd(&zs);
  out.resize(produced);
  out.shrink_to_fit();
  return out;
}

}  // namespace stoke::internal

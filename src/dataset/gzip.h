// Streaming gzip decompression for dataset files held compressed in memory
// (IDX images and labels). The caller reads what a header declares and no more,
// so a small file that inflates to gigabytes (a decompression bomb) costs only
// the bytes its header justifies.
#ifndef STOKE_SRC_DATASET_GZIP_H_
#define STOKE_SRC_DATASET_GZIP_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "stoke/status.h"

namespace stoke::internal {

// True if `data` starts with the gzip magic bytes 1f 8b.
bool IsGzip(std::span<const std::byte> data);

// Inflates a gzip stream (concatenated members allowed) on demand. Errors are
// DataLoss naming `name`: a corrupt stream, with the compressed offset; one
// that ends before the bytes asked for, with how many it held.
class GzipReader {
 public:
  // `compressed` must outlive the reader.
  GzipReader(std::span<const std::byte> compressed, std::string name);
  ~GzipReader();
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // Fills `out` with the next bytes of the decompressed stream.
  Status Read(std::span<std::byte> out);
  // Whether the decompressed stream has ended: inflates at most one more byte.
  StatusOr<bool> AtEnd();
  // Decompressed bytes delivered so far.
  uint64_t produced() const { return produced_; }

 private:
  // Inflates into `out` until it is full or the stream ends; returns the bytes
  // written.
  StatusOr<size_t> Inflate(std::span<std::byte> out);

  struct Stream;
  std::unique_ptr<Stream> stream_;
  std::span<const std::byte> in_;
  const std::string name_;
  size_t consumed_ = 0;
  uint64_t produced_ = 0;
  bool ended_ = false;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_GZIP_H_

// A read-only memory mapping of an open file: for data in RAM (page cache,
// tmpfs), a sample is a memcpy from the mapping, with no system call per
// sample. Pages not in RAM are read on first touch, with the kernel's
// read-ahead around the fault.
//
// Touching a page the file no longer has (truncated by someone else while it is
// mapped) or one the device cannot read (EIO on the fault) raises SIGBUS.
// CopyFromMapping turns that into a failed copy, so that the loader's copies
// from a mapping are an error of their sample rather than a signal; anything
// else that reads a mapping directly (a decoder) is not protected.
#ifndef STOKE_SRC_IO_MAPPED_FILE_H_
#define STOKE_SRC_IO_MAPPED_FILE_H_

#include <cstddef>
#include <memory>
#include <span>

#include "stoke/file_system.h"
#include "stoke/status.h"

namespace stoke::internal {

class MappedFile {
 public:
  // Maps all of `file`. Unavailable when the file has no POSIX descriptor (a
  // fake) or mmap fails; the status names the file.
  static StatusOr<std::unique_ptr<MappedFile>> Map(RandomAccessFile& file);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  // The fraction of the mapping's pages in RAM now (mincore; 0 if it fails):
  // reading those costs no I/O. A weak guarantee: the kernel may evict pages
  // at any time, and some machines reclaim a few percent of a file's pages
  // continually.
  double ResidentFraction() const;

 private:
  MappedFile(const std::byte* data, size_t size) : data_(data), size_(size) {}
  const std::byte* data_;
  size_t size_;
};

// One copy out of a mapping made by MappedFile::Map.
struct MappingCopy {
  std::byte* dst = nullptr;
  const std::byte* src = nullptr;
  size_t bytes = 0;
};

// Makes copies[0..n) in order until one's source raises SIGBUS (a page the
// file lost to a truncation, or one the device failed to read). Returns n when
// all were made, else the index of that one (partly written; those before it
// are made). Never allocates; any thread; about the cost of the memcpys: the
// guard is armed once per call (sigsetjmp without a system call).
size_t CopyFromMapping(const MappingCopy* copies, size_t n);

}  // namespace stoke::internal

#endif  // STOKE_SRC_IO_MAPPED_FILE_H_

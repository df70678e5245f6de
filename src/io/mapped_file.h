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
  // Whether every page of the mapping is in RAM now (mincore): reading it then
  // costs no I/O. A weak guarantee: the kernel may evict pages at any time.
  bool Resident() const;

 private:
  MappedFile(const std::byte* data, size_t size) : data_(data), size_(size) {}
  const std::byte* data_;
  size_t size_;
};

// Copies [src, src + n) of a mapping made by MappedFile::Map to dst. Returns
// false, with dst partly written, when a page of the source raised SIGBUS (the
// file was truncated, or the device failed to read it). Never allocates; any
// thread; about the cost of a memcpy (no system call).
bool CopyFromMapping(std::byte* dst, const std::byte* src, size_t n);

}  // namespace stoke::internal

#endif  // STOKE_SRC_IO_MAPPED_FILE_H_

// A read-only memory mapping of an open file: for data in RAM (page cache,
// tmpfs), a sample is a memcpy from the mapping, with no system call per
// sample. Pages not in RAM are read on first touch, with the kernel's
// read-ahead around the fault.
//
// A file truncated by someone else while it is mapped makes touching the lost
// pages raise SIGBUS, as with any mmap reader; use pread or io_uring for files
// that may change during training.
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

 private:
  MappedFile(const std::byte* data, size_t size) : data_(data), size_(size) {}
  const std::byte* data_;
  size_t size_;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_IO_MAPPED_FILE_H_

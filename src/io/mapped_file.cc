#include "io/mapped_file.h"

#include <sys/mman.h>

#include <cerrno>
#include <string>

namespace stoke::internal {

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Map(RandomAccessFile& file) {
  if (file.native_handle() < 0) {
    return UnavailableError(file.name() + ": cannot be memory-mapped (no POSIX descriptor)");
  }
  STOKE_ASSIGN_OR_RETURN(uint64_t size, file.Size());
  if (size == 0) return std::unique_ptr<MappedFile>(new MappedFile(nullptr, 0));
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, file.native_handle(), 0);
  if (p == MAP_FAILED) return ErrnoToStatus(errno, file.name() + ": mmap");
  return std::unique_ptr<MappedFile>(new MappedFile(static_cast<const std::byte*>(p), size));
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace stoke::internal

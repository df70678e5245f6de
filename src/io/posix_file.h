// A POSIX file that the default file system reopens in place for each
// per-sample read (FileSystem::OpenReusing: image folders, file lists), so that
// those opens allocate nothing: one lives in each read request once warm, its
// name is the dataset's stored path (not copied), and open and read errors
// read as the default file system's (posix_file_system.cc).
#ifndef STOKE_SRC_IO_POSIX_FILE_H_
#define STOKE_SRC_IO_POSIX_FILE_H_

#include <string>

#include "stoke/file_system.h"

namespace stoke::internal {

// open(2) with the options' flags, retried on EINTR: the descriptor, or the
// error naming `path` (InvalidArgument for O_DIRECT where it is unsupported).
StatusOr<int> OpenPosix(const std::string& path, const FileOptions& options);
// pread(2), retried on EINTR; an error names `name`, the size and the offset.
StatusOr<size_t> PreadAt(int fd, const std::string& name, uint64_t offset,
                         std::span<std::byte> dst);

class ReusablePosixFile final : public RandomAccessFile {
 public:
  ReusablePosixFile() = default;
  ReusablePosixFile(ReusablePosixFile&& other) noexcept : path_(other.path_), fd_(other.fd_) {
    other.fd_ = -1;
  }
  ReusablePosixFile(const ReusablePosixFile&) = delete;
  ReusablePosixFile& operator=(const ReusablePosixFile&) = delete;
  ~ReusablePosixFile() override { Close(); }

  // Opens `path`, which must outlive the open file; closes any file open before.
  Status Open(const std::string& path, const FileOptions& options);
  void Close();
  bool is_open() const { return fd_ >= 0; }

  StatusOr<size_t> ReadAt(uint64_t offset, Span<std::byte> dst) override {
    return PreadAt(fd_, *path_, offset, dst);
  }
  StatusOr<uint64_t> Size() override;
  const std::string& name() const override { return *path_; }
  int native_handle() const override { return fd_; }
  bool short_read_means_eof() const override { return true; }

 private:
  const std::string* path_ = nullptr;
  int fd_ = -1;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_IO_POSIX_FILE_H_

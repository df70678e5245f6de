// The POSIX FileSystem: open(2) and pread(2), optionally O_DIRECT.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "stoke/file_system.h"

namespace stoke {
namespace {

class PosixFile final : public RandomAccessFile {
 public:
  PosixFile(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
  ~PosixFile() override { ::close(fd_); }

  StatusOr<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) override {
    while (true) {
      ssize_t n = ::pread(fd_, dst.data(), dst.size(), static_cast<off_t>(offset));
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, name_ + ": read of " + std::to_string(dst.size()) +
                                      " bytes at offset " + std::to_string(offset));
    }
  }

  StatusOr<uint64_t> Size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoToStatus(errno, name_ + ": fstat");
    return static_cast<uint64_t>(st.st_size);
  }

  const std::string& name() const override { return name_; }
  int native_handle() const override { return fd_; }
  bool short_read_means_eof() const override { return true; }

 private:
  const std::string name_;
  const int fd_;
};

class PosixFileSystem final : public FileSystem {
 public:
  StatusOr<std::unique_ptr<RandomAccessFile>> Open(const std::string& path,
                                                   const FileOptions& options) override {
    int flags = O_RDONLY | O_CLOEXEC;
    if (options.direct) flags |= O_DIRECT;
    int fd;
    do {
      fd = ::open(path.c_str(), flags);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0 && options.direct && errno == EINVAL) {
      return InvalidArgumentError(path + ": this file system does not support O_DIRECT (--direct)");
    }
    if (fd < 0) return ErrnoToStatus(errno, path);
    // A directory opens; its first read fails with EISDIR, naming the path.
    return std::unique_ptr<RandomAccessFile>(new PosixFile(path, fd));
  }
};

}  // namespace

FileSystem* DefaultFileSystem() {
  static FileSystem* fs = new PosixFileSystem();
  return fs;
}

StatusOr<std::vector<std::byte>> FileSystem::ReadAll(const std::string& path, uint64_t max_bytes) {
  STOKE_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, Open(path, FileOptions{}));
  STOKE_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (size > max_bytes) {
    return ResourceExhaustedError(path + ": " + std::to_string(size) +
                                  " bytes is larger than the limit of " +
                                  std::to_string(max_bytes) + " bytes for this file");
  }
  std::vector<std::byte> data(size);
  uint64_t done = 0;
  while (done < size) {
    STOKE_ASSIGN_OR_RETURN(size_t n, file->ReadAt(done, std::span(data).subspan(done)));
    if (n == 0) {
      return DataLossError(path + ": file shrank while being read: got " + std::to_string(done) +
                           " of " + std::to_string(size) + " bytes");
    }
    done += n;
  }
  return data;
}

}  // namespace stoke

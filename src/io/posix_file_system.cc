// The POSIX FileSystem: open(2) and pread(2), optionally O_DIRECT.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "io/posix_file.h"
#include "stoke/file_system.h"

namespace stoke {
namespace internal {

StatusOr<int> OpenPosix(const std::string& path, const FileOptions& options) {
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
  return fd;
}

StatusOr<size_t> PreadAt(int fd, const std::string& name, uint64_t offset,
                         std::span<std::byte> dst) {
  while (true) {
    ssize_t n = ::pread(fd, dst.data(), dst.size(), static_cast<off_t>(offset));
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    return ErrnoToStatus(errno, name + ": read of " + std::to_string(dst.size()) +
                                    " bytes at offset " + std::to_string(offset));
  }
}

StatusOr<uint64_t> FileSize(int fd, const std::string& name) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoToStatus(errno, name + ": fstat");
  return static_cast<uint64_t>(st.st_size);
}

Status ReusablePosixFile::Open(const std::string& path, const FileOptions& options) {
  Close();
  STOKE_ASSIGN_OR_RETURN(fd_, OpenPosix(path, options));
  path_ = &path;
  return Status::Ok();
}

void ReusablePosixFile::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

StatusOr<uint64_t> ReusablePosixFile::Size() { return FileSize(fd_, *path_); }

}  // namespace internal

namespace {

class PosixFile final : public RandomAccessFile {
 public:
  PosixFile(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
  ~PosixFile() override { ::close(fd_); }

  StatusOr<size_t> ReadAt(uint64_t offset, Span<std::byte> dst) override {
    return internal::PreadAt(fd_, name_, offset, dst);
  }
  StatusOr<uint64_t> Size() override { return internal::FileSize(fd_, name_); }
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
    STOKE_ASSIGN_OR_RETURN(const int fd, internal::OpenPosix(path, options));
    return std::unique_ptr<RandomAccessFile>(new PosixFile(path, fd));
  }

  // A ReusablePosixFile, created once per holder and reopened in place.
  Status OpenReusing(const std::string& path, const FileOptions& options,
                     std::unique_ptr<RandomAccessFile>* file) override {
    auto* reusable = dynamic_cast<internal::ReusablePosixFile*>(file->get());
    if (reusable == nullptr) {
      auto made = std::make_unique<internal::ReusablePosixFile>();
      reusable = made.get();
      *file = std::move(made);
    }
    return reusable->Open(path, options);
  }
  void CloseReusing(std::unique_ptr<RandomAccessFile>* file) override {
    auto* reusable = dynamic_cast<internal::ReusablePosixFile*>(file->get());
    if (reusable != nullptr) {
      reusable->Close();
    } else {
      file->reset();
    }
  }
};

}  // namespace

FileSystem* DefaultFileSystem() {
  static FileSystem* fs = new PosixFileSystem();
  return fs;
}

Status FileSystem::OpenReusing(const std::string& path, const FileOptions& options,
                               std::unique_ptr<RandomAccessFile>* file) {
  STOKE_ASSIGN_OR_RETURN(*file, Open(path, options));
  return Status::Ok();
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

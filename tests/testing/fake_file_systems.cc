#include "testing/fake_file_systems.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace stoke::testing {

namespace {

class MemoryFile final : public RandomAccessFile {
 public:
  MemoryFile(std::string name, std::shared_ptr<const std::vector<std::byte>> data)
      : name_(std::move(name)), data_(std::move(data)) {}
  StatusOr<size_t> ReadAt(uint64_t offset, Span<std::byte> dst) override {
    if (offset >= data_->size()) return size_t{0};
    const size_t n = std::min<uint64_t>(dst.size(), data_->size() - offset);
    std::memcpy(dst.data(), data_->data() + offset, n);
    return n;
  }
  StatusOr<uint64_t> Size() override { return data_->size(); }
  const std::string& name() const override { return name_; }

 private:
  const std::string name_;
  const std::shared_ptr<const std::vector<std::byte>> data_;
};

}  // namespace

void MemoryFileSystem::Write(const std::string& path, std::vector<std::byte> data) {
  std::lock_guard<std::mutex> lock(mu_);
  files_[path] = std::make_shared<const std::vector<std::byte>>(std::move(data));
}

StatusOr<std::unique_ptr<RandomAccessFile>> MemoryFileSystem::Open(const std::string& path,
                                                                   const FileOptions&) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return ErrnoToStatus(ENOENT, path);
  return std::unique_ptr<RandomAccessFile>(new MemoryFile(path, it->second));
}

class FaultFile final : public RandomAccessFile {
 public:
  FaultFile(FaultFileSystem* fs, std::unique_ptr<RandomAccessFile> base)
      : fs_(fs), base_(std::move(base)) {}
  StatusOr<size_t> ReadAt(uint64_t offset, Span<std::byte> dst) override {
    const FaultFileSystem::Faults& f = fs_->faults_;
    const uint64_t call = fs_->calls_.fetch_add(1) + 1;
    if (f.delay.count() > 0) std::this_thread::sleep_for(f.delay);
    if ((f.eio_on_call != 0 && call == f.eio_on_call) ||
        (!f.eio_path_substring.empty() && name().find(f.eio_path_substring) != std::string::npos)) {
      return ErrnoToStatus(EIO, name() + ": read of " + std::to_string(dst.size()) +
                                    " bytes at offset " + std::to_string(offset));
    }
    if (f.max_bytes_per_read != 0 && dst.size() > f.max_bytes_per_read) {
      dst = dst.first(f.max_bytes_per_read);
    }
    return base_->ReadAt(offset, dst);
  }
  StatusOr<uint64_t> Size() override { return base_->Size(); }
  const std::string& name() const override { return base_->name(); }

 private:
  FaultFileSystem* const fs_;
  const std::unique_ptr<RandomAccessFile> base_;
};

StatusOr<std::unique_ptr<RandomAccessFile>> FaultFileSystem::Open(const std::string& path,
                                                                  const FileOptions& options) {
  STOKE_ASSIGN_OR_RETURN(auto base, base_->Open(path, options));
  return std::unique_ptr<RandomAccessFile>(new FaultFile(this, std::move(base)));
}

}  // namespace stoke::testing

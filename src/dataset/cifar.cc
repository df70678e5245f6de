// CIFAR-10 / CIFAR-100 binary: fixed-size records of label byte(s) and 3x32x32
// uint8 pixels (CHW), in one or more files.
#include <algorithm>
#include <cstring>
#include <string>

#include "stoke/dataset.h"

namespace stoke {
namespace {

constexpr uint64_t kPixelBytes = 3 * 32 * 32;

class CifarDataset final : public Dataset {
 public:
  // `counts[f]` records live in files[f]; CIFAR-100 records carry two label bytes.
  CifarDataset(FileSystem* fs, std::vector<std::string> files, std::vector<uint64_t> counts,
               bool cifar100)
      : fs_(fs), files_(std::move(files)), label_bytes_(cifar100 ? 2 : 1) {
    uint64_t total = 0;
    for (uint64_t c : counts) {
      first_.push_back(total);
      total += c;
    }
    size_ = total;
    spec_.dtype = DType::kUint8;
    spec_.shape = {3, 32, 32};
  }

  uint64_t size() const override { return size_; }
  const SampleSpec& spec() const override { return spec_; }
  uint32_t file_count() const override { return static_cast<uint32_t>(files_.size()); }
  const std::string& file_path(uint32_t file) const override { return files_[file]; }
  FileSystem* file_system() const override { return fs_; }

  SampleLocation Locate(uint64_t index) const override {
    // The last file whose first record is <= index.
    auto it = std::upper_bound(first_.begin(), first_.end(), index);
    const uint32_t f = static_cast<uint32_t>(it - first_.begin() - 1);
    SampleLocation loc;
    loc.file = f;
    loc.offset = (index - first_[f]) * (label_bytes_ + kPixelBytes);
    loc.length = label_bytes_ + kPixelBytes;
    return loc;
  }

  Status Decode(uint64_t, Span<const std::byte> stored, Span<std::byte> out,
                int64_t* label) const override {
    // The fine label is the last label byte (CIFAR-100: coarse, fine).
    *label = static_cast<uint8_t>(stored[label_bytes_ - 1]);
    std::memcpy(out.data(), stored.data() + label_bytes_, kPixelBytes);
    return Status::Ok();
  }

  std::string Describe() const override {
    return std::string(label_bytes_ == 2 ? "CIFAR-100 " : "CIFAR-10 ") + files_.front() +
           (files_.size() > 1 ? " (+" + std::to_string(files_.size() - 1) + " files)" : "") + ": " +
           std::to_string(size_) + " samples of " + spec_.ToString();
  }

 private:
  FileSystem* const fs_;
  const std::vector<std::string> files_;
  const uint64_t label_bytes_;
  std::vector<uint64_t> first_;  // index of each file's first record
  uint64_t size_ = 0;
  SampleSpec spec_;
};

}  // namespace

StatusOr<std::shared_ptr<Dataset>> OpenCifar(const std::string& dir, std::string_view split,
                                             FileSystem* file_system) {
  if (split != "train" && split != "test") {
    return InvalidArgumentError("split '" + std::string(split) +
                                "' is not one of train, test (CIFAR)");
  }
  FileSystem* fs = file_system ? file_system : DefaultFileSystem();
  // CIFAR-100 if its files are there, else CIFAR-10.
  const bool cifar100 = fs->Open(dir + "/" + std::string(split) + ".bin", FileOptions{}).ok();
  std::vector<std::string> files;
  if (cifar100) {
    files.push_back(dir + "/" + std::string(split) + ".bin");
  } else if (split == "test") {
    files.push_back(dir + "/test_batch.bin");
  } else {
    for (int i = 1; i <= 5; ++i) files.push_back(dir + "/data_batch_" + std::to_string(i) + ".bin");
  }
  const uint64_t record = (cifar100 ? 2 : 1) + kPixelBytes;
  std::vector<uint64_t> counts;
  for (const std::string& path : files) {
    auto file = fs->Open(path, FileOptions{});
    if (!file.ok()) {
      return file.status().WithContext("CIFAR " + std::string(split) + " split in " + dir);
    }
    STOKE_ASSIGN_OR_RETURN(uint64_t size, (*file)->Size());
    if (size == 0 || size % record != 0) {
      return DataLossError(path + ": " + std::to_string(size) + " bytes is not a whole number of " +
                           std::to_string(record) + "-byte CIFAR-" + (cifar100 ? "100" : "10") +
                           " records");
    }
    counts.push_back(size / record);
  }
  return std::shared_ptr<Dataset>(
      new CifarDataset(fs, std::move(files), std::move(counts), cifar100));
}

}  // namespace stoke

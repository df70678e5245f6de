// Datasets held in memory: samples given as they are delivered (FromMemory, and
// Preload's result), and LoaderOptions::preload's copy of every sample's
// stored bytes, read once into one block and decoded as before (so random
// crops still differ by epoch).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "dataset/in_memory.h"
#include "dataset/stored.h"

namespace stoke::internal {
namespace {

class StoredInMemory final : public Dataset {
 public:
  StoredInMemory(std::shared_ptr<const Dataset> base, std::vector<std::byte> bytes,
                 std::vector<uint64_t> offsets)
      : base_(std::move(base)), bytes_(std::move(bytes)), offsets_(std::move(offsets)) {
    for (size_t i = 0; i + 1 < offsets_.size(); ++i) {
      longest_ = std::max(longest_, offsets_[i + 1] - offsets_[i]);
    }
  }

  uint64_t size() const override { return base_->size(); }
  const SampleSpec& spec() const override { return base_->spec(); }
  uint32_t file_count() const override { return base_->file_count(); }
  const std::string& file_path(uint32_t file) const override { return base_->file_path(file); }
  FileSystem* file_system() const override { return base_->file_system(); }
  bool decode_is_compute_bound() const override { return base_->decode_is_compute_bound(); }
  uint64_t max_stored_bytes() const override { return longest_; }
  std::optional<int64_t> StoredLabel(uint64_t index) const override {
    return base_->StoredLabel(index);
  }
  SampleLocation Locate(uint64_t index) const override {
    SampleLocation loc = base_->Locate(index);  // keeps its file, for messages
    loc.memory = bytes_.data() + offsets_[index];
    loc.length = offsets_[index + 1] - offsets_[index];
    loc.whole_file = false;
    return loc;
  }
  Status Decode(uint64_t index, Span<const std::byte> stored, Span<std::byte> out,
                int64_t* label) const override {
    return base_->Decode(index, stored, out, label);
  }
  Status DecodeSample(const DecodeContext& ctx, Span<const std::byte> stored, Span<std::byte> out,
                      int64_t* label) const override {
    return base_->DecodeSample(ctx, stored, out, label);
  }
  std::string Describe() const override {
    return base_->Describe() + ", preloaded (" + std::to_string(bytes_.size()) + " bytes in RAM)";
  }

 private:
  const std::shared_ptr<const Dataset> base_;
  const std::vector<std::byte> bytes_;
  const std::vector<uint64_t> offsets_;  // size() + 1
  uint64_t longest_ = 0;
};

// Samples stored as delivered, back to back, with their labels.
class SamplesInMemory final : public Dataset {
 public:
  SamplesInMemory(std::string name, SampleSpec spec, std::vector<std::byte> data,
                  std::vector<int64_t> labels)
      : name_(std::move(name)),
        spec_(std::move(spec)),
        sample_bytes_(spec_.bytes()),
        data_(std::move(data)),
        labels_(std::move(labels)) {}

  uint64_t size() const override { return labels_.size(); }
  const SampleSpec& spec() const override { return spec_; }
  uint32_t file_count() const override { return 0; }
  const std::string& file_path(uint32_t) const override { return name_; }
  FileSystem* file_system() const override { return DefaultFileSystem(); }
  SampleLocation Locate(uint64_t index) const override {
    SampleLocation loc;
    loc.memory = data_.data() + index * sample_bytes_;
    loc.length = sample_bytes_;
    return loc;
  }
  bool stored_as_output() const override { return true; }
  Status Decode(uint64_t index, Span<const std::byte> stored, Span<std::byte> out,
                int64_t* label) const override {
    if (stored.data() != out.data()) std::memcpy(out.data(), stored.data(), out.size());
    *label = labels_[index];
    return Status::Ok();
  }
  std::optional<int64_t> StoredLabel(uint64_t index) const override { return labels_[index]; }
  std::string Describe() const override {
    return name_ + ": " + std::to_string(labels_.size()) + " samples of " + spec_.ToString();
  }

 private:
  const std::string name_;
  const SampleSpec spec_;
  const size_t sample_bytes_;
  const std::vector<std::byte> data_;
  const std::vector<int64_t> labels_;
};

}  // namespace

StatusOr<std::shared_ptr<Dataset>> PreloadStored(std::shared_ptr<const Dataset> dataset,
                                                 uint64_t max_bytes) {
  std::vector<std::byte> bytes;
  std::vector<uint64_t> offsets = {0};
  std::vector<std::byte> sample;
  for (uint64_t i = 0; i < dataset->size(); ++i) {
    STOKE_RETURN_IF_ERROR(ReadStoredSample(*dataset, i, &sample).WithContext("preload"));
    if (bytes.size() + sample.size() > max_bytes) {
      return ResourceExhaustedError(
          "LoaderOptions.preload_max_bytes: " + dataset->Describe() + " does not fit in " +
          std::to_string(max_bytes) + " bytes (the first " + std::to_string(i + 1) +
          " samples already take " + std::to_string(bytes.size() + sample.size()) + ")");
    }
    bytes.insert(bytes.end(), sample.begin(), sample.end());
    offsets.push_back(bytes.size());
  }
  bytes.shrink_to_fit();
  return std::shared_ptr<Dataset>(
      new StoredInMemory(std::move(dataset), std::move(bytes), std::move(offsets)));
}

}  // namespace stoke::internal

namespace stoke {

StatusOr<std::shared_ptr<Dataset>> FromMemory(SampleSpec spec, std::vector<std::byte> samples,
                                              std::vector<int64_t> labels, std::string name) {
  const size_t sample_bytes = spec.bytes();
  if (sample_bytes == 0) {
    return InvalidArgumentError("FromMemory: " + name + ": samples of " + spec.ToString() +
                                " hold no bytes");
  }
  if (labels.empty() || samples.size() != labels.size() * sample_bytes) {
    return InvalidArgumentError("FromMemory: " + name + ": " + std::to_string(samples.size()) +
                                " bytes are not " + std::to_string(labels.size()) + " samples of " +
                                spec.ToString() + " (" + std::to_string(sample_bytes) +
                                " bytes each)");
  }
  return std::shared_ptr<Dataset>(new internal::SamplesInMemory(
      std::move(name), std::move(spec), std::move(samples), std::move(labels)));
}

}  // namespace stoke

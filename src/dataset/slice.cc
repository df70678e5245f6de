// A contiguous range of another dataset's samples.
#include <string>

#include "stoke/dataset.h"

namespace stoke {
namespace {

class SliceDataset final : public Dataset {
 public:
  SliceDataset(std::shared_ptr<const Dataset> base, uint64_t begin, uint64_t end)
      : base_(std::move(base)), begin_(begin), size_(end - begin) {}

  uint64_t size() const override { return size_; }
  const SampleSpec& spec() const override { return base_->spec(); }
  uint32_t file_count() const override { return base_->file_count(); }
  const std::string& file_path(uint32_t file) const override { return base_->file_path(file); }
  FileSystem* file_system() const override { return base_->file_system(); }
  SampleLocation Locate(uint64_t index) const override { return base_->Locate(begin_ + index); }
  bool decode_is_compute_bound() const override { return base_->decode_is_compute_bound(); }
  bool stored_as_output() const override { return base_->stored_as_output(); }
  Status Decode(uint64_t index, std::span<const std::byte> stored, std::span<std::byte> out,
                int64_t* label) const override {
    return base_->Decode(begin_ + index, stored, out, label);
  }
  Status DecodeSample(const DecodeContext& ctx, std::span<const std::byte> stored,
                      std::span<std::byte> out, int64_t* label) const override {
    DecodeContext shifted = ctx;
    shifted.index = begin_ + ctx.index;
    return base_->DecodeSample(shifted, stored, out, label);
  }
  std::string Describe() const override {
    return "samples [" + std::to_string(begin_) + ", " + std::to_string(begin_ + size_) + ") of " +
           base_->Describe();
  }

 private:
  const std::shared_ptr<const Dataset> base_;
  const uint64_t begin_;
  const uint64_t size_;
};

}  // namespace

StatusOr<std::shared_ptr<Dataset>> Slice(std::shared_ptr<const Dataset> dataset, uint64_t begin,
                                         uint64_t end) {
  if (!dataset) return InvalidArgumentError("Slice: dataset is null");
  if (!(begin < end && end <= dataset->size())) {
    return InvalidArgumentError("Slice: [" + std::to_string(begin) + ", " + std::to_string(end) +
                                ") is not a non-empty range of " + dataset->Describe());
  }
  return std::shared_ptr<Dataset>(new SliceDataset(std::move(dataset), begin, end));
}

}  // namespace stoke

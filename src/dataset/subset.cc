// Datasets made of another's samples: a contiguous range (Slice), any list of
// them (Subset), and a seeded, stratified validation split (StratifiedSplit).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "dataset/stored.h"
#include "decode/crop.h"
#include "stoke/dataset.h"

namespace stoke {
namespace {

// Sample i is the base's sample begin + i, or indices[i] when there is a list.
class SubsetDataset final : public Dataset {
 public:
  SubsetDataset(std::shared_ptr<const Dataset> base, uint64_t begin, uint64_t size,
                std::vector<uint64_t> indices, std::string what)
      : base_(std::move(base)),
        begin_(begin),
        size_(size),
        indices_(std::move(indices)),
        what_(std::move(what)) {}

  uint64_t size() const override { return size_; }
  const SampleSpec& spec() const override { return base_->spec(); }
  uint32_t file_count() const override { return base_->file_count(); }
  const std::string& file_path(uint32_t file) const override { return base_->file_path(file); }
  FileSystem* file_system() const override { return base_->file_system(); }
  SampleLocation Locate(uint64_t index) const override { return base_->Locate(Base(index)); }
  bool decode_is_compute_bound() const override { return base_->decode_is_compute_bound(); }
  bool stored_as_output() const override { return base_->stored_as_output(); }
  Status Decode(uint64_t index, Span<const std::byte> stored, Span<std::byte> out,
                int64_t* label) const override {
    return base_->Decode(Base(index), stored, out, label);
  }
  Status DecodeSample(const DecodeContext& ctx, Span<const std::byte> stored, Span<std::byte> out,
                      int64_t* label) const override {
    DecodeContext mapped = ctx;
    mapped.index = Base(ctx.index);
    return base_->DecodeSample(mapped, stored, out, label);
  }
  uint64_t max_stored_bytes() const override { return base_->max_stored_bytes(); }
  uint64_t typical_stored_bytes() const override { return base_->typical_stored_bytes(); }
  std::optional<int64_t> StoredLabel(uint64_t index) const override {
    return base_->StoredLabel(Base(index));
  }
  std::string Describe() const override { return what_ + " of " + base_->Describe(); }

 private:
  uint64_t Base(uint64_t index) const {
    return indices_.empty() ? begin_ + index : indices_[index];
  }

  const std::shared_ptr<const Dataset> base_;
  const uint64_t begin_;
  const uint64_t size_;
  const std::vector<uint64_t> indices_;
  const std::string what_;
};

// Every sample's label: the stored ones where the dataset keeps them, else each
// sample read and decoded in order (CIFAR: 3 KB records, a second per 50,000).
StatusOr<std::vector<int64_t>> AllLabels(const Dataset& d) {
  std::vector<int64_t> labels(d.size());
  uint64_t i = 0;
  for (; i < d.size(); ++i) {
    const std::optional<int64_t> label = d.StoredLabel(i);
    if (!label) break;
    labels[i] = *label;
  }
  if (i == d.size()) return labels;
  std::vector<std::byte> stored;
  std::vector<std::byte> out(d.spec().bytes());
  for (i = 0; i < d.size(); ++i) {
    Status s = internal::ReadStoredSample(d, i, &stored);
    if (s.ok()) s = d.Decode(i, stored, out, &labels[i]);
    if (!s.ok())
      return s.WithContext("reading labels for a stratified split, sample " + std::to_string(i));
  }
  return labels;
}

// A seeded Fisher-Yates shuffle of `v` on the samples' splitmix64 stream
// (decode/crop.h): the same on every platform, unlike std::shuffle.
void SeededShuffle(std::vector<uint64_t>* v, uint64_t seed) {
  internal::SampleRandom random(seed);
  for (size_t k = v->size(); k > 1; --k) std::swap((*v)[k - 1], (*v)[random.Next() % k]);
}

}  // namespace

StatusOr<std::shared_ptr<Dataset>> Slice(std::shared_ptr<const Dataset> dataset, uint64_t begin,
                                         uint64_t end) {
  if (!dataset) return InvalidArgumentError("Slice: dataset is null");
  if (!(begin < end && end <= dataset->size())) {
    return InvalidArgumentError("Slice: [" + std::to_string(begin) + ", " + std::to_string(end) +
                                ") is not a non-empty range of " + dataset->Describe());
  }
  std::string what = "samples [" + std::to_string(begin) + ", " + std::to_string(end) + ")";
  return std::shared_ptr<Dataset>(
      new SubsetDataset(std::move(dataset), begin, end - begin, {}, std::move(what)));
}

StatusOr<std::shared_ptr<Dataset>> Subset(std::shared_ptr<const Dataset> dataset,
                                          std::vector<uint64_t> indices, std::string name) {
  if (!dataset) return InvalidArgumentError("Subset: dataset is null");
  if (indices.empty()) return InvalidArgumentError("Subset: no indices of " + dataset->Describe());
  for (const uint64_t i : indices) {
    if (i >= dataset->size()) {
      return InvalidArgumentError("Subset: index " + std::to_string(i) + " is past the " +
                                  std::to_string(dataset->size()) + " samples of " +
                                  dataset->Describe());
    }
  }
  const uint64_t n = indices.size();
  std::string what = (name.empty() ? "a subset" : name) + " (" + std::to_string(n) + " samples)";
  return std::shared_ptr<Dataset>(
      new SubsetDataset(std::move(dataset), 0, n, std::move(indices), std::move(what)));
}

StatusOr<DatasetSplit> StratifiedSplit(std::shared_ptr<const Dataset> dataset, double fraction,
                                       uint64_t seed) {
  if (!dataset) return InvalidArgumentError("StratifiedSplit: dataset is null");
  if (!(fraction > 0 && fraction < 1)) {
    return InvalidArgumentError("StratifiedSplit: the validation fraction " +
                                std::to_string(fraction) + " is not in (0, 1)");
  }
  STOKE_ASSIGN_OR_RETURN(const std::vector<int64_t> labels, AllLabels(*dataset));
  std::map<int64_t, std::vector<uint64_t>> classes;
  for (uint64_t i = 0; i < labels.size(); ++i) classes[labels[i]].push_back(i);
  std::vector<uint64_t> train, validation;
  for (auto& [label, members] : classes) {
    const auto take =
        static_cast<size_t>(std::llround(fraction * static_cast<double>(members.size())));
    SeededShuffle(&members, seed ^ (static_cast<uint64_t>(label) * 0x9e3779b97f4a7c15ull));
    validation.insert(validation.end(), members.begin(), members.begin() + take);
    train.insert(train.end(), members.begin() + take, members.end());
  }
  if (validation.empty() || train.empty()) {
    return InvalidArgumentError(
        "StratifiedSplit: a validation fraction of " + std::to_string(fraction) + " leaves " +
        (validation.empty() ? "no validation" : "no training") + " samples in " +
        std::to_string(classes.size()) + " classes of " + dataset->Describe());
  }
  // In dataset order, so that reads keep the files' locality.
  std::sort(train.begin(), train.end());
  std::sort(validation.begin(), validation.end());
  DatasetSplit split;
  STOKE_ASSIGN_OR_RETURN(split.train, Subset(dataset, std::move(train), "the training split"));
  STOKE_ASSIGN_OR_RETURN(split.validation,
                         Subset(dataset, std::move(validation), "the validation split"));
  return split;
}

}  // namespace stoke

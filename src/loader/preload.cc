// The in-memory wrapper: a dataset's samples and labels, decoded once.
#include <cstring>
#include <vector>

#include "stoke/loader.h"

namespace stoke {
namespace {

class InMemoryDataset final : public Dataset {
 public:
  InMemoryDataset(std::string name, SampleSpec spec, std::vector<std::byte> data,
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

  Status Decode(uint64_t index, std::span<const std::byte> stored, std::span<std::byte> out,
                int64_t* label) const override {
    if (stored.data() != out.data()) std::memcpy(out.data(), stored.data(), out.size());
    *label = labels_[index];
    return Status::Ok();
  }

  std::string Describe() const override { return name_; }

 private:
  const std::string name_;
  const SampleSpec spec_;
  const size_t sample_bytes_;
  const std::vector<std::byte> data_;
  const std::vector<int64_t> labels_;
};

}  // namespace

StatusOr<std::shared_ptr<Dataset>> Preload(std::shared_ptr<const Dataset> dataset,
                                           const LoaderOptions& options, uint64_t max_bytes) {
  if (!dataset) return InvalidArgumentError("Preload: dataset is null");
  const uint64_t n = dataset->size();
  const size_t sample_bytes = dataset->spec().bytes();
  if (sample_bytes != 0 && n > max_bytes / sample_bytes) {
    return ResourceExhaustedError(
        "Preload: " + dataset->Describe() + " needs " + std::to_string(n * sample_bytes) +
        " bytes in memory, more than the limit of " + std::to_string(max_bytes));
  }
  LoaderOptions o = options;  // keep the performance fields, read everything once in order
  o.order = Order::kSequential;
  o.drop_last = false;
  o.rank = 0;
  o.world_size = 1;
  o.on_error = ErrorPolicy::kFail;
  o.start = {};
  STOKE_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader, Loader::Open(dataset, o));
  std::vector<std::byte> data(n * sample_bytes);
  std::vector<int64_t> labels(n);
  uint64_t at = 0;
  while (true) {
    STOKE_ASSIGN_OR_RETURN(Batch batch, loader->Next());
    if (!batch) break;
    std::memcpy(data.data() + at * sample_bytes, batch.data(), batch.bytes());
    std::memcpy(labels.data() + at, batch.labels().data(), batch.size() * sizeof(int64_t));
    at += static_cast<uint64_t>(batch.size());
  }
  return std::shared_ptr<Dataset>(new InMemoryDataset(
      "in memory: " + dataset->Describe(), dataset->spec(), std::move(data), std::move(labels)));
}

}  // namespace stoke

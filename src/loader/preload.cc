// Preload: a dataset's samples and labels, decoded once by a loader, as a
// dataset in memory (FromMemory).
#include <cassert>
#include <cstring>
#include <vector>

#include "stoke/loader.h"

namespace stoke {

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
  // Stored as the dataset's own samples: uint8 host memory in the ring's slots,
  // whatever device, conversion or preload the caller's delivery asks for
  // (they apply when the preloaded dataset is loaded).
  o.device = DeviceSpec{};
  o.output_dtype = DType::kUint8;
  o.normalize_mean.clear();
  o.normalize_std.clear();
  o.preload = false;
  STOKE_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader, Loader::Open(dataset, o));
  std::vector<std::byte> data(n * sample_bytes);
  std::vector<int64_t> labels(n);
  uint64_t at = 0;
  while (true) {
    STOKE_ASSIGN_OR_RETURN(Batch batch, loader->Next());
    if (!batch) break;
    assert(batch.bytes() == static_cast<size_t>(batch.size()) * sample_bytes);
    assert(at + static_cast<uint64_t>(batch.size()) <= n);
    std::memcpy(data.data() + at * sample_bytes, batch.data(), batch.bytes());
    std::memcpy(labels.data() + at, batch.labels().data(), batch.size() * sizeof(int64_t));
    at += static_cast<uint64_t>(batch.size());
  }
  return FromMemory(dataset->spec(), std::move(data), std::move(labels),
                    "in memory: " + dataset->Describe());
}

}  // namespace stoke

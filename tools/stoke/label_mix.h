// The batch label mix: how well a sample order mixes classes into batches, the
// randomness a storage-friendly order trades away. For each batch, the
// total-variation distance between its label histogram and the whole run's,
// averaged over batches: 0 when every batch holds the classes in the run's
// proportions, 1 when each batch holds one class that is rare overall (a
// class-sorted folder read in order gives about 1 - 1/classes). A fully
// shuffled order gives only sampling noise (about 0.07 for 8 balanced classes
// at batch 256).
//
//   LabelMix mix;
//   for (Batch& b : loader.Epoch(0)) mix.Add(b.labels());
//   double m = mix.Mean();
//
// Keeps the labels of the first max_samples samples (4 bytes each); later
// batches are not counted. Not thread-safe.
#ifndef STOKE_TOOLS_STOKE_LABEL_MIX_H_
#define STOKE_TOOLS_STOKE_LABEL_MIX_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace stoke {

class LabelMix {
 public:
  explicit LabelMix(size_t max_samples = size_t{1} << 22) : max_samples_(max_samples) {}

  void Add(std::span<const int64_t> batch_labels) {
    if (batch_labels.empty() || labels_.size() + batch_labels.size() > max_samples_) return;
    labels_.insert(labels_.end(), batch_labels.begin(), batch_labels.end());
    ends_.push_back(labels_.size());
  }

  // The mean distance over the batches added; 0 with none.
  double Mean() const {
    if (ends_.empty()) return 0;
    std::unordered_map<int64_t, double> share;
    for (int64_t l : labels_) share[l] += 1.0 / static_cast<double>(labels_.size());
    std::unordered_map<int64_t, int64_t> counts;
    double total = 0;
    size_t begin = 0;
    for (size_t end : ends_) {
      counts.clear();
      for (size_t i = begin; i < end; ++i) ++counts[labels_[i]];
      const auto size = static_cast<double>(end - begin);
      // Classes absent from the batch add their whole share.
      double distance = 0;
      double present = 0;
      for (const auto& [label, n] : counts) {
        const double p = share[label];
        distance += std::abs(static_cast<double>(n) / size - p);
        present += p;
      }
      distance += std::max(0.0, 1.0 - present);
      total += distance / 2;
      begin = end;
    }
    return total / static_cast<double>(ends_.size());
  }

  size_t batches() const { return ends_.size(); }

 private:
  size_t max_samples_;
  std::vector<int64_t> labels_;
  std::vector<size_t> ends_;
};

}  // namespace stoke

#endif  // STOKE_TOOLS_STOKE_LABEL_MIX_H_

#include "testing/image_data.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace stoke::testing {
namespace {

constexpr int kSide = 8;
constexpr int kChannels = 3;
constexpr size_t kBytes = kSide * kSide * kChannels;

class ImageArray final : public Dataset {
 public:
  ImageArray(uint64_t n, bool channels_last, uint32_t seed) : n_(n) {
    spec_.shape = channels_last ? std::vector<int64_t>{kSide, kSide, kChannels}
                                : std::vector<int64_t>{kChannels, kSide, kSide};
    spec_.channels_last = channels_last;
    bytes_.resize(n * kBytes);
    labels_.resize(n);
    std::mt19937 random(seed);
    // Each class lights its quadrant in its own mix of the channels.
    const int colour[4][kChannels] = {{150, 0, 0}, {0, 150, 0}, {0, 0, 150}, {150, 150, 0}};
    for (uint64_t i = 0; i < n; ++i) {
      const int k = static_cast<int>(random() % 4);
      labels_[i] = k;
      for (int y = 0; y < kSide; ++y) {
        for (int x = 0; x < kSide; ++x) {
          const bool lit = (y / 4) * 2 + (x / 4) == k;
          for (int c = 0; c < kChannels; ++c) {
            const auto v = static_cast<uint8_t>((lit ? colour[k][c] : 0) + random() % 100);
            const size_t at =
                channels_last ? (y * kSide + x) * kChannels + c : (c * kSide + y) * kSide + x;
            bytes_[i * kBytes + at] = v;
          }
        }
      }
    }
  }

  uint64_t size() const override { return n_; }
  const SampleSpec& spec() const override { return spec_; }
  uint32_t file_count() const override { return 1; }
  const std::string& file_path(uint32_t) const override { return name_; }
  FileSystem* file_system() const override { return DefaultFileSystem(); }
  SampleLocation Locate(uint64_t index) const override {
    SampleLocation loc;
    loc.memory = reinterpret_cast<const std::byte*>(bytes_.data()) + index * kBytes;
    loc.length = kBytes;
    return loc;
  }
  bool stored_as_output() const override { return true; }
  Status Decode(uint64_t index, std::span<const std::byte> stored, std::span<std::byte> out,
                int64_t* label) const override {
    std::memcpy(out.data(), stored.data(), out.size());
    *label = labels_[index];
    return Status::Ok();
  }
  std::optional<int64_t> StoredLabel(uint64_t index) const override { return labels_[index]; }
  std::string Describe() const override {
    return "colour quadrants: " + std::to_string(n_) + " samples of " + spec_.ToString();
  }

 private:
  uint64_t n_;
  SampleSpec spec_;
  std::vector<uint8_t> bytes_;
  std::vector<int64_t> labels_;
  std::string name_ = "<colour quadrants>";
};

}  // namespace

std::shared_ptr<Dataset> ColourQuadrants(uint64_t n, bool channels_last, uint32_t seed) {
  return std::make_shared<ImageArray>(n, channels_last, seed);
}

}  // namespace stoke::testing

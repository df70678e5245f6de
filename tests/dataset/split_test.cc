// Subset, FromMemory and StratifiedSplit: every class gives the same fraction to
// validation, the two sides partition the dataset, the split is a pure
// function of its seed, labels come from decoding when the dataset does not
// store them (CIFAR), and bad fractions and indices are named.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "stoke/dataset.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

using testing::TempDir;

// The dataset index of each of `d`'s samples, by its label (SampleLabel(i) is
// i % 10, so a split's labels say which base samples it holds).
std::vector<int64_t> Labels(const Dataset& d) {
  std::vector<int64_t> out;
  for (uint64_t i = 0; i < d.size(); ++i) out.push_back(d.StoredLabel(i).value_or(-1));
  return out;
}

TEST(StratifiedSplitTest, EveryClassValidatesTheSameFraction) {
  TempDir dir;
  testing::WriteIdxSplit(dir, 1000, 4, 4);  // 100 samples in each of 10 classes
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok()) << d.status();
  auto split = StratifiedSplit(*d, 0.1, 7);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->train->size(), 900u);
  EXPECT_EQ(split->validation->size(), 100u);
  std::map<int64_t, int> per_class;
  for (int64_t label : Labels(*split->validation)) ++per_class[label];
  ASSERT_EQ(per_class.size(), 10u);
  for (const auto& [label, count] : per_class) EXPECT_EQ(count, 10) << "class " << label;
  EXPECT_NE(split->validation->Describe().find("the validation split (100 samples)"),
            std::string::npos)
      << split->validation->Describe();
}

TEST(StratifiedSplitTest, TheSidesPartitionTheDatasetAndDependOnlyOnTheSeed) {
  TempDir dir;
  testing::WriteIdxSplit(dir, 500, 4, 4);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok()) << d.status();
  auto indices = [](const Dataset& side) {
    // The samples' offsets in the one images file: the base samples each
    // side holds.
    std::vector<uint64_t> at;
    for (uint64_t i = 0; i < side.size(); ++i) at.push_back(side.Locate(i).offset);
    return at;
  };
  auto a = StratifiedSplit(*d, 0.25, 1);
  auto b = StratifiedSplit(*d, 0.25, 1);
  auto c = StratifiedSplit(*d, 0.25, 2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(indices(*a->validation), indices(*b->validation));
  EXPECT_NE(indices(*a->validation), indices(*c->validation));
  std::set<uint64_t> seen;
  for (auto* side : {a->train.get(), a->validation.get()}) {
    for (const uint64_t p : indices(*side)) EXPECT_TRUE(seen.insert(p).second);
  }
  EXPECT_EQ(seen.size(), 500u);
  // Each side keeps dataset order.
  const auto v = indices(*a->validation);
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
}

TEST(StratifiedSplitTest, ReadsLabelsByDecodingWhenTheDatasetDoesNotStoreThem) {
  TempDir dir;
  for (int b = 1; b <= 5; ++b) {
    testing::WriteCifar(dir.Join("data_batch_" + std::to_string(b) + ".bin"), 40, false,
                        (b - 1) * 40);
  }
  auto d = OpenCifar(dir.path(), "train");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_FALSE((*d)->StoredLabel(0).has_value());
  auto split = StratifiedSplit(*d, 0.2, 3);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_EQ(split->validation->size(), 40u);  // 4 of each class's 20
  std::map<int64_t, int> per_class;
  std::vector<std::byte> out((*d)->spec().bytes());
  for (uint64_t i = 0; i < split->validation->size(); ++i) {
    const SampleLocation loc = split->validation->Locate(i);
    auto file = (*d)->file_system()->Open((*d)->file_path(loc.file), {});
    ASSERT_TRUE(file.ok());
    std::vector<std::byte> stored(loc.length);
    ASSERT_TRUE((*file)->ReadAt(loc.offset, stored).ok());
    int64_t label = -1;
    ASSERT_TRUE(split->validation->Decode(i, stored, out, &label).ok());
    ++per_class[label];
  }
  ASSERT_EQ(per_class.size(), 10u);
  for (const auto& [label, count] : per_class) EXPECT_EQ(count, 4) << "class " << label;
}

TEST(StratifiedSplitTest, BadFractionsAndIndicesAreNamed) {
  TempDir dir;
  testing::WriteIdxSplit(dir, 20, 4, 4);  // 2 samples a class
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok()) << d.status();
  for (double bad : {0.0, 1.0, -0.5, 2.0}) {
    auto s = StratifiedSplit(*d, bad);
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("is not in (0, 1)"), std::string::npos) << s.status();
  }
  auto s = StratifiedSplit(*d, 0.2);  // round(0.2 x 2) = 0 in every class
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("leaves no validation samples in 10 classes"),
            std::string::npos)
      << s.status();
  auto sub = Subset(*d, {3, 20});
  EXPECT_NE(sub.status().message().find("index 20 is past the 20 samples"), std::string::npos)
      << sub.status();
  EXPECT_EQ(Subset(*d, {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(SubsetTest, KeepsTheBasesLabelsAndReadBufferSize) {
  TempDir dir;
  testing::WriteIdxSplit(dir, 30, 4, 4);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok()) << d.status();
  auto sub = Subset(*d, {29, 4, 4, 13}, "four");
  ASSERT_TRUE(sub.ok()) << sub.status();
  EXPECT_EQ(Labels(**sub), (std::vector<int64_t>{9, 4, 4, 3}));
  EXPECT_EQ((*sub)->max_stored_bytes(), (*d)->max_stored_bytes());
  auto slice = Slice(*d, 10, 12);
  ASSERT_TRUE(slice.ok());
  EXPECT_EQ(Labels(**slice), (std::vector<int64_t>{0, 1}));
}

TEST(FromMemoryTest, ServesItsSamplesAndNamesSizesThatDisagree) {
  SampleSpec spec;
  spec.shape = {2, 3};
  std::vector<std::byte> bytes(12);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i);
  auto d = FromMemory(spec, bytes, {7, 8}, "two");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->size(), 2u);
  EXPECT_EQ((*d)->Describe(), "two: 2 samples of 2x3 uint8");
  EXPECT_EQ((*d)->StoredLabel(1), 8);
  EXPECT_EQ(std::to_integer<int>((*d)->Locate(1).memory[0]), 6);
  auto bad = FromMemory(spec, std::vector<std::byte>(13), {7, 8}, "odd");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("odd: 13 bytes are not 2 samples of 2x3 uint8"),
            std::string::npos)
      << bad.status();
  EXPECT_FALSE(FromMemory(spec, {}, {}, "none").ok());
}

}  // namespace
}  // namespace stoke

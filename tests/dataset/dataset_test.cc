// IDX, CIFAR and list datasets: parsing, validation and the errors that name the file.
#include <gtest/gtest.h>

#include <filesystem>

#include "stoke/dataset.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

using testing::SampleByte;
using testing::SampleLabel;
using testing::TempDir;

// Reads sample i through the dataset's own file system and Decode.
std::vector<std::byte> ReadSample(const Dataset& d, uint64_t i, int64_t* label, Status* status) {
  SampleLocation loc = d.Locate(i);
  std::vector<std::byte> stored;
  if (loc.memory) {
    stored.assign(loc.memory, loc.memory + loc.length);
  } else {
    auto all = d.file_system()->ReadAll(d.file_path(loc.file), 1 << 30);
    EXPECT_TRUE(all.ok()) << all.status();
    stored.assign(all->begin() + static_cast<std::ptrdiff_t>(loc.offset),
                  loc.whole_file
                      ? all->end()
                      : all->begin() + static_cast<std::ptrdiff_t>(loc.offset + loc.length));
  }
  std::vector<std::byte> out(d.spec().bytes());
  *status = d.Decode(i, stored, out, label);
  return out;
}

void ExpectSample(const Dataset& d, uint64_t i) {
  int64_t label = -1;
  Status s;
  auto out = ReadSample(d, i, &label, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(label, SampleLabel(i));
  for (size_t j = 0; j < out.size(); ++j) {
    ASSERT_EQ(static_cast<uint8_t>(out[j]), SampleByte(i, j)) << "sample " << i << " byte " << j;
  }
}

TEST(IdxTest, ReadsPlainAndGzippedFiles) {
  TempDir dir;
  for (bool gz : {false, true}) {
    const std::string suffix = gz ? ".gz" : "";
    testing::WriteIdx(dir.Join("train-images-idx3-ubyte" + suffix),
                      dir.Join("train-labels-idx1-ubyte" + suffix), 50, 7, 5, gz);
    auto d = OpenIdxSplit(dir.path(), "train");
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ((*d)->size(), 50u);
    EXPECT_EQ((*d)->spec().shape, (std::vector<int64_t>{7, 5}));
    for (uint64_t i : {0, 1, 49}) ExpectSample(**d, i);
    std::filesystem::remove(dir.Join("train-images-idx3-ubyte" + suffix));
    std::filesystem::remove(dir.Join("train-labels-idx1-ubyte" + suffix));
  }
}

TEST(IdxTest, RejectsBadMagicSizeAndLabelCountNamingTheFile) {
  TempDir dir;
  const std::string img = dir.Join("i"), lab = dir.Join("l");
  testing::WriteIdx(img, lab, 10, 4, 4);
  auto bytes = testing::ReadFileBytes(img);

  auto truncated = bytes;
  truncated.resize(bytes.size() - 3);
  testing::WriteFile(img, truncated);
  auto d = OpenIdx({.images_path = img, .labels_path = lab});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(d.status().message().find(img), std::string::npos) << d.status();
  EXPECT_NE(d.status().message().find("4x4"), std::string::npos) << d.status();

  auto bad_magic = bytes;
  bad_magic[0] = 0x1;
  testing::WriteFile(img, bad_magic);
  d = OpenIdx({.images_path = img, .labels_path = lab});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("not an IDX file"), std::string::npos) << d.status();

  testing::WriteFile(img, bytes);
  testing::WriteIdx(dir.Join("i2"), lab, 9, 4, 4);  // 9 labels for 10 images
  d = OpenIdx({.images_path = img, .labels_path = lab});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("9 labels"), std::string::npos) << d.status();

  d = OpenIdx({.images_path = dir.Join("missing"), .labels_path = lab});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("missing"), std::string::npos);

  testing::WriteFile(img, {0x1f, 0x8b, 8, 0, 1, 2, 3});  // gzip magic, garbage after
  d = OpenIdx({.images_path = img, .labels_path = lab});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kDataLoss) << d.status();
}

TEST(CifarTest, ReadsCifar10AndCifar100) {
  TempDir dir;
  for (int b = 1; b <= 5; ++b) {
    testing::WriteCifar(dir.Join("data_batch_" + std::to_string(b) + ".bin"), 4, false,
                        (b - 1) * 4);
  }
  auto d = OpenCifar(dir.path(), "train");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->size(), 20u);
  for (uint64_t i : {0, 3, 4, 19}) ExpectSample(**d, i);

  TempDir dir100;
  testing::WriteCifar(dir100.Join("test.bin"), 6, true);
  auto d100 = OpenCifar(dir100.path(), "test");
  ASSERT_TRUE(d100.ok()) << d100.status();
  EXPECT_EQ((*d100)->size(), 6u);
  ExpectSample(**d100, 5);  // the fine label
}

TEST(CifarTest, RejectsPartialRecordsAndMissingFiles) {
  TempDir dir;
  testing::WriteFile(dir.Join("test_batch.bin"), std::vector<uint8_t>(3073 * 2 + 5));
  auto d = OpenCifar(dir.path(), "test");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(d.status().message().find("test_batch.bin"), std::string::npos);
  d = OpenCifar(dir.path(), "train");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("data_batch_1.bin"), std::string::npos) << d.status();
}

TEST(ListTest, ReadsNpyFilesAndLearnsTheSpec) {
  TempDir dir;
  auto d = OpenList({.list_path = testing::WriteNpyList(dir, 12, 3, 4)});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->spec().ToString(), "3x4 uint8");
  for (uint64_t i : {0, 11}) ExpectSample(**d, i);
}

TEST(ListTest, RawFilesMustHaveTheDeclaredSize) {
  TempDir dir;
  std::vector<uint8_t> good(12), bad(11);
  for (size_t j = 0; j < good.size(); ++j) good[j] = SampleByte(0, j);
  testing::WriteFile(dir.Join("a.bin"), good);
  testing::WriteFile(dir.Join("b.bin"), bad);
  testing::WriteFile(dir.Join("l.txt"), {'a', '.', 'b', 'i', 'n', ' ', '0', '\n', 'b', '.', 'b',
                                         'i', 'n', ' ', '1', '\n'});
  auto d = OpenList({.list_path = dir.Join("l.txt"),
                     .raw = true,
                     .spec = {.dtype = DType::kUint8, .shape = {3, 4}}});
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectSample(**d, 0);
  int64_t label;
  Status s;
  ReadSample(**d, 1, &label, &s);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("b.bin"), std::string::npos) << s;
  EXPECT_NE(s.message().find("11 bytes"), std::string::npos) << s;
}

TEST(ListTest, WrongShapeNpyIsADataErrorNamingTheFile) {
  TempDir dir;
  const std::string list = testing::WriteNpyList(dir, 3, 2, 2);
  testing::WriteFile(dir.Join("s1.npy"), testing::NpyBytes({2, 3}, std::vector<uint8_t>(6)));
  testing::WriteFile(dir.Join("s2.npy"), testing::NpyBytes({2, 2}, std::vector<uint8_t>(3)));
  auto d = OpenList({.list_path = list});
  ASSERT_TRUE(d.ok()) << d.status();
  int64_t label;
  Status s;
  ReadSample(**d, 1, &label, &s);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("s1.npy: holds a 2x3 uint8 array"), std::string::npos) << s;
  ReadSample(**d, 2, &label, &s);
  EXPECT_NE(s.message().find("s2.npy"), std::string::npos) << s;
  EXPECT_NE(s.message().find("3 bytes follow"), std::string::npos) << s;
}

TEST(ListTest, MalformedLinesNameTheLine) {
  TempDir dir;
  const std::string text = "# comment\n\na.npy 1\nb.npy one\n";
  testing::WriteFile(dir.Join("l.txt"), std::vector<uint8_t>(text.begin(), text.end()));
  auto d = OpenList({.list_path = dir.Join("l.txt")});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("l.txt:4"), std::string::npos) << d.status();
}

}  // namespace
}  // namespace stoke

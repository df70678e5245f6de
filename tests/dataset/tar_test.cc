// WebDataset tars: a tar GNU tar makes from a folder of key.jpg + key.cls reads
// as the same samples as a list of those files; damaged tars and samples
// without a label name the cause.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "decode/jpeg_decoder.h"
#include "decode/synth_image.h"
#include "stoke/image.h"
#include "stoke/loader.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

using testing::TempDir;

// Writes dir/web/NNNN.jpg and NNNN.cls for n images, a list file of them in
// name order, and web.tar made by GNU tar (members sorted by name).
void MakeWebDataset(const TempDir& dir, int n) {
  std::filesystem::create_directories(dir.Join("web"));
  std::string list;
  for (int i = 0; i < n; ++i) {
    const int w = 40 + 9 * (i % 4), h = 36 + 5 * (i % 3);
    auto jpeg = internal::EncodeJpeg(internal::SynthPixels(w, h, i, i % 3, 3), w, h, {});
    ASSERT_TRUE(jpeg.ok());
    char key[16];
    std::snprintf(key, sizeof key, "%04d", i);
    const auto* p = reinterpret_cast<const uint8_t*>(jpeg->data());
    testing::WriteFile(dir.Join(std::string("web/") + key + ".jpg"),
                       std::vector<uint8_t>(p, p + jpeg->size()));
    const std::string label = std::to_string(i % 3) + "\n";
    testing::WriteFile(dir.Join(std::string("web/") + key + ".cls"),
                       std::vector<uint8_t>(label.begin(), label.end()));
    list += std::string("web/") + key + ".jpg " + std::to_string(i % 3) + "\n";
  }
  testing::WriteFile(dir.Join("list.txt"), std::vector<uint8_t>(list.begin(), list.end()));
  const std::string command =
      "tar --sort=name -cf " + dir.Join("web.tar") + " -C " + dir.path() + " web";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

TEST(TarTest, AGnuTarOfAWebDatasetFolderReadsAsItsFiles) {
  TempDir dir;
  MakeWebDataset(dir, 25);
  ImageOptions image;
  image.height = image.width = 24;
  image.crop = CropMode::kRandomResized;
  image.flip = true;
  auto tar = OpenTar({.path = dir.Join("web.tar"), .image = image});
  ASSERT_TRUE(tar.ok()) << tar.status();
  EXPECT_EQ((*tar)->size(), 25u);
  auto list = OpenImageList({.list_path = dir.Join("list.txt"), .image = image});
  ASSERT_TRUE(list.ok()) << list.status();
  const LoaderOptions o{.batch_size = 4, .order = Order::kFullShuffle, .seed = 8};
  auto a = Loader::Open(*tar, o);
  auto b = Loader::Open(*list, o);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*b)->Seek({1, 0}).ok());
  int64_t batches = 0;
  for (Batch& x : (*a)->Epoch(1)) {
    auto y = (*b)->Next();
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(x.bytes(), y->bytes());
    EXPECT_EQ(std::memcmp(x.data(), y->data(), x.bytes()), 0) << "batch " << x.index();
    EXPECT_TRUE(std::equal(x.labels().begin(), x.labels().end(), y->labels().begin()));

    ++batches;
  }
  EXPECT_EQ(batches, 7);
}

TEST(TarTest, DamagedTarsAndIncompleteSamplesNameTheCause) {
  TempDir dir;
  MakeWebDataset(dir, 6);
  const std::vector<uint8_t> good = testing::ReadFileBytes(dir.Join("web.tar"));
  // Cut inside the third member's data.
  testing::WriteFile(dir.Join("cut.tar"), std::vector<uint8_t>(good.begin(), good.begin() + 3000));
  auto cut = OpenTar({.path = dir.Join("cut.tar")});
  EXPECT_EQ(cut.status().code(), StatusCode::kDataLoss) << cut.status();
  EXPECT_NE(cut.status().message().find("cut.tar: truncated"), std::string::npos) << cut.status();
  // A sample without its label.
  std::filesystem::remove(dir.Join("web/0003.cls"));
  ASSERT_EQ(
      std::system(("tar --sort=name -cf " + dir.Join("nolabel.tar") + " -C " + dir.path() + " web")
                      .c_str()),
      0);
  auto nolabel = OpenTar({.path = dir.Join("nolabel.tar")});
  EXPECT_EQ(nolabel.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nolabel.status().message().find("'web/0003' has no label member"), std::string::npos)
      << nolabel.status();
  EXPECT_EQ(OpenTar({.path = dir.Join("none-*.tar")}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace stoke

// ImageFolder through the loader: torchvision's order and labels, exact
// decodes, determinism of random crops across thread counts, and bad images
// under both error policies.
#include <gtest/gtest.h>

#include <cstdio>
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

std::vector<uint8_t> Jpeg(int w, int h, uint64_t seed) {
  auto jpeg = internal::EncodeJpeg(internal::SynthPixels(w, h, seed), w, h, {});
  EXPECT_TRUE(jpeg.ok());
  const auto* p = reinterpret_cast<const uint8_t*>(jpeg->data());
  return std::vector<uint8_t>(p, p + jpeg->size());
}

void Write(const TempDir& dir, const std::string& rel, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(dir.Join(rel)).parent_path());
  testing::WriteFile(dir.Join(rel), bytes);
}

TEST(ImageFolderTest, OrderAndLabelsAreTorchvisions) {
  TempDir dir;
  const auto jpeg = Jpeg(40, 30, 1);
  // Classes sorted by name; each walked in sorted order; extensions any case;
  // other files ignored.
  for (const char* rel :
       {"dog/b.jpg", "dog/a.JPEG", "dog/nested/c.jpg", "cat/z.jpg", "cat/m.png", "bird/x.jpeg"}) {
    Write(dir, rel, jpeg);
  }
  Write(dir, "dog/notes.txt", {1, 2, 3});
  auto d = OpenImageFolder({.root = dir.path(), .image = {.height = 16, .width = 16}});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ((*d)->size(), 6u);
  const std::vector<std::string> want = {"bird/x.jpeg", "cat/m.png", "cat/z.jpg",
                                         "dog/a.JPEG",  "dog/b.jpg", "dog/nested/c.jpg"};
  const std::vector<int64_t> labels = {0, 1, 1, 2, 2, 2};
  auto loader = Loader::Open(*d, {.batch_size = 6, .on_error = ErrorPolicy::kSkip});
  ASSERT_TRUE(loader.ok()) << loader.status();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ((*d)->file_path(static_cast<uint32_t>(i)), dir.Join(want[i]));
  }
  auto batch = (*loader)->Next();
  ASSERT_TRUE(batch.ok()) << batch.status();
  // m.png holds a JPEG here, so every file decodes; labels follow the classes.
  for (int64_t s = 0; s < batch->size(); ++s) {
    EXPECT_EQ(batch->labels()[s], labels[batch->indices()[s]]);
  }
  EXPECT_EQ(batch->shape()[1], 16);
  EXPECT_EQ(batch->shape()[3], 3);
}

TEST(ImageFolderTest, AnEmptyClassOrAMissingRootIsNotFoundNamingIt) {
  TempDir dir;
  Write(dir, "a/x.jpg", Jpeg(20, 20, 2));
  std::filesystem::create_directories(dir.Join("b"));
  auto d = OpenImageFolder({.root = dir.path()});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find(dir.Join("b")), std::string::npos) << d.status();
  auto missing = OpenImageFolder({.root = dir.Join("nope")});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto bad = OpenImageFolder({.root = dir.path(), .image = {.channels = 2}});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("ImageOptions.channels"), std::string::npos);
}

// Every batch's bytes, in order.
std::vector<std::vector<uint8_t>> Epoch(Loader& loader, int64_t epoch) {
  std::vector<std::vector<uint8_t>> out;
  for (Batch& b : loader.Epoch(epoch)) {
    const auto* p = b.data<uint8_t>();
    out.emplace_back(p, p + b.bytes());
  }
  return out;
}

TEST(ImageFolderTest, RandomCropsAreTheSameForAnyThreadsAndChangeWithEpochAndSeed) {
  TempDir dir;
  for (int i = 0; i < 24; ++i) {
    Write(dir, "c" + std::to_string(i % 3) + "/" + std::to_string(i) + ".jpg",
          Jpeg(60 + i, 50 + 2 * i, i));
  }
  ImageOptions image{.height = 24, .width = 32, .crop = CropMode::kRandomResized, .flip = true};
  auto d = OpenImageFolder({.root = dir.path(), .image = image});
  ASSERT_TRUE(d.ok()) << d.status();
  LoaderOptions base{.batch_size = 5, .order = Order::kFullShuffle, .seed = 3};
  auto reference = Epoch(**Loader::Open(*d, base), 1);
  ASSERT_EQ(reference.size(), 5u);
  for (int threads : {1, 4}) {
    for (int decoders : {0, 3}) {
      LoaderOptions o = base;
      o.read_threads = threads;
      o.decode_threads = decoders;
      EXPECT_EQ(Epoch(**Loader::Open(*d, o), 1), reference) << threads << " " << decoders;
    }
  }
  EXPECT_NE(Epoch(**Loader::Open(*d, base), 2), reference);  // another epoch, other crops
  LoaderOptions other = base;
  other.seed = 4;
  EXPECT_NE(Epoch(**Loader::Open(*d, other), 1), reference);
}

TEST(ImageFolderTest, BadImagesFailNamingTheFileOrAreSkipped) {
  TempDir dir;
  const auto good = Jpeg(64, 48, 7);
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
  png.resize(100, 0);
  std::vector<uint8_t> garbage(3000);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 37 + 1);
  struct Bad {
    const char* name;
    std::vector<uint8_t> bytes;
    const char* says;
  } bads[] = {
      {"zero.jpg", {}, "JPEG"},
      {"truncated.jpg", std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 2), "JPEG"},
      {"garbage.jpg", garbage, "Not a JPEG"},
      {"png.jpg", png, "Not a JPEG"}};
  for (const Bad& bad : bads) {
    TempDir one;
    for (int i = 0; i < 6; ++i) Write(one, "k/" + std::to_string(i) + ".jpg", good);
    Write(one, std::string("k/") + bad.name, bad.bytes);
    auto d = OpenImageFolder({.root = one.path(), .image = {.height = 16, .width = 16}});
    ASSERT_TRUE(d.ok()) << d.status();
    // fail: the batch holding it is an error naming the file and the cause.
    auto fail = Loader::Open(*d, {.batch_size = 7});
    ASSERT_TRUE(fail.ok());
    auto batch = (*fail)->Next();
    ASSERT_FALSE(batch.ok()) << bad.name;
    EXPECT_EQ(batch.status().code(), StatusCode::kDataLoss) << batch.status();
    EXPECT_NE(batch.status().message().find(bad.name), std::string::npos) << batch.status();
    EXPECT_NE(batch.status().message().find(bad.says), std::string::npos) << batch.status();
    // skip: replaced, the batch keeps its size, the file is counted and listed.
    auto skip = Loader::Open(*d, {.batch_size = 7, .on_error = ErrorPolicy::kSkip});
    ASSERT_TRUE(skip.ok());
    auto ok = (*skip)->Next();
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ(ok->size(), 7);
    const LoaderStats stats = (*skip)->stats();
    EXPECT_EQ(stats.skipped, 1u) << bad.name;
    ASSERT_EQ(stats.skipped_samples.size(), 1u);
    EXPECT_NE(stats.skipped_samples[0].error.find(bad.name), std::string::npos);
  }
}

TEST(ImageListTest, AListOfImagesDecodesAndAMissingFileIsItsSamplesError) {
  TempDir dir;
  Write(dir, "img/a.jpg", Jpeg(50, 40, 11));
  Write(dir, "img/b.jpg", Jpeg(40, 50, 12));
  testing::WriteFile(
      dir.Join("list.txt"),
      {'i', 'm', 'g', '/', 'a', '.',  'j', 'p', 'g', ' ', '3', '\n', 'i', 'm', 'g', '/', 'b', '.',
       'j', 'p', 'g', ' ', '5', '\n', 'g', 'o', 'n', 'e', '.', 'j',  'p', 'g', ' ', '1', '\n'});
  auto d = OpenImageList({.list_path = dir.Join("list.txt"),
                          .image = {.height = 8, .width = 8, .order = PixelOrder::kChw}});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->spec().shape, (std::vector<int64_t>{3, 8, 8}));
  auto loader = Loader::Open(*d, {.batch_size = 2});
  ASSERT_TRUE(loader.ok());
  auto first = (*loader)->Next();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->labels()[0], 3);
  EXPECT_EQ(first->labels()[1], 5);
  auto second = (*loader)->Next();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kNotFound) << second.status();
  EXPECT_NE(second.status().message().find("gone.jpg"), std::string::npos) << second.status();
}

}  // namespace
}  // namespace stoke

namespace stoke {
namespace {

TEST(ImageFolderTest, OneHugeFileNeitherSizesEveryBufferNorCutsTheReadsInFlight) {
  // 40 JPEGs of a few KB and one of 100 MB (a JPEG with 100 MB after its end
  // marker). Every read buffer was sized by the outlier, so the automatic
  // arena held 2 of them: 2 samples in flight. Now the buffers hold the rest,
  // and the outlier is read through one buffer of its own.
  TempDir dir, plain;
  for (int i = 0; i < 40; ++i) {
    const std::vector<uint8_t> jpeg = Jpeg(64 + i, 48, static_cast<uint64_t>(i));
    Write(dir, "c/" + std::to_string(100 + i) + ".jpg", jpeg);
    Write(plain, "c/" + std::to_string(100 + i) + ".jpg", jpeg);
  }
  std::vector<uint8_t> huge = Jpeg(80, 60, 99);
  Write(plain, "c/999.jpg", huge);
  huge.resize(huge.size() + (size_t{100} << 20), 0);
  Write(dir, "c/999.jpg", huge);
  ImageFolderOptions o;
  o.image.height = o.image.width = 32;
  o.root = dir.path();
  auto d = OpenImageFolder(o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->max_stored_bytes(), huge.size());
  EXPECT_GT((*d)->typical_stored_bytes(), 0u);
  EXPECT_LT((*d)->typical_stored_bytes(), uint64_t{1} << 20);
  o.root = plain.path();
  auto p = OpenImageFolder(o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->typical_stored_bytes(), 0u) << "no outliers";

  const LoaderOptions options{.batch_size = 41, .read_threads = 4, .decode_threads = 2};
  auto loader = Loader::Open(*d, options);
  ASSERT_TRUE(loader.ok()) << loader.status();
  std::printf("one 100 MB outlier among 40 small JPEGs: %d reads in flight, arena %llu bytes\n",
              (*loader)->options().reads_in_flight,
              static_cast<unsigned long long>((*loader)->stats().arena_bytes));
  EXPECT_GE((*loader)->options().reads_in_flight, 8) << "reads in flight";
  // One buffer for the outlier, the rest sized by the others (it was 2 x 100 MB).
  EXPECT_LT((*loader)->stats().arena_bytes, huge.size() + (uint64_t{40} << 20));
  auto reference = Loader::Open(*p, options);
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (int epoch = 0; epoch < 2; ++epoch) {
    auto got = (*loader)->Next();
    auto want = (*reference)->Next();
    ASSERT_TRUE(got.ok() && want.ok()) << got.status() << want.status();
    ASSERT_EQ(got->bytes(), want->bytes());
    EXPECT_EQ(std::memcmp(got->data(), want->data(), got->bytes()), 0)
        << "the outlier decodes as the same JPEG without its padding";
    ASSERT_TRUE((*loader)->Next().ok() && (*reference)->Next().ok());  // the epoch's end
  }
}

}  // namespace
}  // namespace stoke

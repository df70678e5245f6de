// Writes seed corpora for the parser fuzz targets with the project's own
// writers (tools/fuzz.sh runs it): valid IDX (raw and gzipped), CIFAR, list +
// .npy, stoke shards of raw samples and of JPEGs with restart markers, JPEGs
// for the restart-layout parser, and ceilings-cache lines. Each input has the
// shape its target reads (a two-byte cut for the two-file targets).
//
// usage: stoke_fuzz_seeds OUT_DIR
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "decode/jpeg_restart.h"
#include "decode/synth_image.h"
#include "stoke/shards.h"
#include "stoke/stoke.h"
#include "testing/test_data.h"

namespace {

using stoke::testing::ReadFileBytes;
using stoke::testing::WriteFile;

// Two files as one input: a big-endian length of the first, then both.
std::vector<uint8_t> Joined(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  std::vector<uint8_t> out = {static_cast<uint8_t>(a.size() >> 8),
                              static_cast<uint8_t>(a.size() & 0xff)};
  out.insert(out.end(), a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

void Seed(const std::string& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/" + name, bytes);
}

void ShardSeeds(const std::string& out, const std::string& work, std::shared_ptr<stoke::Dataset> d,
                const std::string& name) {
  const std::string dst = work + "/" + name;
  std::filesystem::remove_all(dst);
  auto packed = stoke::Pack(*d, dst, {.shard_bytes = 4096});
  if (!packed.ok()) {
    std::fprintf(stderr, "stoke_fuzz_seeds: %s\n", packed.status().ToString().c_str());
    std::exit(1);
  }
  int i = 0;
  for (const auto& e : std::filesystem::directory_iterator(dst)) {
    Seed(out + "/shards", name + std::to_string(i++), ReadFileBytes(e.path().string()));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: stoke_fuzz_seeds OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  const std::string work = out + "/.work";
  std::filesystem::create_directories(work);
  // IDX, raw and gzipped.
  for (bool gz : {false, true}) {
    const std::string images = work + "/images", labels = work + "/labels";
    stoke::testing::WriteIdx(images, labels, 5, 4, 3, gz);
    Seed(out + "/idx", gz ? "gzip" : "raw", Joined(ReadFileBytes(images), ReadFileBytes(labels)));
  }
  // CIFAR-10 and CIFAR-100 records.
  for (bool c100 : {false, true}) {
    stoke::testing::WriteCifar(work + "/cifar.bin", 3, c100);
    Seed(out + "/cifar", c100 ? "cifar100" : "cifar10", ReadFileBytes(work + "/cifar.bin"));
  }
  // A list naming a.npy, and the .npy.
  const std::string list = "# samples\na.npy 3\n\na.npy 7\n";
  const std::vector<uint8_t> npy = stoke::testing::NpyBytes({4, 3}, std::vector<uint8_t>(12, 5));
  Seed(out + "/npy_list", "list", Joined(std::vector<uint8_t>(list.begin(), list.end()), npy));
  // Shards of raw samples, and of JPEGs with restart markers.
  stoke::testing::WriteIdx(work + "/i", work + "/l", 6, 4, 3);
  auto idx = stoke::OpenIdx({.images_path = work + "/i", .labels_path = work + "/l"});
  if (!idx.ok()) return 1;
  ShardSeeds(out, work, *idx, "raw");
  // JPEGs: the restart-layout corpus (4 bytes of rectangle first), and shards.
  const std::string images = work + "/jpegs";
  for (int i = 0; i < 4; ++i) {
    const int w = 16 + 8 * i, h = 24 + 4 * i;
    auto jpeg = stoke::internal::EncodeJpeg(stoke::internal::SynthPixels(w, h, i, i % 2, 2), w, h,
                                            {.quality = 75, .restart_mcus = i % 2 ? 1 : 2});
    if (!jpeg.ok()) return 1;
    std::vector<uint8_t> seed = {3, 5, 9, 7};
    for (std::byte b : *jpeg) seed.push_back(static_cast<uint8_t>(b));
    Seed(out + "/restart_layout", "jpeg" + std::to_string(i), seed);
    std::filesystem::create_directories(images + "/class_" + std::to_string(i % 2));
    WriteFile(images + "/class_" + std::to_string(i % 2) + "/" + std::to_string(i) + ".jpg",
              std::vector<uint8_t>(seed.begin() + 4, seed.end()));
  }
  auto folder = stoke::OpenImageFolder({.root = images, .image = {.height = 16, .width = 16}});
  if (!folder.ok()) return 1;
  ShardSeeds(out, work, *folder, "jpeg");
  // Ceilings-cache lines: the key the target reads with, then figures.
  const std::string line = "v2|host|dataset|model\t160e6 120 400 350 9e9 0 420";
  Seed(out + "/ceilings_cache", "line", std::vector<uint8_t>(line.begin(), line.end()));
  std::filesystem::remove_all(work);
  return 0;
}

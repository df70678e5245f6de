// Data on a slow disk: pack a folder of JPEGs into shards once (records in a
// seeded random order), then read the shards in quasi-random order: windows of
// 8 MiB of consecutive records, each read with one request, several windows'
// samples shuffled together, so an HDD streams while batches stay mixed.
// Usage: slow_storage IMAGE_FOLDER SHARDS_DIR   (SHARDS_DIR is written if absent)
#include <cstdio>
#include <filesystem>

#include "stoke/stoke.h"

int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: slow_storage IMAGE_FOLDER SHARDS_DIR\n"), 2;
  stoke::ImageOptions image;
  image.crop = stoke::CropMode::kRandomResized;
  image.flip = true;
  if (!std::filesystem::exists(argv[2])) {
    stoke::ImageFolderOptions folder;
    folder.root = argv[1];
    folder.image = image;
    auto files = stoke::OpenImageFolder(folder);
    if (!files.ok()) return std::fprintf(stderr, "%s\n", files.status().ToString().c_str()), 1;
    auto packed = stoke::Pack(**files, argv[2], {});  // restart markers, shuffled records
    if (!packed.ok()) return std::fprintf(stderr, "%s\n", packed.status().ToString().c_str()), 1;
  }
  stoke::ShardsOptions shards;
  shards.path = argv[2];
  shards.image = image;
  auto dataset = stoke::OpenShards(shards);
  if (!dataset.ok()) return std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str()), 1;
  stoke::LoaderOptions options;
  options.batch_size = 64;
  options.order = stoke::Order::kQuasiRandom;  // window_bytes 8 MiB, group_windows 8
  auto loader = stoke::Loader::Open(*dataset, options);
  if (!loader.ok()) return std::fprintf(stderr, "%s\n", loader.status().ToString().c_str()), 1;
  long images = 0;
  for (stoke::Batch& batch : (*loader)->Epoch(0)) images += batch.size();  // your step here
  const stoke::LoaderStats stats = (*loader)->stats();
  std::printf("%s\n%ld images, read as %s\n", (*dataset)->Describe().c_str(), images,
              stats.io_backend.c_str());
  return 0;
}

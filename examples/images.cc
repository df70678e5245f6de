// An ImageFolder of JPEGs into 224x224 training batches, with random-resized
// crops and flips, reproducible from the seed.
// Usage: images IMAGE_FOLDER   (e.g. one written by `stoke synth /tmp/synth`)
#include <cstdio>

#include "stoke/stoke.h"

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: images IMAGE_FOLDER\n"), 2;
  stoke::ImageFolderOptions folder;
  folder.root = argv[1];
  folder.image.crop = stoke::CropMode::kRandomResized;  // torchvision's parameters
  folder.image.flip = true;
  folder.image.order = stoke::PixelOrder::kChw;  // 3x224x224 per sample
  auto dataset = stoke::OpenImageFolder(folder);
  if (!dataset.ok()) return std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str()), 1;
  stoke::LoaderOptions options;
  options.batch_size = 64;
  options.order = stoke::Order::kFullShuffle;
  options.on_error = stoke::ErrorPolicy::kSkip;  // a corrupt JPEG is replaced, and listed
  auto loader = stoke::Loader::Open(*dataset, options);
  if (!loader.ok()) return std::fprintf(stderr, "%s\n", loader.status().ToString().c_str()), 1;
  long images = 0;
  for (stoke::Batch& batch : (*loader)->Epoch(0)) images += batch.size();  // your step here
  const stoke::LoaderStats stats = (*loader)->stats();
  std::printf("%s\n%ld images, %llu skipped\n", (*dataset)->Describe().c_str(), images,
              static_cast<unsigned long long>(stats.skipped));
  return 0;
}

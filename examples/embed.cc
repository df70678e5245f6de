// The README's embedding example: a trainer's data loop over Fashion-MNIST.
// Usage: embed [IDX_DIR]   (default /usr/share/datasets/fashion-mnist)
#include <cstdio>

#include "stoke/stoke.h"

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  auto dataset = stoke::OpenIdxSplit(dir, "train");
  if (!dataset.ok()) return std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str()), 1;
  stoke::LoaderOptions options;
  options.batch_size = 256;
  options.order = stoke::Order::kFullShuffle;
  auto loader = stoke::Loader::Open(*dataset, options);
  if (!loader.ok()) return std::fprintf(stderr, "%s\n", loader.status().ToString().c_str()), 1;
  for (int epoch = 0; epoch < 2; ++epoch) {
    long pixels = 0;
    for (stoke::Batch& batch : (*loader)->Epoch(epoch)) {  // throws stoke::Error on bad data
      const uint8_t* images = batch.data<uint8_t>();       // batch.shape(): {256, 28, 28}
      for (int64_t label : batch.labels()) pixels += images[label];  // your step here
    }
    std::printf("epoch %d: %lld batches, checksum %ld\n", epoch,
                static_cast<long long>((*loader)->batches_per_epoch()), pixels);
  }
  return 0;
}

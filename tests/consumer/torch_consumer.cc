// A libtorch project (C++17, as libtorch's are) that takes stoke's batches as
// tensors: reads an IDX folder given on the command line through
// stoke::torch::ToTensors and checks that the tensors alias the batches.
#include <cstdio>

#include "stoke/stoke.h"
#include "stoke/torch.h"

static_assert(__cplusplus == 201703L, "the consumer is to be compiled as C++17");

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto dataset = stoke::OpenIdxSplit(argv[1], "train");
  if (!dataset.ok()) return std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str()), 1;
  stoke::LoaderOptions options;
  options.batch_size = 100;
  auto loader = stoke::Loader::Open(*dataset, options);
  if (!loader.ok()) return std::fprintf(stderr, "%s\n", loader.status().ToString().c_str()), 1;
  double mean = 0;
  int batches = 0;
  for (int i = 0; i < 10; ++i) {
    auto batch = (*loader)->Next();
    if (!batch.ok() || !*batch) return 1;
    const void* data = batch->data();
    stoke::torch::Tensors t = stoke::torch::ToTensors(std::move(*batch));
    if (t.images.data_ptr() != data || t.images.size(0) != 100 || t.labels.size(0) != 100) return 1;
    mean += t.images.to(at::kFloat).mean().item<double>();
    ++batches;
  }
  std::printf("%d batches as tensors, mean pixel %.1f\n", batches, mean / batches);
  return mean > 0 ? 0 : 1;
}

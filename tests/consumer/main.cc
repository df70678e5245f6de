// Opens a loader over an IDX folder given on the command line and counts samples.
#include <cstdio>

#include "stoke/stoke.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto dataset = stoke::OpenIdxSplit(argv[1], "train");
  if (!dataset.ok()) return std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str()), 1;
  auto loader = stoke::Loader::Open(*dataset, {.batch_size = 10});
  if (!loader.ok()) return std::fprintf(stderr, "%s\n", loader.status().ToString().c_str()), 1;
  long samples = 0;
  for (stoke::Batch& batch : (*loader)->Epoch(0)) samples += batch.size();
  std::printf("%ld\n", samples);
  return samples > 0 ? 0 : 1;
}

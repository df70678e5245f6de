// Opens a loader over an IDX folder given on the command line, counts samples,
// and trains a small MLP for one epoch through the trainer component.
#include <cstdio>

#include "stoke/stoke.h"
#include "stoke/train.h"

// Built as C++17 (CMakeLists.txt), as a project that links stoke may be: stoke's
// targets must not raise it.
static_assert(__cplusplus == 201703L, "the consumer is to be compiled as C++17");

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto dataset = stoke::OpenIdxSplit(argv[1], "train");
  if (!dataset.ok()) return std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str()), 1;
  stoke::LoaderOptions options;
  options.batch_size = 10;
  auto loader = stoke::Loader::Open(*dataset, options);
  if (!loader.ok()) return std::fprintf(stderr, "%s\n", loader.status().ToString().c_str()), 1;
  stoke::train::TrainOptions train;
  train.model = "mlp:784-32-10";
  auto trainer = stoke::train::Trainer::Open(train, (*loader)->sample_spec());
  if (!trainer.ok()) return std::fprintf(stderr, "%s\n", trainer.status().ToString().c_str()), 1;
  long samples = 0;
  stoke::train::StepResult result;
  for (stoke::Batch& batch : (*loader)->Epoch(0)) {
    samples += batch.size();
    if (!(*trainer)->Step(batch, &result).ok()) return 1;
  }
  std::printf("%ld samples, accuracy %.3f\n", samples, result.accuracy());
  return samples > 0 && result.accuracy() > 0.5 ? 0 : 1;
}

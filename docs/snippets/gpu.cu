// The harness that compiles the docs' GPU batch snippet with nvcc
// (tools/check_docs.py puts it in place of the SNIPPET line): an opened
// dataset, the options, an epoch, the trainer's stream and a step kernel.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "stoke/stoke.h"

namespace {

int Fail(const stoke::Status& status) {
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  return 1;
}

__global__ void Step(const __half* images, const int64_t* labels) {
  if (images == nullptr || labels == nullptr) return;
}

}  // namespace

int Snippet(cudaStream_t stream) {
  auto dataset = stoke::OpenIdxSplit("/usr/share/datasets/fashion-mnist", "train");
  if (!dataset.ok()) return Fail(dataset.status());
  stoke::LoaderOptions options;
  const int epoch = 0;
  const dim3 grid(1), block(32);
  // SNIPPET
  return 0;
}

int main() { return Snippet(nullptr); }

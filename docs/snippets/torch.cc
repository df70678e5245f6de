// The harness that compiles the docs' libtorch snippet (tools/check_docs.py
// puts it in place of the SNIPPET line): a loader, a model and an epoch.
#include <torch/torch.h>

#include <memory>

#include "stoke/stoke.h"

int Snippet(std::shared_ptr<stoke::Loader> loader, torch::nn::Linear model, int epoch) {
  // SNIPPET
  return 0;
}

int main() { return 0; }

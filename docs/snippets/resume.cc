// The harness that compiles the docs' resume snippet (tools/check_docs.py puts
// it in place of the SNIPPET line): a dataset, options and a loader on it.
#include <cstdio>
#include <string>

#include "stoke/stoke.h"

namespace {

int Fail(const stoke::Status& status) {
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int Snippet() {
  auto dataset = stoke::OpenIdxSplit("/usr/share/datasets/fashion-mnist", "train");
  if (!dataset.ok()) return Fail(dataset.status());
  stoke::LoaderOptions options;
  options.order = stoke::Order::kFullShuffle;
  auto loader = stoke::Loader::Open(*dataset, options);
  if (!loader.ok()) return Fail(loader.status());
  // SNIPPET
  return 0;
}

int main() { return Snippet(); }

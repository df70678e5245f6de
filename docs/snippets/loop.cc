// The harness that compiles the docs' C++ loader snippets (tools/check_docs.py
// puts each in place of the SNIPPET line): what they leave to the reader, a
// Fail that reports a Status and a Step that takes a batch.
#include <cstdint>
#include <cstdio>

#include "stoke/stoke.h"

namespace {

int Fail(const stoke::Status& status) {
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  return 1;
}

void Step(const uint8_t* images, stoke::Span<const int64_t> labels) {
  std::printf("%p %zu\n", static_cast<const void*>(images), labels.size());
}

}  // namespace

int Snippet() {
  // SNIPPET
  return 0;
}

int main() { return Snippet(); }

#include "testing/epoch_dump.h"

#include <gtest/gtest.h>

#include "stoke/loader.h"

namespace stoke::testing {

EpochDump DumpEpochs(std::shared_ptr<const Dataset> dataset, const LoaderOptions& options,
                     int64_t first, int64_t count) {
  auto loader = Loader::Open(std::move(dataset), options);
  EXPECT_TRUE(loader.ok()) << loader.status();
  EpochDump out;
  if (!loader.ok()) return out;
  for (int64_t e = first; e < first + count; ++e) {
    for (Batch& b : (*loader)->Epoch(e)) {
      out.indices.insert(out.indices.end(), b.indices().begin(), b.indices().end());
      out.labels.insert(out.labels.end(), b.labels().begin(), b.labels().end());
      const auto* p = b.data<uint8_t>();
      out.bytes.insert(out.bytes.end(), p, p + b.bytes());
    }
  }
  out.stats = (*loader)->stats();
  return out;
}

}  // namespace stoke::testing

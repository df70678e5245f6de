// What a loader delivers over some epochs, gathered for comparison: every
// batch's indices, labels and bytes, in order, and the loader's stats after.
#ifndef STOKE_TESTS_TESTING_EPOCH_DUMP_H_
#define STOKE_TESTS_TESTING_EPOCH_DUMP_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "stoke/dataset.h"
#include "stoke/options.h"
#include "stoke/stats.h"

namespace stoke::testing {

struct EpochDump {
  std::vector<uint64_t> indices;
  std::vector<int64_t> labels;
  std::vector<uint8_t> bytes;
  LoaderStats stats;  // not compared
  bool operator==(const EpochDump& o) const {
    return indices == o.indices && labels == o.labels && bytes == o.bytes;
  }
};

// Opens a loader over `dataset` and reads epochs [first, first + count).
// A loader that does not open is a test failure, and an empty dump.
EpochDump DumpEpochs(std::shared_ptr<const Dataset> dataset, const LoaderOptions& options,
                     int64_t first, int64_t count = 1);

}  // namespace stoke::testing

#endif  // STOKE_TESTS_TESTING_EPOCH_DUMP_H_

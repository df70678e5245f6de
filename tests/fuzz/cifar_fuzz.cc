// libFuzzer target: a CIFAR binary batch file (test_batch.bin), opened and a few
// records decoded.
#include "fuzz_input.h"
#include "testing/fake_file_systems.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stoke::testing::MemoryFileSystem fs;
  fs.Write("/c/test_batch.bin", stoke::fuzz::Bytes(data, size));
  auto d = stoke::OpenCifar("/c", "test", &fs);
  if (d.ok()) stoke::fuzz::DecodeSome(**d);
  return 0;
}

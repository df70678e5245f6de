// libFuzzer target: IDX images and labels files, raw or gzipped (the input is
// both files, cut where its first two bytes say). Open validates the headers
// against each other; then a few samples are read and decoded.
#include "fuzz_input.h"
#include "testing/fake_file_systems.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::byte> images, labels;
  stoke::fuzz::Split(data, size, &images, &labels);
  stoke::testing::MemoryFileSystem fs;
  fs.Write("/images", std::move(images));
  fs.Write("/labels", std::move(labels));
  stoke::IdxOptions o;
  o.images_path = "/images";
  o.labels_path = "/labels";
  o.file_system = &fs;
  o.max_decompressed_bytes = uint64_t{4} << 20;  // a bigger declared size is refused early
  auto d = stoke::OpenIdx(o);
  if (d.ok()) stoke::fuzz::DecodeSome(**d);
  return 0;
}

// libFuzzer target: a list file of "path label" lines and the .npy file it may
// name (the input cut in two): the list's parser, the .npy header's parser, and
// the samples read through both.
#include "dataset/npy.h"
#include "fuzz_input.h"
#include "testing/fake_file_systems.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::byte> list, npy;
  stoke::fuzz::Split(data, size, &list, &npy);
  stoke::internal::ParseNpyHeader(npy, "a.npy").status().IgnoreError();
  stoke::testing::MemoryFileSystem fs;
  fs.Write("/d/list.txt", std::move(list));
  fs.Write("/d/a.npy", std::move(npy));
  stoke::ListOptions o;
  o.list_path = "/d/list.txt";
  o.file_system = &fs;
  auto d = stoke::OpenList(o);
  if (d.ok()) stoke::fuzz::DecodeSome(**d);
  return 0;
}

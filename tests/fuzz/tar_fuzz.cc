// libFuzzer target: a WebDataset tar (ustar headers, checksums, GNU long names,
// pax records): indexed at open, then a few samples read and decoded small.
#include "fuzz_input.h"
#include "stoke/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stoke::TarOptions o;
  o.path = stoke::fuzz::WriteScratch("f.tar", stoke::fuzz::Bytes(data, size));
  o.image.height = o.image.width = 16;
  auto d = stoke::OpenTar(o);
  if (d.ok()) stoke::fuzz::DecodeSome(**d);
  return 0;
}

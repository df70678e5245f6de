// libFuzzer target: a line of the ceilings cache (the key, a tab, seven
// figures), as `stoke profile` reads it back.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ceilings_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  stoke::cli::ParseCeilingsLine(line, "v2|host|dataset|model").has_value();
  return 0;
}

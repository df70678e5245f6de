// Helpers for the parser fuzz targets: the input cut into parts, samples read
// and decoded through the dataset as the loader would, and files on a real
// file system for the parsers that list paths (tars, shards).
#ifndef STOKE_TESTS_FUZZ_FUZZ_INPUT_H_
#define STOKE_TESTS_FUZZ_FUZZ_INPUT_H_

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "dataset/stored.h"
#include "stoke/dataset.h"

namespace stoke::fuzz {

inline std::vector<std::byte> Bytes(const uint8_t* data, size_t size) {
  const auto* p = reinterpret_cast<const std::byte*>(data);
  return std::vector<std::byte>(p, p + size);
}

// The input cut in two at a point its first two bytes choose.
inline void Split(const uint8_t* data, size_t size, std::vector<std::byte>* a,
                  std::vector<std::byte>* b) {
  if (size < 2) {
    *a = Bytes(data, size);
    b->clear();
    return;
  }
  const size_t at = std::min<size_t>(size - 2, (size_t{data[0]} << 8 | data[1]));
  *a = Bytes(data + 2, at);
  *b = Bytes(data + 2 + at, size - 2 - at);
}

// Reads and decodes the first few samples (and the last), as the loader would:
// every error is fine, a crash or an out-of-bounds access is not.
inline void DecodeSome(const Dataset& d) {
  std::vector<std::byte> stored, out(std::min<size_t>(d.spec().bytes(), size_t{1} << 24));
  if (out.size() != d.spec().bytes()) return;  // a sample too large for a fuzz run
  const uint64_t n = d.size();
  for (uint64_t i : {uint64_t{0}, uint64_t{1}, uint64_t{2}, n - 1}) {
    if (i >= n) continue;
    if (!internal::ReadStoredSample(d, i, &stored).ok()) continue;
    int64_t label = 0;
    d.DecodeSample({i, 1, 7}, stored, out, &label).IgnoreError();
  }
}

// A scratch folder on the real file system, one per process.
inline std::string ScratchDir() {
  static const std::string dir = [] {
    std::string d = "/tmp/stoke-fuzz-" + std::to_string(::getpid());
    ::mkdir(d.c_str(), 0700);
    return d;
  }();
  return dir;
}

inline std::string WriteScratch(const std::string& name, std::span<const std::byte> bytes) {
  const std::string path = ScratchDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace stoke::fuzz

#endif  // STOKE_TESTS_FUZZ_FUZZ_INPUT_H_

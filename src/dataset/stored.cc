#include "dataset/stored.h"

#include <algorithm>
#include <string>

namespace stoke::internal {

Status ReadStoredSample(const Dataset& d, uint64_t index, std::vector<std::byte>* out) {
  out->clear();
  const SampleLocation loc = d.Locate(index);
  if (loc.memory) {
    out->assign(loc.memory, loc.memory + loc.length);
    return Status::Ok();
  }
  const std::string& path = d.file_path(loc.file);
  STOKE_ASSIGN_OR_RETURN(auto file, d.file_system()->Open(path, {}));
  constexpr size_t kChunk = 1 << 20;
  uint64_t offset = loc.offset;
  while (true) {
    const uint64_t left = loc.length - out->size();
    if (left == 0 && !loc.whole_file) break;
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(left, 1), kChunk));
    const size_t at = out->size();
    out->resize(at + want);
    STOKE_ASSIGN_OR_RETURN(size_t n, file->ReadAt(offset, {out->data() + at, want}));
    out->resize(at + n);
    if (n == 0) break;
    offset += n;
    if (loc.whole_file && out->size() > loc.length) {
      return DataLossError(path + ": larger than the " + std::to_string(loc.length) +
                           " bytes a sample may hold");
    }
  }
  if (!loc.whole_file && out->size() < loc.length) {
    return DataLossError(path + ": truncated: " + std::to_string(out->size()) + " of " +
                         std::to_string(loc.length) + " bytes at offset " +
                         std::to_string(loc.offset));
  }
  return Status::Ok();
}

Status ReadExactly(RandomAccessFile& file, uint64_t offset, std::span<std::byte> dst) {
  size_t done = 0;
  while (done < dst.size()) {
    STOKE_ASSIGN_OR_RETURN(size_t n, file.ReadAt(offset + done, dst.subspan(done)));
    if (n == 0) {
      return DataLossError(file.name() + ": truncated at offset " + std::to_string(offset + done));
    }
    done += n;
  }
  return Status::Ok();
}

StoredSizes SizesOf(std::vector<uint64_t> sizes) {
  if (sizes.empty()) return {};
  StoredSizes s;
  s.largest = *std::max_element(sizes.begin(), sizes.end());
  const auto at = sizes.begin() + static_cast<std::ptrdiff_t>((sizes.size() - 1) * 99 / 100);
  std::nth_element(sizes.begin(), at, sizes.end());
  const uint64_t typical = std::max<uint64_t>(*at + *at / 4, uint64_t{64} << 10);
  s.typical = s.largest > 2 * typical ? typical : 0;
  return s;
}

}  // namespace stoke::internal

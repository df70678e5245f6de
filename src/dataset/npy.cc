#include "dataset/npy.h"
#include "util/checked.h"

#include <cstring>
#include <string_view>

namespace stoke::internal {
namespace {

// The value that follows 'key': in the header dict, or empty.
std::string_view ValueOf(std::string_view dict, std::string_view key) {
  size_t k = dict.find(key);
  if (k == std::string_view::npos) return {};
  size_t colon = dict.find(':', k + key.size());
  if (colon == std::string_view::npos) return {};
  std::string_view rest = dict.substr(colon + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest;
}

bool ParseDescr(std::string_view descr, DType* dtype) {
  if (descr.size() < 3) return false;
  const char order = descr[0];
  const std::string_view kind = descr.substr(1);
  const bool little = order == '<' || order == '|' || order == '=';
  const bool single = kind == "u1" || kind == "i1" || kind == "b1";
  if (!little && !(order == '>' && single)) return false;
  if (kind == "u1" || kind == "b1")
    *dtype = DType::kUint8;
  else if (kind == "i1")
    *dtype = DType::kInt8;
  else if (kind == "i2")
    *dtype = DType::kInt16;
  else if (kind == "i4")
    *dtype = DType::kInt32;
  else if (kind == "i8")
    *dtype = DType::kInt64;
  else if (kind == "f2")
    *dtype = DType::kFloat16;
  else if (kind == "f4")
    *dtype = DType::kFloat32;
  else if (kind == "f8")
    *dtype = DType::kFloat64;
  else
    return false;
  return true;
}

}  // namespace

bool NpyHeader::Matches(const SampleSpec& spec) const {
  if (spec.dtype != dtype || static_cast<int>(spec.shape.size()) != rank) return false;
  for (int i = 0; i < rank; ++i) {
    if (spec.shape[i] != shape[i]) return false;
  }
  return true;
}

SampleSpec NpyHeader::ToSpec() const {
  SampleSpec spec;
  spec.dtype = dtype;
  spec.shape.assign(shape.begin(), shape.begin() + rank);
  return spec;
}

StatusOr<NpyHeader> ParseNpyHeader(std::span<const std::byte> file, const std::string& name) {
  static constexpr char kMagic[] = "\x93NUMPY";
  if (file.size() < 10 || std::memcmp(file.data(), kMagic, 6) != 0) {
    return DataLossError(name + ": not a .npy file (no \\x93NUMPY magic)");
  }
  const auto* b = reinterpret_cast<const uint8_t*>(file.data());
  const int major = b[6];
  uint64_t header_len;
  uint64_t prefix;
  if (major == 1) {
    header_len = b[8] | (uint64_t{b[9]} << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (file.size() < 12) return DataLossError(name + ": truncated .npy header");
    header_len = b[8] | (uint64_t{b[9]} << 8) | (uint64_t{b[10]} << 16) | (uint64_t{b[11]} << 24);
    prefix = 12;
  } else {
    return DataLossError(name + ": unsupported .npy format version " + std::to_string(major));
  }
  if (prefix + header_len > file.size()) {
    return DataLossError(name + ": truncated .npy header: declares " + std::to_string(header_len) +
                         " header bytes, file has " + std::to_string(file.size()));
  }
  std::string_view dict(reinterpret_cast<const char*>(b + prefix), header_len);
  NpyHeader h;
  h.data_offset = prefix + header_len;

  std::string_view descr = ValueOf(dict, "'descr'");
  if (descr.size() < 2 || descr[0] != '\'') {
    return DataLossError(name + ": .npy header has no 'descr'");
  }
  descr = descr.substr(1, descr.find('\'', 1) - 1);
  if (!ParseDescr(descr, &h.dtype)) {
    return DataLossError(name + ": .npy dtype '" + std::string(descr) +
                         "' is not supported (little-endian bool, int, uint8 and float only)");
  }
  std::string_view fortran = ValueOf(dict, "'fortran_order'");
  if (fortran.substr(0, 4) == "True") {
    return DataLossError(name + ": .npy array is in Fortran order; save it C-contiguous");
  }
  std::string_view shape = ValueOf(dict, "'shape'");
  if (shape.empty() || shape[0] != '(') return DataLossError(name + ": .npy header has no 'shape'");
  size_t close = shape.find(')');
  if (close == std::string_view::npos) return DataLossError(name + ": malformed .npy 'shape'");
  shape = shape.substr(1, close - 1);
  while (!shape.empty()) {
    while (!shape.empty() && (shape.front() == ' ' || shape.front() == ',')) shape.remove_prefix(1);
    if (shape.empty()) break;
    int64_t v = 0;
    size_t i = 0;
    for (; i < shape.size() && shape[i] >= '0' && shape[i] <= '9'; ++i) {
      v = v * 10 + (shape[i] - '0');
      if (v > (int64_t{1} << 40)) return DataLossError(name + ": absurd .npy dimension");
    }
    if (i == 0) return DataLossError(name + ": malformed .npy 'shape'");
    if (h.rank == NpyHeader::kMaxRank)
      return DataLossError(name + ": .npy rank above 8 is not supported");
    h.shape[h.rank++] = v;
    shape.remove_prefix(i);
  }
  const std::span<const int64_t> dims(h.shape.data(), static_cast<size_t>(h.rank));
  const std::optional<uint64_t> bytes = CheckedBytes(DTypeSize(h.dtype), dims);
  if (!bytes || *bytes > kMaxDeclaredSampleBytes) {
    return DataLossError(name + ": .npy header declares shape " + DimsText(dims) + " " +
                         std::string(DTypeName(h.dtype)) + ", more than 1 TiB");
  }
  return h;
}

}  // namespace stoke::internal

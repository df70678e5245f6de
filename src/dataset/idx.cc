// IDX files (MNIST, Fashion-MNIST): a big-endian header of magic (0, 0, type,
// rank) and `rank` uint32 dimensions, then the elements, big-endian.
#include <algorithm>
#include <cstring>
#include <string>

#include "dataset/byte_order.h"
#include "dataset/gzip.h"
#include "stoke/dataset.h"

namespace stoke {
namespace {

constexpr uint64_t kMaxLabelBytes = uint64_t{1} << 30;

struct IdxHeader {
  DType dtype;
  std::vector<int64_t> dims;
  uint64_t header_bytes;
  uint64_t data_bytes() const {
    uint64_t n = DTypeSize(dtype);
    for (int64_t d : dims) n *= static_cast<uint64_t>(d);
    return n;
  }
};

StatusOr<DType> IdxType(uint8_t code, const std::string& name) {
  switch (code) {
    case 0x08:
      return DType::kUint8;
    case 0x09:
      return DType::kInt8;
    case 0x0B:
      return DType::kInt16;
    case 0x0C:
      return DType::kInt32;
    case 0x0D:
      return DType::kFloat32;
    case 0x0E:
      return DType::kFloat64;
    default:
      return DataLossError(name + ": not an IDX file: unknown element type code 0x" +
                           internal::Hex(code) + " in the magic number");
  }
}

// Parses the header from the first bytes of the (decompressed) file, `size` bytes in all.
StatusOr<IdxHeader> ParseIdxHeader(std::span<const std::byte> head, uint64_t size,
                                   const std::string& name) {
  if (head.size() < 4) {
    return DataLossError(name + ": not an IDX file: " + std::to_string(size) +
                         " bytes is too short for the 4-byte magic number");
  }
  const auto* b = reinterpret_cast<const uint8_t*>(head.data());
  if (b[0] != 0 || b[1] != 0) {
    return DataLossError(name + ": not an IDX file: magic number starts with 0x" +
                         internal::Hex(b[0]) + internal::Hex(b[1]) + ", expected 0x0000");
  }
  IdxHeader h;
  STOKE_ASSIGN_OR_RETURN(h.dtype, IdxType(b[2], name));
  const int rank = b[3];
  if (rank < 1) return DataLossError(name + ": IDX header declares rank 0");
  h.header_bytes = 4 + 4 * static_cast<uint64_t>(rank);
  if (head.size() < h.header_bytes) {
    return DataLossError(name + ": truncated IDX header: rank " + std::to_string(rank) + " needs " +
                         std::to_string(h.header_bytes) + " bytes, file has " +
                         std::to_string(size));
  }
  for (int i = 0; i < rank; ++i) {
    h.dims.push_back(internal::LoadBigEndian32(b + 4 + 4 * i));
  }
  // Guard the product against overflow before comparing with the file size.
  long double total = DTypeSize(h.dtype);
  for (int64_t d : h.dims) total *= static_cast<long double>(d);
  if (total + h.header_bytes != static_cast<long double>(size)) {
    std::string dims;
    for (int64_t d : h.dims) dims += (dims.empty() ? "" : "x") + std::to_string(d);
    return DataLossError(
        name + ": IDX header declares " + dims + " " + std::string(DTypeName(h.dtype)) + " (" +
        std::to_string(static_cast<uint64_t>(total) + h.header_bytes) +
        " bytes with the header) but the file holds " + std::to_string(size) + " bytes");
  }
  return h;
}

class IdxDataset final : public Dataset {
 public:
  IdxDataset(FileSystem* fs, std::string images_path, IdxHeader header,
             std::vector<std::byte> memory_images, std::vector<int64_t> labels)
      : fs_(fs),
        path_(std::move(images_path)),
        header_(std::move(header)),
        memory_(std::move(memory_images)),
        labels_(std::move(labels)) {
    spec_.dtype = header_.dtype;
    spec_.shape.assign(header_.dims.begin() + 1, header_.dims.end());
    sample_bytes_ = spec_.bytes();
  }

  uint64_t size() const override { return static_cast<uint64_t>(header_.dims[0]); }
  const SampleSpec& spec() const override { return spec_; }
  uint32_t file_count() const override { return 1; }
  const std::string& file_path(uint32_t) const override { return path_; }
  FileSystem* file_system() const override { return fs_; }

  SampleLocation Locate(uint64_t index) const override {
    SampleLocation loc;
    loc.offset = header_.header_bytes + index * sample_bytes_;
    loc.length = sample_bytes_;
    if (!memory_.empty()) loc.memory = memory_.data() + loc.offset;
    return loc;
  }

  bool stored_as_output() const override { return DTypeSize(spec_.dtype) == 1; }

  Status Decode(uint64_t index, std::span<const std::byte> stored, std::span<std::byte> out,
                int64_t* label) const override {
    if (stored.data() != out.data()) {
      internal::CopyFromBigEndian(stored, out, DTypeSize(spec_.dtype));
    }
    *label = labels_[index];
    return Status::Ok();
  }
  std::optional<int64_t> StoredLabel(uint64_t index) const override { return labels_[index]; }

  std::string Describe() const override {
    return "IDX " + path_ + (memory_.empty() ? "" : " (gzip, decompressed in memory)") + ": " +
           std::to_string(size()) + " samples of " + spec_.ToString();
  }

 private:
  FileSystem* const fs_;
  const std::string path_;
  const IdxHeader header_;
  // The decompressed file, header included, when the file was gzipped; else empty.
  const std::vector<std::byte> memory_;
  const std::vector<int64_t> labels_;
  SampleSpec spec_;
  size_t sample_bytes_;
};

StatusOr<std::vector<int64_t>> ReadLabels(FileSystem* fs, const std::string& path,
                                          uint64_t max_bytes) {
  STOKE_ASSIGN_OR_RETURN(std::vector<std::byte> raw, fs->ReadAll(path, kMaxLabelBytes));
  if (internal::IsGzip(raw)) {
    STOKE_ASSIGN_OR_RETURN(raw, internal::Gunzip(raw, path, max_bytes));
  }
  STOKE_ASSIGN_OR_RETURN(IdxHeader h, ParseIdxHeader(raw, raw.size(), path));
  if (h.dims.size() != 1) {
    return DataLossError(path + ": an IDX labels file has rank 1, this one has rank " +
                         std::to_string(h.dims.size()));
  }
  std::vector<int64_t> labels(static_cast<size_t>(h.dims[0]));
  const std::byte* p = raw.data() + h.header_bytes;
  const size_t width = DTypeSize(h.dtype);
  for (size_t i = 0; i < labels.size(); ++i, p += width) {
    switch (h.dtype) {
      case DType::kUint8:
        labels[i] = static_cast<uint8_t>(*p);
        break;
      case DType::kInt8:
        labels[i] = static_cast<int8_t>(*p);
        break;
      case DType::kInt16:
        labels[i] = static_cast<int16_t>(internal::LoadBigEndian16(p));
        break;
      case DType::kInt32:
        labels[i] = static_cast<int32_t>(internal::LoadBigEndian32(p));
        break;
      default:
        return DataLossError(path + ": IDX labels must be integers, this file holds " +
                             std::string(DTypeName(h.dtype)));
    }
  }
  return labels;
}

}  // namespace

StatusOr<std::shared_ptr<Dataset>> OpenIdx(const IdxOptions& options) {
  FileSystem* fs = options.file_system ? options.file_system : DefaultFileSystem();
  const std::string& path = options.images_path;
  STOKE_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs->Open(path, FileOptions{}));
  STOKE_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  std::byte head[4 + 4 * 255];
  size_t got = 0;
  while (got < sizeof(head)) {
    STOKE_ASSIGN_OR_RETURN(size_t n, file->ReadAt(got, std::span(head).subspan(got)));
    if (n == 0) break;
    got += n;
  }
  std::vector<std::byte> memory;
  IdxHeader header;
  if (internal::IsGzip(std::span(head, got))) {
    file.reset();
    STOKE_ASSIGN_OR_RETURN(std::vector<std::byte> compressed,
                           fs->ReadAll(path, options.max_decompressed_bytes));
    STOKE_ASSIGN_OR_RETURN(memory,
                           internal::Gunzip(compressed, path, options.max_decompressed_bytes));
    STOKE_ASSIGN_OR_RETURN(header, ParseIdxHeader(memory, memory.size(), path));
  } else {
    STOKE_ASSIGN_OR_RETURN(header, ParseIdxHeader(std::span(head, got), size, path));
  }
  if (header.dims.size() < 2) {
    return DataLossError(path +
                         ": an IDX images file has rank 2 or more (count, dims...), "
                         "this one has rank " +
                         std::to_string(header.dims.size()));
  }
  if (header.dims[0] == 0) return DataLossError(path + ": IDX file holds no samples");
  STOKE_ASSIGN_OR_RETURN(std::vector<int64_t> labels,
                         ReadLabels(fs, options.labels_path, options.max_decompressed_bytes));
  if (static_cast<int64_t>(labels.size()) != header.dims[0]) {
    return DataLossError(options.labels_path + ": holds " + std::to_string(labels.size()) +
                         " labels but " + path + " holds " + std::to_string(header.dims[0]) +
                         " samples");
  }
  return std::shared_ptr<Dataset>(
      new IdxDataset(fs, path, std::move(header), std::move(memory), std::move(labels)));
}

StatusOr<std::shared_ptr<Dataset>> OpenIdxSplit(const std::string& dir, std::string_view split,
                                                FileSystem* file_system) {
  std::string prefix;
  if (split == "train") {
    prefix = "train";
  } else if (split == "test") {
    prefix = "t10k";
  } else {
    return InvalidArgumentError("split '" + std::string(split) +
                                "' is not one of train, test (IDX)");
  }
  FileSystem* fs = file_system ? file_system : DefaultFileSystem();
  auto pick = [&](const std::string& stem) -> std::string {
    // Prefer the uncompressed file when both exist.
    std::string plain = dir + "/" + stem;
    if (fs->Open(plain, FileOptions{}).ok()) return plain;
    return plain + ".gz";
  };
  IdxOptions options;
  options.images_path = pick(prefix + "-images-idx3-ubyte");
  options.labels_path = pick(prefix + "-labels-idx1-ubyte");
  options.file_system = fs;
  return OpenIdx(options);
}

}  // namespace stoke

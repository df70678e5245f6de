// IDX files (MNIST, Fashion-MNIST): a big-endian header of magic (0, 0, type,
// rank) and `rank` uint32 dimensions, then the elements, big-endian.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "dataset/byte_order.h"
#include "dataset/gzip.h"
#include "dataset/stored.h"
#include "stoke/dataset.h"
#include "util/checked.h"

namespace stoke {
namespace {

constexpr uint64_t kMaxLabelBytes = uint64_t{1} << 30;

struct IdxHeader {
  DType dtype;
  std::vector<int64_t> dims;
  uint64_t header_bytes;
  uint64_t data_bytes;  // checked: element size x dims fits in 64 bits
  uint64_t file_bytes() const { return header_bytes + data_bytes; }
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

// The header's size from its first 4 bytes (the magic number).
StatusOr<uint64_t> IdxHeaderBytes(std::span<const std::byte> head, uint64_t size,
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
  STOKE_RETURN_IF_ERROR(IdxType(b[2], name).status());
  if (b[3] < 1) return DataLossError(name + ": IDX header declares rank 0");
  return 4 + 4 * uint64_t{b[3]};
}

// Parses the header from the file's first bytes; `size`: the file's bytes, for
// messages. The declared data size is checked to fit in 64 bits.
StatusOr<IdxHeader> ParseIdxHeader(std::span<const std::byte> head, uint64_t size,
                                   const std::string& name) {
  IdxHeader h;
  STOKE_ASSIGN_OR_RETURN(h.header_bytes, IdxHeaderBytes(head, size, name));
  const auto* b = reinterpret_cast<const uint8_t*>(head.data());
  STOKE_ASSIGN_OR_RETURN(h.dtype, IdxType(b[2], name));
  if (head.size() < h.header_bytes) {
    return DataLossError(name + ": truncated IDX header: rank " + std::to_string(b[3]) + " needs " +
                         std::to_string(h.header_bytes) + " bytes, file has " +
                         std::to_string(size));
  }
  for (int i = 0; i < b[3]; ++i) h.dims.push_back(internal::LoadBigEndian32(b + 4 + 4 * i));
  const std::optional<uint64_t> data = internal::CheckedBytes(DTypeSize(h.dtype), h.dims);
  const std::optional<uint64_t> total =
      data ? internal::CheckedAdd(*data, h.header_bytes) : std::nullopt;
  if (!total) {
    return DataLossError(name + ": IDX header declares " + internal::DimsText(h.dims) + " " +
                         std::string(DTypeName(h.dtype)) +
                         ", more bytes than 64 bits can count; the file holds " +
                         std::to_string(size));
  }
  h.data_bytes = *data;
  return h;
}

// A file's size against what its header declares.
Status CheckIdxSize(const IdxHeader& h, uint64_t size, const std::string& name) {
  if (h.file_bytes() == size) return Status::Ok();
  return DataLossError(name + ": IDX header declares " + internal::DimsText(h.dims) + " " +
                       std::string(DTypeName(h.dtype)) + " (" + std::to_string(h.file_bytes()) +
                       " bytes with the header) but the file holds " + std::to_string(size) +
                       " bytes");
}

// An IDX file's header and, when `load` or when it is gzipped, its whole
// decompressed contents. A gzipped file is inflated header first, then exactly
// the bytes the header declares, within `max_bytes`: a longer stream is an
// error before any more of it is inflated.
struct IdxFile {
  IdxHeader header;
  std::vector<std::byte> memory;  // the file, header included; empty unless loaded
  bool gzipped = false;
};

StatusOr<IdxFile> ReadGzippedIdx(std::span<const std::byte> compressed, const std::string& name,
                                 uint64_t max_bytes) {
  internal::GzipReader z(compressed, name);
  std::byte head[4 + 4 * 255];
  STOKE_RETURN_IF_ERROR(z.Read(std::span(head, 4)));
  STOKE_ASSIGN_OR_RETURN(const uint64_t header_bytes, IdxHeaderBytes(std::span(head, 4), 4, name));
  STOKE_RETURN_IF_ERROR(z.Read(std::span(head + 4, header_bytes - 4)));
  IdxFile f;
  f.gzipped = true;
  STOKE_ASSIGN_OR_RETURN(f.header,
                         ParseIdxHeader(std::span(head, header_bytes), header_bytes, name));
  const IdxHeader& h = f.header;
  if (h.file_bytes() > max_bytes) {
    return ResourceExhaustedError(
        name + ": IDX header declares " + internal::DimsText(h.dims) + " " +
        std::string(DTypeName(h.dtype)) + ", " + std::to_string(h.file_bytes()) +
        " bytes decompressed, above the limit of " + std::to_string(max_bytes) +
        " (IdxOptions.max_decompressed_bytes)");
  }
  f.memory.resize(h.file_bytes());
  std::memcpy(f.memory.data(), head, header_bytes);
  Status s = z.Read(std::span(f.memory).subspan(header_bytes));
  if (!s.ok()) {
    return DataLossError(name + ": IDX header declares " + internal::DimsText(h.dims) + " " +
                         std::string(DTypeName(h.dtype)) + " (" + std::to_string(h.file_bytes()) +
                         " bytes with the header) but the file decompresses to " +
                         std::to_string(z.produced()) + ": " + s.message());
  }
  STOKE_ASSIGN_OR_RETURN(const bool ended, z.AtEnd());
  if (!ended) {
    return DataLossError(name + ": the file decompresses to more than the " +
                         std::to_string(h.file_bytes()) + " bytes its IDX header declares (" +
                         internal::DimsText(h.dims) + " " + std::string(DTypeName(h.dtype)) + ")");
  }
  return f;
}

StatusOr<IdxFile> ReadIdxFile(FileSystem* fs, const std::string& path, uint64_t max_bytes,
                              bool load) {
  STOKE_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs->Open(path, FileOptions{}));
  STOKE_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  std::byte head[4 + 4 * 255];
  size_t got = 0;
  while (got < sizeof(head)) {
    STOKE_ASSIGN_OR_RETURN(size_t n, file->ReadAt(got, std::span(head).subspan(got)));
    if (n == 0) break;
    got += n;
  }
  if (internal::IsGzip(std::span(head, got))) {
    if (size > max_bytes) {
      return ResourceExhaustedError(path + ": " + std::to_string(size) +
                                    " compressed bytes, above the limit of " +
                                    std::to_string(max_bytes));
    }
    std::vector<std::byte> compressed(size);
    STOKE_RETURN_IF_ERROR(internal::ReadExactly(*file, 0, compressed));
    return ReadGzippedIdx(compressed, path, max_bytes);
  }
  IdxFile f;
  STOKE_ASSIGN_OR_RETURN(f.header, ParseIdxHeader(std::span(head, got), size, path));
  STOKE_RETURN_IF_ERROR(CheckIdxSize(f.header, size, path));
  if (load) {
    if (size > max_bytes) {
      return ResourceExhaustedError(path + ": " + std::to_string(size) +
                                    " bytes, above the limit of " + std::to_string(max_bytes));
    }
    f.memory.resize(size);
    STOKE_RETURN_IF_ERROR(internal::ReadExactly(*file, 0, f.memory));
  }
  return f;
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

  Status Decode(uint64_t index, Span<const std::byte> stored, Span<std::byte> out,
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
  STOKE_ASSIGN_OR_RETURN(IdxFile f,
                         ReadIdxFile(fs, path, std::min(max_bytes, kMaxLabelBytes), true));
  const IdxHeader& h = f.header;
  const std::vector<std::byte>& raw = f.memory;
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
  STOKE_ASSIGN_OR_RETURN(IdxFile file,
                         ReadIdxFile(fs, path, options.max_decompressed_bytes, false));
  IdxHeader& header = file.header;
  std::vector<std::byte>& memory = file.memory;
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

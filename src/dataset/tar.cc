// WebDataset tar shards: POSIX/ustar (and GNU long-name) tar files whose
// members share a key prefix ("0001.jpg" + "0001.cls"). Opening indexes every
// member once (headers and the small label members are read; images are not);
// samples are then byte ranges of the tars, decoded like an image folder.

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "dataset/file_set.h"
#include "dataset/image_decode.h"
#include "dataset/stored.h"
#include "stoke/image.h"

namespace stoke {
namespace {

constexpr uint64_t kBlock = 512;

struct TarSample {
  uint32_t tar = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  int64_t label = 0;
  std::string key;
};

bool IsImage(const std::string& ext) {
  return ext == "jpg" || ext == "jpeg" || ext == "png" || ext == "ppm" || ext == "bmp" ||
         ext == "webp";
}

bool IsLabel(const std::string& ext) { return ext == "cls" || ext == "cls2" || ext == "label"; }

// A tar header's octal field (NUL- or space-terminated).
bool Octal(const char* field, size_t n, uint64_t* out) {
  uint64_t v = 0;
  size_t i = 0;
  while (i < n && field[i] == ' ') ++i;
  bool any = false;
  for (; i < n && field[i] >= '0' && field[i] <= '7'; ++i) {
    v = v * 8 + static_cast<uint64_t>(field[i] - '0');
    any = true;
  }
  if (!any) return false;
  *out = v;
  return true;
}

// Whether a header's checksum (bytes 148-155, octal) is the sum of its 512
// bytes with the checksum field counted as spaces. Sums of unsigned bytes
// (POSIX) and of signed ones (some old tars) are both accepted, as GNU tar does.
bool ChecksumMatches(const char* header, uint64_t* stored) {
  if (!Octal(header + 148, 8, stored)) return false;
  uint64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (uint64_t i = 0; i < kBlock; ++i) {
    const char c = i >= 148 && i < 156 ? ' ' : header[i];
    unsigned_sum += static_cast<unsigned char>(c);
    signed_sum += static_cast<signed char>(c);
  }
  return *stored == unsigned_sum || static_cast<int64_t>(*stored) == signed_sum;
}

// A GNU long name or pax record longer than this is refused: names are short.
constexpr uint64_t kMaxNameRecord = uint64_t{1} << 20;
// Bytes of a tar read at once while indexing it.
constexpr uint64_t kIndexWindow = uint64_t{4} << 20;

class TarDataset final : public internal::ContextDecodedDataset {
 public:
  TarDataset(std::string what, FileSystem* fs, ImageOptions image, SampleSpec spec,
             std::vector<std::string> paths, std::vector<TarSample> samples)
      : what_(std::move(what)),
        fs_(fs),
        image_(image),
        spec_(std::move(spec)),
        paths_(std::move(paths)),
        samples_(std::move(samples)) {
    const internal::StoredSizes sizes =
        internal::SizesOf(samples_, [](const TarSample& s) { return s.length; });
    max_length_ = sizes.largest;
    typical_length_ = sizes.typical;
  }

  uint64_t size() const override { return samples_.size(); }
  const SampleSpec& spec() const override { return spec_; }
  uint32_t file_count() const override { return static_cast<uint32_t>(paths_.size()); }
  const std::string& file_path(uint32_t file) const override { return paths_[file]; }
  FileSystem* file_system() const override { return fs_; }
  bool decode_is_compute_bound() const override { return true; }
  uint64_t max_stored_bytes() const override { return max_length_; }
  uint64_t typical_stored_bytes() const override { return typical_length_; }
  std::optional<int64_t> StoredLabel(uint64_t index) const override {
    return samples_[index].label;
  }

  SampleLocation Locate(uint64_t index) const override {
    const TarSample& s = samples_[index];
    SampleLocation loc;
    loc.file = s.tar;
    loc.offset = s.offset;
    loc.length = s.length;
    return loc;
  }

  Status DecodeSample(const DecodeContext& ctx, Span<const std::byte> stored, Span<std::byte> out,
                      int64_t* label) const override {
    const TarSample& s = samples_[ctx.index];
    // The member's name is built on failure only: a decode allocates nothing.
    if (Status e = internal::DecodeImage(image_, ctx, stored, out); !e.ok()) {
      return e.WithContext(paths_[s.tar] + " member " + s.key);
    }
    *label = s.label;
    return Status::Ok();
  }

  std::string Describe() const override {
    return what_ + internal::DecodedDescription(image_, spec_);
  }

 private:
  const std::string what_;
  FileSystem* const fs_;
  const ImageOptions image_;
  const SampleSpec spec_;
  const std::vector<std::string> paths_;
  const std::vector<TarSample> samples_;
  uint64_t max_length_ = 0;
  uint64_t typical_length_ = 0;  // 0: no outliers
};

// Indexes one tar: appends its samples (in member order) to *out.
Status IndexTar(FileSystem* fs, const std::string& path, uint32_t tar_index,
                std::vector<TarSample>* out) {
  STOKE_ASSIGN_OR_RETURN(auto file, fs->Open(path, {}));
  STOKE_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  // Headers and labels are read through a window of up to kIndexWindow bytes,
  // so that a remote tar is indexed with one request per window, not two per
  // member (and a local one with fewer system calls).
  std::vector<std::byte> window;
  uint64_t window_at = 0;
  auto read = [&](uint64_t offset, void* dst, size_t n) -> Status {
    if (offset < window_at || offset + n > window_at + window.size()) {
      if (offset + n > size) {
        return DataLossError(path + ": truncated: the member at offset " + std::to_string(offset) +
                             " runs past the end of the file");
      }
      window.resize(std::max<uint64_t>(n, std::min<uint64_t>(kIndexWindow, size - offset)));
      window_at = offset;
      if (Status s = internal::ReadExactly(*file, offset, window); !s.ok()) {
        window.clear();
        return s;
      }
    }
    std::memcpy(dst, window.data() + (offset - window_at), n);
    return Status::Ok();
  };
  std::string long_name;  // a GNU 'L' or pax path record for the next member
  TarSample current;      // the sample whose members are being collected
  bool has_image = false, has_label = false;
  auto flush = [&]() -> Status {
    if (current.key.empty()) return Status::Ok();
    if (!has_image) {
      return InvalidArgumentError(path + ": sample '" + current.key + "' has no image member");
    }
    if (!has_label) {
      return InvalidArgumentError(path + ": sample '" + current.key +
                                  "' has no label member (.cls)");
    }
    out->push_back(current);
    current = TarSample{};
    has_image = has_label = false;
    return Status::Ok();
  };
  uint64_t at = 0;
  char header[kBlock];
  while (at + kBlock <= size) {
    STOKE_RETURN_IF_ERROR(read(at, header, kBlock));
    if (std::all_of(header, header + kBlock, [](char c) { return c == 0; })) break;  // the end
    uint64_t checksum = 0;
    if (!ChecksumMatches(header, &checksum)) {
      return DataLossError(path + ": the tar header at offset " + std::to_string(at) +
                           " fails its checksum" +
                           (checksum ? " (it records " + std::to_string(checksum) + ")" : "") +
                           ": a damaged or not a tar file");
    }
    uint64_t length = 0;
    if (!Octal(header + 124, 12, &length)) {
      return DataLossError(path + ": not a tar header at offset " + std::to_string(at));
    }
    const char type = header[156];
    const uint64_t data = at + kBlock;
    if (data + length > size) {
      return DataLossError(path + ": truncated: the member at offset " + std::to_string(at) +
                           " needs " + std::to_string(length) + " bytes");
    }
    std::string name;
    if (!long_name.empty()) {
      name = long_name;
      long_name.clear();
    } else {
      name.assign(header, strnlen(header, 100));
      if (std::memcmp(header + 257, "ustar", 5) == 0 && header[345] != 0) {
        name = std::string(header + 345, strnlen(header + 345, 155)) + "/" + name;
      }
    }
    if (type == 'L' || type == 'x') {  // the next member's name
      if (length > kMaxNameRecord) {
        return DataLossError(path + ": the name record at offset " + std::to_string(at) +
                             " declares " + std::to_string(length) + " bytes, more than a name");
      }
      std::string record(length, '\0');
      STOKE_RETURN_IF_ERROR(read(data, record.data(), length));
      if (type == 'L') {
        long_name = record.c_str();
      } else {
        const size_t p = record.find(" path=");
        if (p != std::string::npos) {
          long_name = record.substr(p + 6, record.find('\n', p) - p - 6);
        }
      }
    } else if (type == '0' || type == '\0') {
      // key: the path up to the first dot of its file name; the rest is the extension.
      const size_t slash = name.rfind('/');
      const size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
      if (dot != std::string::npos) {
        const std::string key = name.substr(0, dot);
        std::string ext = name.substr(dot + 1);
        for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (key != current.key) {
          STOKE_RETURN_IF_ERROR(flush());
          current.key = key;
          current.tar = tar_index;
        }
        if (IsImage(ext)) {
          current.offset = data;
          current.length = length;
          has_image = true;
        } else if (IsLabel(ext)) {
          if (length > 64) return InvalidArgumentError(path + ": " + name + ": not a label");
          char text[65] = {};
          STOKE_RETURN_IF_ERROR(read(data, text, length));
          char* end = nullptr;
          const long long v = std::strtoll(text, &end, 10);
          while (end && (*end == '\n' || *end == ' ' || *end == '\r')) ++end;
          if (end == text || (end && *end != '\0')) {
            return InvalidArgumentError(path + ": " + name + ": '" + std::string(text) +
                                        "' is not an integer label");
          }
          current.label = v;
          has_label = true;
        }
      }
    }
    at = data + (length + kBlock - 1) / kBlock * kBlock;
  }
  return flush();
}

}  // namespace

StatusOr<std::shared_ptr<Dataset>> OpenTar(const TarOptions& options) {
  STOKE_ASSIGN_OR_RETURN(SampleSpec spec, ImageSpec(options.image));
  FileSystem* fs = internal::FileSystemFor(options.path, options.file_system);
  STOKE_ASSIGN_OR_RETURN(std::vector<std::string> paths,
                         internal::ListFileSet(options.path, ".tar"));
  std::vector<TarSample> samples;
  for (uint32_t t = 0; t < paths.size(); ++t) {
    STOKE_RETURN_IF_ERROR(IndexTar(fs, paths[t], t, &samples));
  }
  if (samples.empty()) return InvalidArgumentError(options.path + ": the tars hold no samples");
  const std::string what = "tar " + options.path + ": " + std::to_string(samples.size()) +
                           " samples in " + std::to_string(paths.size()) + " files";
  return std::shared_ptr<Dataset>(new TarDataset(what, fs, options.image, std::move(spec),
                                                 std::move(paths), std::move(samples)));
}

}  // namespace stoke

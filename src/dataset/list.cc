// A list file of "path label" lines; each path a .npy or raw tensor file.
#include <charconv>
#include <cstring>
#include <string>

#include "dataset/list_file.h"
#include "dataset/npy.h"
#include "stoke/dataset.h"

namespace stoke {
namespace {

constexpr uint64_t kMaxListBytes = uint64_t{4} << 30;
// Room for a .npy header in front of the array (the format pads it to 64 bytes;
// version 1 allows up to 65535).
constexpr uint64_t kMaxNpyHeaderBytes = 65536 + 12;

class ListDataset final : public Dataset {
 public:
  ListDataset(FileSystem* fs, std::string list_path, bool raw, SampleSpec spec,
              std::vector<std::string> paths, std::vector<int64_t> labels)
      : fs_(fs),
        list_path_(std::move(list_path)),
        raw_(raw),
        spec_(std::move(spec)),
        paths_(std::move(paths)),
        labels_(std::move(labels)) {}

  uint64_t size() const override { return paths_.size(); }
  const SampleSpec& spec() const override { return spec_; }
  uint32_t file_count() const override { return static_cast<uint32_t>(paths_.size()); }
  const std::string& file_path(uint32_t file) const override { return paths_[file]; }
  FileSystem* file_system() const override { return fs_; }

  SampleLocation Locate(uint64_t index) const override {
    SampleLocation loc;
    loc.file = static_cast<uint32_t>(index);
    loc.whole_file = true;
    loc.length = spec_.bytes() + (raw_ ? 0 : kMaxNpyHeaderBytes);
    return loc;
  }

  Status Decode(uint64_t index, Span<const std::byte> stored, Span<std::byte> out,
                int64_t* label) const override {
    *label = labels_[index];
    if (raw_) {
      if (stored.size() != out.size()) return SizeError(index, stored.size());
      std::memcpy(out.data(), stored.data(), out.size());
      return Status::Ok();
    }
    auto header = internal::ParseNpyHeader(stored, paths_[index]);
    if (!header.ok()) return header.status();
    if (!header->Matches(spec_)) {
      return DataLossError(paths_[index] + ": holds a " + header->ToSpec().ToString() +
                           " array, the dataset's samples are " + spec_.ToString());
    }
    const uint64_t payload = stored.size() - header->data_offset;
    if (payload != out.size()) {
      return DataLossError(paths_[index] + ": .npy header declares " + spec_.ToString() + " (" +
                           std::to_string(out.size()) + " bytes) but " + std::to_string(payload) +
                           " bytes follow it");
    }
    std::memcpy(out.data(), stored.data() + header->data_offset, out.size());
    return Status::Ok();
  }

  std::string Describe() const override {
    return std::string("list ") + list_path_ + (raw_ ? " (raw files)" : " (.npy files)") + ": " +
           std::to_string(size()) + " samples of " + spec_.ToString();
  }

 private:
  Status SizeError(uint64_t index, uint64_t got) const {
    return DataLossError(paths_[index] + ": holds " + std::to_string(got) + " bytes, a raw " +
                         spec_.ToString() + " sample is " + std::to_string(spec_.bytes()) +
                         " bytes");
  }

  FileSystem* const fs_;
  const std::string list_path_;
  const bool raw_;
  const SampleSpec spec_;
  const std::vector<std::string> paths_;
  const std::vector<int64_t> labels_;
};

}  // namespace

namespace internal {

Status ReadListFile(FileSystem* fs, const std::string& list_path,
                    std::vector<std::string>* paths_out, std::vector<int64_t>* labels_out) {
  STOKE_ASSIGN_OR_RETURN(std::vector<std::byte> text, fs->ReadAll(list_path, kMaxListBytes));
  const size_t slash = list_path.rfind('/');
  const std::string base = slash == std::string::npos ? "" : list_path.substr(0, slash + 1);

  std::vector<std::string>& paths = *paths_out;
  std::vector<int64_t>& labels = *labels_out;
  std::string_view all(reinterpret_cast<const char*>(text.data()), text.size());
  size_t line_no = 0;
  while (!all.empty()) {
    ++line_no;
    size_t eol = all.find('\n');
    std::string_view line = all.substr(0, eol);
    all.remove_prefix(eol == std::string_view::npos ? all.size() : eol + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    size_t sep = line.find_last_of(" \t");
    auto bad = [&](const std::string& why) {
      return InvalidArgumentError(list_path + ":" + std::to_string(line_no) + ": " + why +
                                  " (expected 'path label')");
    };
    if (sep == std::string_view::npos) return bad("no label");
    std::string_view label_text = line.substr(sep + 1);
    std::string_view path = line.substr(0, sep);
    while (!path.empty() && (path.back() == ' ' || path.back() == '\t')) path.remove_suffix(1);
    int64_t label = 0;
    auto [end, ec] =
        std::from_chars(label_text.data(), label_text.data() + label_text.size(), label);
    if (ec != std::errc() || end != label_text.data() + label_text.size()) {
      return bad("label '" + std::string(label_text) + "' is not an integer");
    }
    paths.push_back(path.front() == '/' ? std::string(path) : base + std::string(path));
    labels.push_back(label);
  }
  if (paths.empty()) return InvalidArgumentError(list_path + ": the list holds no samples");
  if (paths.size() > UINT32_MAX) return InvalidArgumentError(list_path + ": too many samples");
  return Status::Ok();
}

}  // namespace internal

StatusOr<std::shared_ptr<Dataset>> OpenList(const ListOptions& options) {
  FileSystem* fs = options.file_system ? options.file_system : DefaultFileSystem();
  const std::string& list_path = options.list_path;
  if (options.raw && options.spec.shape.empty()) {
    return InvalidArgumentError(list_path + ": a list of raw files needs a declared shape");
  }
  for (int64_t d : options.spec.shape) {
    if (d <= 0 || d > (int64_t{1} << 32)) {
      return InvalidArgumentError(list_path + ": shape dimension " + std::to_string(d) +
                                  " is out of range");
    }
  }
  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  STOKE_RETURN_IF_ERROR(internal::ReadListFile(fs, list_path, &paths, &labels));

  SampleSpec spec = options.spec;
  if (!options.raw && spec.shape.empty()) {
    // Learn the spec from the first file's header.
    STOKE_ASSIGN_OR_RETURN(auto first, fs->Open(paths[0], FileOptions{}));
    std::vector<std::byte> head(kMaxNpyHeaderBytes);
    size_t got = 0;
    while (got < head.size()) {
      STOKE_ASSIGN_OR_RETURN(size_t n, first->ReadAt(got, std::span(head).subspan(got)));
      if (n == 0) break;
      got += n;
    }
    STOKE_ASSIGN_OR_RETURN(internal::NpyHeader header,
                           internal::ParseNpyHeader(std::span(head).first(got), paths[0]));
    spec = header.ToSpec();
  }
  if (spec.bytes() == 0) return InvalidArgumentError(list_path + ": samples of zero bytes");
  STOKE_RETURN_IF_ERROR(internal::CheckFileCount(list_path, paths.size()));
  return std::shared_ptr<Dataset>(new ListDataset(fs, list_path, options.raw, std::move(spec),
                                                  std::move(paths), std::move(labels)));
}

}  // namespace stoke

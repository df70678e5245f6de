// ImageFolder: class folders of JPEGs, torchvision's order and labels, decoded
// by the decode stage (decode/jpeg_decoder.h) with per-sample crops and flips.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "dataset/file_set.h"
#include "dataset/image_decode.h"
#include "dataset/list_file.h"
#include "dataset/stored.h"
#include "io/remote_file.h"
#include "stoke/image.h"

namespace stoke {
namespace {

namespace fs = std::filesystem;

bool HasImageExtension(const std::string& name) {
  static const char* const kExtensions[] = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                            ".pgm", ".tif",  ".tiff", ".webp"};
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* ext : kExtensions) {
    const size_t n = std::char_traits<char>::length(ext);
    if (lower.size() >= n && lower.compare(lower.size() - n, n, ext) == 0) return true;
  }
  return false;
}

// A file per image (ImageFolder, or an image list).
class ImageFilesDataset final : public internal::ContextDecodedDataset {
 public:
  // `file_bytes`: each file's size at open (0 when unknown).
  ImageFilesDataset(FileSystem* fs, std::string what, ImageOptions options, SampleSpec spec,
                    std::vector<std::string> paths, std::vector<int64_t> labels,
                    std::vector<uint64_t> file_bytes)
      : fs_(fs),
        what_(std::move(what)),
        options_(options),
        spec_(std::move(spec)),
        paths_(std::move(paths)),
        labels_(std::move(labels)),
        sizes_(internal::SizesOf(file_bytes)),
        file_bytes_(sizes_.typical > 0 ? std::move(file_bytes) : std::vector<uint64_t>{}) {}

  uint64_t size() const override { return paths_.size(); }
  const SampleSpec& spec() const override { return spec_; }
  uint32_t file_count() const override { return static_cast<uint32_t>(paths_.size()); }
  const std::string& file_path(uint32_t file) const override { return paths_[file]; }
  FileSystem* file_system() const override { return fs_; }

  bool decode_is_compute_bound() const override { return true; }

  SampleLocation Locate(uint64_t index) const override {
    SampleLocation loc;
    loc.file = static_cast<uint32_t>(index);
    loc.whole_file = true;
    // The most the file may hold: the largest file's size, or, when a few
    // files are far larger than the rest, the typical ceiling for the rest and
    // an outlier's own size for it.
    loc.length = max_stored_bytes();
    if (sizes_.typical > 0) {
      loc.length = std::max(sizes_.typical, file_bytes_[index]);
    }
    return loc;
  }

  uint64_t max_stored_bytes() const override { return std::max<uint64_t>(sizes_.largest, 1); }
  uint64_t typical_stored_bytes() const override { return sizes_.typical; }

  Status DecodeSample(const DecodeContext& ctx, Span<const std::byte> stored, Span<std::byte> out,
                      int64_t* label) const override {
    if (Status s = internal::DecodeImage(options_, ctx, stored, out); !s.ok()) {
      return s.WithContext(paths_[ctx.index]);
    }
    *label = labels_[ctx.index];
    return Status::Ok();
  }

  std::optional<int64_t> StoredLabel(uint64_t index) const override { return labels_[index]; }

  std::string Describe() const override {
    return what_ + internal::DecodedDescription(options_, spec_);
  }

 private:
  FileSystem* const fs_;
  const std::string what_;  // "ImageFolder /x: N images in K classes"
  const ImageOptions options_;
  const SampleSpec spec_;
  const std::vector<std::string> paths_;
  const std::vector<int64_t> labels_;
  const internal::StoredSizes sizes_;  // of the files at open; typical 0: no outliers
  // Each file's size at open, when there are outliers; else empty.
  const std::vector<uint64_t> file_bytes_;
};

Status Invalid(const char* field, const std::string& why) {
  return InvalidArgumentError(std::string("ImageOptions.") + field + ": " + why);
}

}  // namespace

std::string_view CropModeName(CropMode mode) {
  return mode == CropMode::kCenter ? "center" : "random-resized";
}

StatusOr<SampleSpec> ImageSpec(const ImageOptions& o) {
  if (o.height < 1 || o.height > 16384)
    return Invalid("height", std::to_string(o.height) + " is outside [1, 16384]");
  if (o.width < 1 || o.width > 16384)
    return Invalid("width", std::to_string(o.width) + " is outside [1, 16384]");
  if (o.channels != 1 && o.channels != 3)
    return Invalid("channels", std::to_string(o.channels) + " is not 1 or 3");
  if (!(o.center_fraction > 0 && o.center_fraction <= 1))
    return Invalid("center_fraction", "must be in (0, 1]");
  if (!(o.min_scale > 0 && o.min_scale <= o.max_scale && o.max_scale <= 1)) {
    return Invalid("min_scale/max_scale", "must satisfy 0 < min_scale <= max_scale <= 1");
  }
  if (!(o.min_ratio > 0 && o.min_ratio <= o.max_ratio)) {
    return Invalid("min_ratio/max_ratio", "must satisfy 0 < min_ratio <= max_ratio");
  }
  if (o.max_pixels == 0) return Invalid("max_pixels", "must be positive");
  SampleSpec spec;
  spec.dtype = DType::kUint8;
  if (o.order == PixelOrder::kHwc) {
    spec.shape = {o.height, o.width, o.channels};
    spec.channels_last = true;
  } else {
    spec.shape = {o.channels, o.height, o.width};
  }
  return spec;
}

namespace {

// An ImageFolder in S3: one listing of the prefix; a class is the first path
// component under it, and its images are ordered as torchvision's os.walk
// orders them (by folder, then by name).
StatusOr<std::shared_ptr<Dataset>> OpenRemoteImageFolder(const ImageFolderOptions& options,
                                                         SampleSpec spec) {
  STOKE_ASSIGN_OR_RETURN(std::vector<internal::ObjectEntry> objects,
                         internal::ListRemoteFolder(options.root));
  std::string root = options.root;
  while (root.ends_with("/")) root.pop_back();
  struct Image {
    std::string cls, dir, name, path;
    uint64_t bytes;
  };
  std::vector<Image> images;
  for (internal::ObjectEntry& o : objects) {
    const std::string relative = o.key.substr(root.size() + 1);
    const size_t slash = relative.find('/');
    const size_t last = relative.rfind('/');
    if (slash == std::string::npos || !HasImageExtension(relative.substr(last + 1))) continue;
    images.push_back({relative.substr(0, slash), relative.substr(0, last),
                      relative.substr(last + 1), std::move(o.key), o.size});
  }
  if (images.empty()) {
    return NotFoundError(options.root + ": no images under class prefixes (CLASS/NAME.jpg)");
  }
  std::sort(images.begin(), images.end(), [](const Image& a, const Image& b) {
    return std::tie(a.cls, a.dir, a.name) < std::tie(b.cls, b.dir, b.name);
  });
  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  std::vector<uint64_t> file_bytes;
  int64_t label = -1;
  for (size_t i = 0; i < images.size(); ++i) {
    if (i == 0 || images[i].cls != images[i - 1].cls) ++label;
    paths.push_back(std::move(images[i].path));
    labels.push_back(label);
    file_bytes.push_back(images[i].bytes);
  }
  const std::string what = "ImageFolder " + options.root + ": " + std::to_string(paths.size()) +
                           " images in " + std::to_string(label + 1) + " classes";
  STOKE_RETURN_IF_ERROR(internal::CheckFileCount(what, paths.size()));
  return std::shared_ptr<Dataset>(std::make_shared<ImageFilesDataset>(
      internal::FileSystemFor(options.root, options.file_system), what, options.image,
      std::move(spec), std::move(paths), std::move(labels), std::move(file_bytes)));
}

}  // namespace

StatusOr<std::shared_ptr<Dataset>> OpenImageFolder(const ImageFolderOptions& options) {
  STOKE_ASSIGN_OR_RETURN(SampleSpec spec, ImageSpec(options.image));
  if (internal::IsRemotePath(options.root)) return OpenRemoteImageFolder(options, std::move(spec));
  std::error_code ec;
  const fs::path root(options.root);
  if (!fs::is_directory(root, ec)) {
    return NotFoundError(options.root + ": not a directory (ImageFolderOptions.root)");
  }
  // Classes: the sub-folders, sorted by name.
  std::vector<std::string> classes;
  for (fs::directory_iterator it(root, fs::directory_options::follow_directory_symlink, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) classes.push_back(it->path().filename().string());
  }
  if (ec) return ErrnoToStatus(ec.value(), options.root + ": listing");
  if (classes.empty()) return NotFoundError(options.root + ": no class folders");
  std::sort(classes.begin(), classes.end());

  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  std::vector<uint64_t> file_bytes;  // per path
  for (size_t label = 0; label < classes.size(); ++label) {
    const fs::path class_dir = root / classes[label];
    // os.walk(followlinks=True), sorted: every folder under the class, by path.
    std::vector<fs::path> dirs{class_dir};
    for (fs::recursive_directory_iterator
             it(class_dir, fs::directory_options::follow_directory_symlink, ec),
         end;
         !ec && it != end; it.increment(ec)) {
      if (it->is_directory(ec)) dirs.push_back(it->path());
    }
    if (ec) return ErrnoToStatus(ec.value(), class_dir.string() + ": listing");
    std::sort(dirs.begin(), dirs.end(),
              [](const fs::path& a, const fs::path& b) { return a.string() < b.string(); });
    const size_t before = paths.size();
    for (const fs::path& dir : dirs) {
      std::vector<std::pair<std::string, uint64_t>> files;
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (it->is_directory(ec) || !HasImageExtension(name)) continue;
        const uint64_t bytes = it->file_size(ec);
        if (ec) return ErrnoToStatus(ec.value(), it->path().string());
        files.emplace_back(name, bytes);
      }
      if (ec) return ErrnoToStatus(ec.value(), dir.string() + ": listing");
      std::sort(files.begin(), files.end());
      for (const auto& [name, bytes] : files) {
        paths.push_back((dir / name).string());
        labels.push_back(static_cast<int64_t>(label));
        file_bytes.push_back(bytes);
      }
    }
    if (paths.size() == before) {
      return NotFoundError(class_dir.string() + ": class folder holds no image files (" +
                           "extensions .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp)");
    }
  }
  FileSystem* fs = options.file_system ? options.file_system : DefaultFileSystem();
  const std::string what = "ImageFolder " + options.root + ": " + std::to_string(paths.size()) +
                           " images in " + std::to_string(classes.size()) + " classes";
  STOKE_RETURN_IF_ERROR(internal::CheckFileCount(what, paths.size()));
  return std::shared_ptr<Dataset>(std::make_shared<ImageFilesDataset>(
      fs, what, options.image, std::move(spec), std::move(paths), std::move(labels),
      std::move(file_bytes)));
}

StatusOr<std::shared_ptr<Dataset>> OpenImageList(const ImageListOptions& options) {
  STOKE_ASSIGN_OR_RETURN(SampleSpec spec, ImageSpec(options.image));
  FileSystem* fs = options.file_system ? options.file_system : DefaultFileSystem();
  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  STOKE_RETURN_IF_ERROR(internal::ReadListFile(fs, options.list_path, &paths, &labels));
  // Sizes for the read buffers; a file that cannot be stat'ed now (missing) is
  // its sample's error later, when it is read.
  std::vector<uint64_t> file_bytes;
  file_bytes.reserve(paths.size());
  for (const std::string& path : paths) {
    std::error_code ec;
    const uint64_t bytes = fs::file_size(path, ec);
    file_bytes.push_back(ec ? 0 : bytes);
  }
  const std::string what =
      "image list " + options.list_path + ": " + std::to_string(paths.size()) + " images";
  STOKE_RETURN_IF_ERROR(internal::CheckFileCount(what, paths.size()));
  return std::shared_ptr<Dataset>(std::make_shared<ImageFilesDataset>(
      fs, what, options.image, std::move(spec), std::move(paths), std::move(labels),
      std::move(file_bytes)));
}

}  // namespace stoke

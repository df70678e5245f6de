// stoke/image.h: image datasets. JPEGs are decoded by the loader's threads with
// the least work that gives the right pixels: header first, then the crop, then
// only the rows and columns the crop needs at the smallest DCT scale that still
// covers the output, resized with an antialiasing filter, written as uint8
// straight into the batch.
//
//   stoke::ImageFolderOptions o;
//   o.root = "/data/imagenet/train";
//   o.image.crop = stoke::CropMode::kRandomResized;
//   o.image.flip = true;
//   auto train = stoke::OpenImageFolder(o);  // samples: 224x224x3 uint8
#ifndef STOKE_IMAGE_H_
#define STOKE_IMAGE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "stoke/dataset.h"
#include "stoke/status.h"

namespace stoke {

enum class CropMode {
  // The centred region of the output's aspect ratio whose shorter side is
  // `center_fraction` of the image's (224/256 by default: torchvision's
  // Resize(256) + CenterCrop(224) for square outputs).
  kCenter,
  // torchvision's RandomResizedCrop: area fraction in [min_scale, max_scale],
  // aspect ratio log-uniform in [min_ratio, max_ratio], ten tries then the
  // centre fallback. Seeded from (seed, epoch, sample index): reproducible and
  // the same for any number of threads.
  kRandomResized,
};

enum class PixelOrder { kHwc, kChw };

struct ImageOptions {
  int height = 224;
  int width = 224;
  int channels = 3;  // 3 (RGB) or 1 (luma)
  PixelOrder order = PixelOrder::kHwc;
  CropMode crop = CropMode::kCenter;
  double center_fraction = 224.0 / 256.0;
  double min_scale = 0.08, max_scale = 1.0;
  double min_ratio = 3.0 / 4.0, max_ratio = 4.0 / 3.0;
  // Mirror left-right with probability 1/2, seeded like the crop.
  bool flip = false;
  // Larger images are an error of their sample (decompression bombs).
  uint64_t max_pixels = uint64_t{1} << 27;
  // The seed of crops and flips is LoaderOptions::seed; this one is mixed in.
  uint64_t seed = 0;
};

// "HxWxC uint8" or "CxHxW uint8" for these options; InvalidArgument naming the
// field when a size, channel count, fraction, scale or ratio is out of range.
StatusOr<SampleSpec> ImageSpec(const ImageOptions& options);

// ---- ImageFolder: root/<class>/**/<image> ----
struct ImageFolderOptions {
  std::string root{};
  ImageOptions image{};
  FileSystem* file_system = nullptr;  // null: DefaultFileSystem(); listing uses the OS
};
// torchvision's ImageFolder: class folders sorted by name give labels 0, 1, ...;
// each class folder is walked (following links) in sorted order, files sorted,
// keeping the extensions torchvision accepts (.jpg .jpeg .png .ppm .bmp .pgm
// .tif .tiff .webp, any case). stoke decodes JPEG; another format under those
// names is an error of its sample naming the file. A class folder without
// images is NotFound naming it, as in torchvision. Files are stat'ed here to
// size the read buffers.
StatusOr<std::shared_ptr<Dataset>> OpenImageFolder(const ImageFolderOptions& options);

// ---- A list file of "path label" lines whose files are images ----
struct ImageListOptions {
  std::string list_path{};  // the format of OpenList: relative paths, '#' comments
  ImageOptions image{};
  FileSystem* file_system = nullptr;  // null: DefaultFileSystem()
};
StatusOr<std::shared_ptr<Dataset>> OpenImageList(const ImageListOptions& options);

// ---- WebDataset tar shards of images ----
struct TarOptions {
  std::string path{};  // a .tar file, a folder of them, or a glob ("/d/train-*.tar")
  ImageOptions image{};
  FileSystem* file_system = nullptr;  // null: DefaultFileSystem()
};
// POSIX/ustar (and GNU long-name, pax path) tars whose members are grouped by
// key, WebDataset's convention: "dir/0001.jpg" and "dir/0001.cls" (the label,
// an integer in ASCII) form sample "dir/0001". Every header is read at open to
// index the members (images are not read); tars in name order, members in tar
// order. DataLoss naming the tar and offset for a truncated or damaged tar;
// InvalidArgument naming the sample for one without an image or a label.
StatusOr<std::shared_ptr<Dataset>> OpenTar(const TarOptions& options);

std::string_view CropModeName(CropMode mode);

}  // namespace stoke

#endif  // STOKE_IMAGE_H_

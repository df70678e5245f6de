#include "pipeline_flags.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace stoke::cli {

const char kPipelineUsage[] =
    "dataset:\n"
    "  --format auto|idx|cifar|list|imagefolder|imagelist|shards|tar\n"
    "                                 auto: a folder of IDX or CIFAR files, of shards (.stk),\n"
    "                                 of WebDataset tars, of class folders (imagefolder), a\n"
    "                                 .tar, or a list file; imagelist: a list file of images.\n"
    "                                 PATH may be remote: s3://BUCKET/PREFIX or http(s)://\n"
    "                                 (shards, or tars if it names .tar)\n"
    "  --split train|test             which split of an IDX or CIFAR folder (default train)\n"
    "  --raw-shape DxDx..             list of raw files: each file's shape (else .npy)\n"
    "  --raw-dtype T                  list of raw files: uint8 (default), float32, ...\n"
    "images (imagefolder, imagelist):\n"
    "  --size HxW                     output size (default 224x224)\n"
    "  --crop center|random           centre crop, or random-resized crop (default center)\n"
    "  --flip                         random horizontal flip\n"
    "  --layout hwc|chw               pixel order of each sample (default hwc)\n"
    "  --channels 3|1                 RGB or luma (default 3)\n"
    "behaviour:\n"
    "  --batch N                      samples per batch (default 32)\n"
    "  --shuffle none|full|block|quasi  sample order (default none); quasi: for slow\n"
    "                                 storage, windows of consecutive records read whole,\n"
    "                                 several windows' samples shuffled together\n"
    "  --block N                      samples per block for --shuffle block (default 256)\n"
    "  --window-bytes BYTES           --shuffle quasi: bytes a window reads (default 8M)\n"
    "  --group-windows N              --shuffle quasi: windows shuffled together (default 8)\n"
    "  --seed N                       shuffle seed (default 0)\n"
    "  --drop-last                    drop each epoch's short last batch\n"
    "  --rank R --world W             read rank R's shard of W\n"
    "  --on-error fail|skip           a bad sample fails its batch, or is replaced\n"
    "performance:\n"
    "  --read-threads N               pread threads (default 4)\n"
    "  --reads-in-flight N            samples in flight (default: auto)\n"
    "  --samples-per-task N           consecutive samples per read/decode task (default: auto)\n"
    "  --decode-threads N             decode threads (0: on the readers; default -1: one\n"
    "                                 per core for JPEG images, else 0)\n"
    "  --ring-slots N                 batches in the ring (default 0: auto, from the work\n"
    "                                 in flight, at least 4)\n"
    "  --memory-budget BYTES          ring + read buffers ceiling, e.g. 512M (default 1G)\n"
    "  --io auto|pread|uring|mmap     read backend (default auto: mmap for samples inside\n"
    "                                 a few big files already in RAM, else io_uring, else\n"
    "                                 pread); a file truncated under a mapping is an error\n"
    "                                 of its samples, not a signal\n"
    "  --direct                       O_DIRECT reads: bypass the page cache\n"
    "  --preload                      read the stored bytes into RAM once, at open\n"
    "  --storage-model M              read as if from a modelled device: hdd, sata-ssd,\n"
    "                                 nvme, s3, ram, or BW_MBPS,LATENCY_MS,SEEK_MS[,PARALLEL]\n"
    "  --pin-memory                   ring slots in page-locked memory (needs CUDA and a GPU)\n"
    "device:\n"
    "  --device cpu|cuda[:N]          deliver batches to the host or to GPU N (default cpu)\n"
    "  --dtype uint8|float16|float32  delivered element type; floats are channels first and\n"
    "                                 scaled to [0, 1] (default uint8)\n"
    "  --normalize MEAN,STD|imagenet  then (x - MEAN) / STD; each one value or per channel\n"
    "                                 with '/', e.g. 0.485/0.456/0.406,0.229/0.224/0.225;\n"
    "                                 imagenet: ImageNet's (needs a float --dtype)\n"
    "  --device-buffers N             batches copied ahead or held (default 2)\n";

namespace {

// "imagenet", or MEAN,STD with each side one number or several joined by '/'.
Status ParseNormalize(const std::string& text, LoaderOptions* o) {
  if (text == "imagenet") {
    o->normalize_mean = {0.485f, 0.456f, 0.406f};
    o->normalize_std = {0.229f, 0.224f, 0.225f};
    return Status::Ok();
  }
  const auto bad = [&] {
    return InvalidArgumentError("--normalize: '" + text +
                                "' is not MEAN,STD (e.g. 0.5,0.25 or 0.485/0.456/0.406,"
                                "0.229/0.224/0.225) or imagenet");
  };
  const size_t comma = text.find(',');
  if (comma == std::string::npos) return bad();
  auto parse = [&](const std::string& side, std::vector<float>* out) {
    size_t start = 0;
    while (start <= side.size()) {
      const size_t end = std::min(side.find('/', start), side.size());
      const std::string number = side.substr(start, end - start);
      char* stop = nullptr;
      const float v = std::strtof(number.c_str(), &stop);
      if (number.empty() || *stop != '\0') return false;
      out->push_back(v);
      start = end + 1;
    }
    return true;
  };
  if (!parse(text.substr(0, comma), &o->normalize_mean) ||
      !parse(text.substr(comma + 1), &o->normalize_std)) {
    return bad();
  }
  return Status::Ok();
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

StatusOr<std::string> DetectFormat(const std::string& path) {
  // Remote data (s3://, http(s)://): WebDataset tars if named so, else shards.
  if (path.starts_with("s3://") || path.starts_with("http://") || path.starts_with("https://")) {
    return std::string(path.find(".tar") != std::string::npos ? "tar" : "shards");
  }
  if (!Exists(path)) return NotFoundError(path + ": no such file or directory");
  if (!IsDirectory(path)) {
    return std::string(path.ends_with(".tar") ? "tar" : "list");
  }
  for (const char* f : {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz",
                        "t10k-images-idx3-ubyte", "t10k-images-idx3-ubyte.gz"}) {
    if (Exists(path + "/" + f)) return std::string("idx");
  }
  for (const char* f : {"data_batch_1.bin", "test_batch.bin", "train.bin", "test.bin"}) {
    if (Exists(path + "/" + f)) return std::string("cifar");
  }
  // A folder of shards.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    if (entry.path().extension() == ".stk") return std::string("shards");
    if (entry.path().extension() == ".tar") return std::string("tar");
  }
  // A folder of folders: an ImageFolder.
  DIR* dir = ::opendir(path.c_str());
  if (dir) {
    bool sub_folder = false;
    while (dirent* e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name != "." && name != ".." && IsDirectory(path + "/" + name)) sub_folder = true;
    }
    ::closedir(dir);
    if (sub_folder) return std::string("imagefolder");
  }
  return InvalidArgumentError("--format auto: " + path +
                              " holds no IDX or CIFAR files and no class folders; name the "
                              "format with --format");
}

StatusOr<SampleSpec> ParseShape(const std::string& shape, const std::string& dtype) {
  SampleSpec spec;
  STOKE_ASSIGN_OR_RETURN(spec.dtype, ParseDType(dtype));
  size_t start = 0;
  while (start <= shape.size()) {
    size_t x = shape.find('x', start);
    std::string part = shape.substr(start, x == std::string::npos ? std::string::npos : x - start);
    char* end = nullptr;
    long long d = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || d <= 0 || d > (1ll << 32)) {
      return InvalidArgumentError("--raw-shape: '" + shape + "' is not like 3x32x32");
    }
    spec.shape.push_back(d);
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return spec;
}

}  // namespace

// Loader option names as the command spells them.
std::string CommandSpelling(std::string message) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"LoaderOptions.batch_size", "--batch"},
      {"LoaderOptions.ring_slots", "--ring-slots"},
      {"LoaderOptions.read_threads", "--read-threads"},
      {"LoaderOptions.reads_in_flight", "--reads-in-flight"},
      {"LoaderOptions.decode_threads", "--decode-threads"},
      {"LoaderOptions.samples_per_task", "--samples-per-task"},
      {"LoaderOptions.block_samples", "--block"},
      {"LoaderOptions.window_bytes", "--window-bytes"},
      {"LoaderOptions.group_windows", "--group-windows"},
      {"LoaderOptions.order", "--shuffle"},
      {"LoaderOptions.world_size", "--world"},
      {"LoaderOptions.rank", "--rank"},
      {"LoaderOptions.memory_budget_bytes", "--memory-budget"},
      {"LoaderOptions.io", "--io"},
      {"LoaderOptions.preload_max_bytes", "--preload"},
      {"LoaderOptions.device_buffers", "--device-buffers"},
      {"LoaderOptions.device", "--device"},
      {"LoaderOptions.output_dtype", "--dtype"},
      {"LoaderOptions.normalize_mean", "--normalize"},
      {"LoaderOptions.normalize_std", "--normalize"},
  };
  for (const auto& [from, to] : kNames) {
    size_t at = message.find(from);
    if (at != std::string::npos) message.replace(at, std::string(from).size(), to);
  }
  return message;
}

double PeakRssBytes() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024.0;
}

const std::set<std::string>& PipelineValuedFlags() {
  static const std::set<std::string> kFlags = {"format",
                                               "split",
                                               "raw-shape",
                                               "raw-dtype",
                                               "batch",
                                               "shuffle",
                                               "block",
                                               "window-bytes",
                                               "group-windows",
                                               "seed",
                                               "world",
                                               "rank",
                                               "on-error",
                                               "read-threads",
                                               "reads-in-flight",
                                               "decode-threads",
                                               "ring-slots",
                                               "memory-budget",
                                               "io",
                                               "samples-per-task",
                                               "size",
                                               "crop",
                                               "layout",
                                               "channels",
                                               "device",
                                               "dtype",
                                               "normalize",
                                               "device-buffers",
                                               "storage-model"};
  return kFlags;
}

const std::set<std::string>& PipelineSwitches() {
  static const std::set<std::string> kSwitches = {"direct", "drop-last", "flip", "pin-memory",
                                                  "preload"};
  return kSwitches;
}

Status ParsePipelineFlags(const Flags& flags, int64_t default_batch,
                          const std::string& default_shuffle, Pipeline* out) {
  LoaderOptions& o = out->options;
  ImageOptions& image = out->image;
  std::string order, on_error, io, crop, layout, dtype;
#define STOKE_FLAG(lhs, expr)       \
  {                                 \
    auto v = (expr);                \
    if (!v.ok()) return v.status(); \
    lhs = *v;                       \
  }
  STOKE_FLAG(out->format, flags.Choice("format", "auto",
                                       {"auto", "idx", "cifar", "list", "imagefolder", "imagelist",
                                        "shards", "tar"}));
  STOKE_FLAG(crop, flags.Choice("crop", "center", {"center", "random"}));
  STOKE_FLAG(layout, flags.Choice("layout", "hwc", {"hwc", "chw"}));
  STOKE_FLAG(image.channels, flags.Int("channels", 3, 1, 3));
  STOKE_FLAG(out->split, flags.Choice("split", "train", {"train", "test"}));
  STOKE_FLAG(o.batch_size, flags.Int("batch", default_batch, 1, int64_t{1} << 24));
  STOKE_FLAG(order, flags.Choice("shuffle", default_shuffle, {"none", "full", "block", "quasi"}));
  STOKE_FLAG(o.block_samples, flags.Int("block", 256, 1, int64_t{1} << 40));
  STOKE_FLAG(o.window_bytes, flags.Bytes("window-bytes", uint64_t{8} << 20));
  STOKE_FLAG(o.group_windows, flags.Int("group-windows", 8, 1, 4096));
  STOKE_FLAG(o.seed, flags.Int("seed", 0, 0, INT64_MAX));
  STOKE_FLAG(o.world_size, flags.Int("world", 1, 1, 1 << 20));
  STOKE_FLAG(o.rank, flags.Int("rank", 0, 0, o.world_size - 1));
  STOKE_FLAG(on_error, flags.Choice("on-error", "fail", {"fail", "skip"}));
  STOKE_FLAG(o.read_threads, flags.Int("read-threads", 4, 1, 1024));
  STOKE_FLAG(o.reads_in_flight, flags.Int("reads-in-flight", 0, 0, 65536));
  STOKE_FLAG(o.decode_threads, flags.Int("decode-threads", -1, -1, 1024));
  STOKE_FLAG(o.samples_per_task, flags.Int("samples-per-task", 0, 0, 4096));
  STOKE_FLAG(o.ring_slots, flags.Int("ring-slots", 0, 0, 4096));
  STOKE_FLAG(o.memory_budget_bytes, flags.Bytes("memory-budget", uint64_t{1} << 30));
  STOKE_FLAG(io, flags.Choice("io", "auto", {"auto", "pread", "uring", "mmap"}));
  STOKE_FLAG(dtype, flags.Choice("dtype", "uint8", {"uint8", "float16", "float32"}));
  STOKE_FLAG(o.device_buffers, flags.Int("device-buffers", 2, 2, 64));
#undef STOKE_FLAG
  o.order = order == "full"    ? Order::kFullShuffle
            : order == "block" ? Order::kBlock
            : order == "quasi" ? Order::kQuasiRandom
                               : Order::kSequential;
  o.on_error = on_error == "skip" ? ErrorPolicy::kSkip : ErrorPolicy::kFail;
  o.io = io == "pread"   ? IoBackend::kPread
         : io == "uring" ? IoBackend::kUring
         : io == "mmap"  ? IoBackend::kMmap
                         : IoBackend::kAuto;
  image.crop = crop == "random" ? CropMode::kRandomResized : CropMode::kCenter;
  image.order = layout == "chw" ? PixelOrder::kChw : PixelOrder::kHwc;
  image.flip = flags.Has("flip");
  if (flags.Has("size")) {
    const std::string size = flags.String("size", "");
    int h = 0, w = 0;
    char tail = 0;
    if (std::sscanf(size.c_str(), "%dx%d%c", &h, &w, &tail) != 2 || h < 1 || w < 1 || h > 16384 ||
        w > 16384) {
      return InvalidArgumentError("--size: '" + size + "' is not HxW with sides in [1, 16384]");
    }
    image.height = h;
    image.width = w;
  }
  if (auto spec = ImageSpec(image); !spec.ok()) {
    return spec.status().WithContext("--channels/--size");
  }
  o.output_dtype = *ParseDType(dtype);
  auto device = ParseDevice(flags.String("device", "cpu"));
  if (!device.ok()) return device.status().WithContext("--device");
  o.device = *device;
  if (flags.Has("normalize"))
    STOKE_RETURN_IF_ERROR(ParseNormalize(flags.String("normalize", ""), &o));
  o.direct_io = flags.Has("direct");
  o.pin_memory = flags.Has("pin-memory");
  o.preload = flags.Has("preload");
  o.drop_last = flags.Has("drop-last");
  if (flags.Has("storage-model")) {
    auto model = ParseStorageModel(flags.String("storage-model", ""));
    if (!model.ok()) return model.status().WithContext("--storage-model");
    UseStorageModel(*model, flags, out);
  }
  out->raw_shape = flags.String("raw-shape", "");
  out->raw_dtype = flags.String("raw-dtype", "uint8");
  return Status::Ok();
}

void UseStorageModel(const StorageModel& model, const Flags& flags, Pipeline* pipeline) {
  pipeline->storage = NewModelledFileSystem(DefaultFileSystem(), model);
  pipeline->storage_model = model.name;
  pipeline->storage_bytes_per_second = model.bytes_per_second;
  if (!flags.Has("read-threads")) {
    int& threads = pipeline->options.read_threads;
    threads = std::max(threads, model.parallel_requests);
  }
}

StatusOr<std::shared_ptr<Dataset>> OpenDataset(const std::string& path, const std::string& split,
                                               Pipeline* pipeline) {
  if (pipeline->format == "auto") {
    STOKE_ASSIGN_OR_RETURN(pipeline->format, DetectFormat(path));
  }
  const std::string& format = pipeline->format;
  FileSystem* fs = pipeline->storage.get();  // null: the default
  if (format == "idx") return OpenIdxSplit(path, split, fs);
  if (format == "cifar") return OpenCifar(path, split, fs);
  const ImageOptions& image = pipeline->image;
  if (format == "imagefolder") {
    return OpenImageFolder({.root = path, .image = image, .file_system = fs});
  }
  if (format == "tar") return OpenTar({.path = path, .image = image, .file_system = fs});
  if (format == "shards") return OpenShards({.path = path, .image = image, .file_system = fs});
  if (format == "imagelist") {
    return OpenImageList({.list_path = path, .image = image, .file_system = fs});
  }
  ListOptions lo;
  lo.list_path = path;
  lo.file_system = fs;
  if (!pipeline->raw_shape.empty()) {
    STOKE_ASSIGN_OR_RETURN(lo.spec, ParseShape(pipeline->raw_shape, pipeline->raw_dtype));
    lo.raw = true;
  }
  return OpenList(lo);
}

int LoaderOpenExit(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument ||
                 status.code() == StatusCode::kResourceExhausted
             ? 2
             : 1;
}

}  // namespace stoke::cli

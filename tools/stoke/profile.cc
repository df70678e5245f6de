#include "profile.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "digest.h"
#include "flags.h"
#include "json.h"
#include "stoke/stoke.h"

namespace stoke::cli {

const char kProfileUsage[] =
    "usage: stoke profile PATH [options]\n"
    "\n"
    "Runs a loader over the dataset at PATH and reports what each stage did.\n"
    "\n"
    "dataset:\n"
    "  --format auto|idx|cifar|list|imagefolder|imagelist\n"
    "                                 auto: a folder of IDX or CIFAR files, a folder of class\n"
    "                                 folders (imagefolder), or a list file; imagelist: a\n"
    "                                 list file of images\n"
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
    "  --epochs N                     epochs to run (default 1)\n"
    "  --max-batches N                stop each epoch after N batches (default: all)\n"
    "  --shuffle none|full|block      sample order (default none)\n"
    "  --block N                      samples per block for --shuffle block (default 256)\n"
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
    "  --ring-slots N                 batches in the ring (default 4)\n"
    "  --memory-budget BYTES          ring + read buffers ceiling, e.g. 512M (default 1G)\n"
    "  --io auto|pread|uring|mmap     read backend (default auto: mmap for samples inside\n"
    "                                 a few big files, else io_uring, else pread)\n"
    "  --direct                       O_DIRECT reads: bypass the page cache\n"
    "  --pin-memory                   ring slots in page-locked memory (needs CUDA and a GPU)\n"
    "device:\n"
    "  --device cpu|cuda[:N]          deliver batches to the host or to GPU N (default cpu)\n"
    "  --dtype uint8|float16|float32  delivered element type; floats are channels first and\n"
    "                                 scaled to [0, 1] (default uint8)\n"
    "  --normalize MEAN,STD           then (x - MEAN) / STD; each one value or per channel\n"
    "                                 with '/', e.g. 0.485/0.456/0.406,0.229/0.224/0.225,\n"
    "                                 or 'imagenet' (needs a float --dtype)\n"
    "  --device-buffers N             batches copied ahead or held (default 2)\n"
    "output:\n"
    "  --json FILE                    write the report as JSON\n"
    "  --digest                       hash every batch's bytes and labels, in order\n"
    "  --quiet                        no live progress\n"
    "\n"
    "exit status: 0 success, 1 data or I/O error, 2 usage error\n";

namespace {

constexpr int kExitData = 1;
constexpr int kExitUsage = 2;

int Fail(int code, const Status& status) {
  std::fprintf(stderr, "stoke profile: %s\n", status.ToString().c_str());
  return code;
}

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
      {"LoaderOptions.world_size", "--world"},
      {"LoaderOptions.rank", "--rank"},
      {"LoaderOptions.memory_budget_bytes", "--memory-budget"},
      {"LoaderOptions.io", "--io"},
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
  if (!Exists(path)) return NotFoundError(path + ": no such file or directory");
  if (!IsDirectory(path)) return std::string("list");
  for (const char* f : {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz",
                        "t10k-images-idx3-ubyte", "t10k-images-idx3-ubyte.gz"}) {
    if (Exists(path + "/" + f)) return std::string("idx");
  }
  for (const char* f : {"data_batch_1.bin", "test_batch.bin", "train.bin", "test.bin"}) {
    if (Exists(path + "/" + f)) return std::string("cifar");
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

double PeakRssBytes() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024.0;
}

}  // namespace

int ProfileCommand(const std::vector<std::string>& args) {
  auto parsed = Flags::Parse(args,
                             {"format",
                              "split",
                              "raw-shape",
                              "raw-dtype",
                              "batch",
                              "epochs",
                              "max-batches",
                              "shuffle",
                              "block",
                              "seed",
                              "rank",
                              "world",
                              "on-error",
                              "read-threads",
                              "reads-in-flight",
                              "decode-threads",
                              "ring-slots",
                              "memory-budget",
                              "io",
                              "json",
                              "samples-per-task",
                              "size",
                              "crop",
                              "layout",
                              "channels",
                              "device",
                              "dtype",
                              "normalize",
                              "device-buffers"},
                             {"direct", "digest", "quiet", "drop-last", "flip", "pin-memory"});
  if (!parsed.ok()) return Fail(kExitUsage, parsed.status());
  const Flags& flags = *parsed;
  if (flags.positional().size() != 1) {
    std::fputs(kProfileUsage, stderr);
    return Fail(kExitUsage, InvalidArgumentError("expected exactly one dataset PATH"));
  }
  const std::string path = flags.positional()[0];

  // 1. Options. Every error here is a usage error naming its flag.
  LoaderOptions o;
  int64_t epochs = 0;
  int64_t max_batches = 0;
  std::string format, split, order, on_error, io, crop, layout, dtype;
  ImageOptions image;
  {
    auto usage = [&](const Status& s) { return Fail(kExitUsage, s); };
#define STOKE_FLAG(lhs, expr)              \
  {                                        \
    auto v = (expr);                       \
    if (!v.ok()) return usage(v.status()); \
    lhs = *v;                              \
  }
    STOKE_FLAG(format, flags.Choice("format", "auto",
                                    {"auto", "idx", "cifar", "list", "imagefolder", "imagelist"}));
    STOKE_FLAG(crop, flags.Choice("crop", "center", {"center", "random"}));
    STOKE_FLAG(layout, flags.Choice("layout", "hwc", {"hwc", "chw"}));
    STOKE_FLAG(image.channels, flags.Int("channels", 3, 1, 3));
    STOKE_FLAG(split, flags.Choice("split", "train", {"train", "test"}));
    STOKE_FLAG(o.batch_size, flags.Int("batch", 32, 1, int64_t{1} << 24));
    STOKE_FLAG(epochs, flags.Int("epochs", 1, 1, int64_t{1} << 30));
    STOKE_FLAG(max_batches, flags.Int("max-batches", 0, 0, int64_t{1} << 40));
    STOKE_FLAG(order, flags.Choice("shuffle", "none", {"none", "full", "block"}));
    STOKE_FLAG(o.block_samples, flags.Int("block", 256, 1, int64_t{1} << 40));
    STOKE_FLAG(o.seed, flags.Int("seed", 0, 0, INT64_MAX));
    STOKE_FLAG(o.world_size, flags.Int("world", 1, 1, 1 << 20));
    STOKE_FLAG(o.rank, flags.Int("rank", 0, 0, o.world_size - 1));
    STOKE_FLAG(on_error, flags.Choice("on-error", "fail", {"fail", "skip"}));
    STOKE_FLAG(o.read_threads, flags.Int("read-threads", 4, 1, 1024));
    STOKE_FLAG(o.reads_in_flight, flags.Int("reads-in-flight", 0, 0, 65536));
    STOKE_FLAG(o.decode_threads, flags.Int("decode-threads", -1, -1, 1024));
    STOKE_FLAG(o.samples_per_task, flags.Int("samples-per-task", 0, 0, 4096));
    STOKE_FLAG(o.ring_slots, flags.Int("ring-slots", 4, 2, 4096));
    STOKE_FLAG(o.memory_budget_bytes, flags.Bytes("memory-budget", uint64_t{1} << 30));
    STOKE_FLAG(io, flags.Choice("io", "auto", {"auto", "pread", "uring", "mmap"}));
    STOKE_FLAG(dtype, flags.Choice("dtype", "uint8", {"uint8", "float16", "float32"}));
    STOKE_FLAG(o.device_buffers, flags.Int("device-buffers", 2, 2, 64));
#undef STOKE_FLAG
  }
  o.order = order == "full" ? Order::kFullShuffle
                            : (order == "block" ? Order::kBlock : Order::kSequential);
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
      return Fail(kExitUsage, InvalidArgumentError("--size: '" + size +
                                                   "' is not HxW with sides in [1, 16384]"));
    }
    image.height = h;
    image.width = w;
  }
  if (auto spec = ImageSpec(image); !spec.ok()) {
    return Fail(kExitUsage, spec.status().WithContext("--channels/--size"));
  }
  o.output_dtype = *ParseDType(dtype);
  if (auto device = ParseDevice(flags.String("device", "cpu")); device.ok()) {
    o.device = *device;
  } else {
    return Fail(kExitUsage, device.status().WithContext("--device"));
  }
  if (flags.Has("normalize")) {
    if (Status s = ParseNormalize(flags.String("normalize", ""), &o); !s.ok()) {
      return Fail(kExitUsage, s);
    }
  }
  o.direct_io = flags.Has("direct");
  o.pin_memory = flags.Has("pin-memory");
  o.drop_last = flags.Has("drop-last");
  const bool digest_on = flags.Has("digest");
  const bool progress = !flags.Has("quiet") && isatty(STDERR_FILENO);

  // 2. The dataset.
  if (format == "auto") {
    auto detected = DetectFormat(path);
    if (!detected.ok()) {
      return Fail(detected.status().code() == StatusCode::kNotFound ? kExitData : kExitUsage,
                  detected.status());
    }
    format = *detected;
  }
  StatusOr<std::shared_ptr<Dataset>> dataset = InvalidArgumentError("no dataset");
  if (format == "idx") {
    dataset = OpenIdxSplit(path, split);
  } else if (format == "cifar") {
    dataset = OpenCifar(path, split);
  } else if (format == "imagefolder") {
    ImageFolderOptions fo;
    fo.root = path;
    fo.image = image;
    dataset = OpenImageFolder(fo);
  } else if (format == "imagelist") {
    ImageListOptions lo;
    lo.list_path = path;
    lo.image = image;
    dataset = OpenImageList(lo);
  } else {
    ListOptions lo;
    lo.list_path = path;
    if (flags.Has("raw-shape")) {
      auto spec = ParseShape(flags.String("raw-shape", ""), flags.String("raw-dtype", "uint8"));
      if (!spec.ok()) return Fail(kExitUsage, spec.status());
      lo.raw = true;
      lo.spec = *spec;
    }
    dataset = OpenList(lo);
  }
  if (!dataset.ok()) return Fail(kExitData, dataset.status());

  // 3. The loader.
  auto opened = Loader::Open(*dataset, o);
  if (!opened.ok()) {
    const bool usage = opened.status().code() == StatusCode::kInvalidArgument ||
                       opened.status().code() == StatusCode::kResourceExhausted;
    return Fail(usage ? kExitUsage : kExitData,
                Status(opened.status().code(), CommandSpelling(opened.status().message())));
  }
  Loader& loader = **opened;
  std::fprintf(stderr, "stoke profile: %s\n", (*dataset)->Describe().c_str());

  // 4. Run.
  Digest digest;
  std::vector<std::byte> host_copy;  // --digest of device batches
  uint64_t samples = 0, batches = 0, bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  auto last_progress = start;
  const int64_t per_epoch = max_batches > 0
                                ? std::min<int64_t>(max_batches, loader.batches_per_epoch())
                                : loader.batches_per_epoch();
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    const Position at = loader.position();
    if (at.epoch + 1 == epoch && at.batch == loader.batches_per_epoch()) {
      StatusOr<Batch> end_marker = loader.Next();  // keeps what was read ahead
      if (!end_marker.ok()) return Fail(kExitData, end_marker.status());
    } else if (!(at == Position{epoch, 0})) {
      Status s = loader.Seek({epoch, 0});  // --max-batches cut the epoch short
      if (!s.ok()) return Fail(kExitData, s);
    }
    for (int64_t b = 0; b < per_epoch; ++b) {
      StatusOr<Batch> batch = loader.Next();
      if (!batch.ok()) {
        if (progress) std::fputs("\n", stderr);
        return Fail(kExitData, batch.status().WithContext("epoch " + std::to_string(epoch) +
                                                          ", batch " + std::to_string(b)));
      }
      if (digest_on && batch->device().kind != DeviceKind::kCpu) {
        host_copy.resize(std::max(host_copy.size(), batch->bytes()));
        if (Status s = batch->CopyToHost(host_copy); !s.ok()) return Fail(kExitData, s);
        digest.Update(host_copy.data(), batch->bytes());
        digest.Update(batch->labels().data(), batch->labels().size_bytes());
      } else if (digest_on) {
        digest.Update(batch->data(), batch->bytes());
        digest.Update(batch->labels().data(), batch->labels().size_bytes());
      }
      samples += static_cast<uint64_t>(batch->size());
      bytes += batch->bytes();
      ++batches;
      const auto now = std::chrono::steady_clock::now();
      if (progress && now - last_progress > std::chrono::milliseconds(250)) {
        last_progress = now;
        const double secs = std::chrono::duration<double>(now - start).count();
        std::fprintf(stderr, "\r  epoch %lld  batch %lld/%lld  %.0f samples/s  %.1f MB/s   ",
                     static_cast<long long>(epoch), static_cast<long long>(b + 1),
                     static_cast<long long>(per_epoch), samples / secs, bytes / secs / 1e6);
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (progress) std::fputs("\r\033[K", stderr);
  const LoaderStats stats = loader.stats();
  const double peak_rss = PeakRssBytes();

  // 5. Report.
  std::printf("dataset      %s\n", (*dataset)->Describe().c_str());
  std::printf("delivered    %llu samples in %llu batches, %.3f s: %.0f samples/s, %.1f MB/s\n",
              static_cast<unsigned long long>(samples), static_cast<unsigned long long>(batches),
              seconds, samples / seconds, bytes / seconds / 1e6);
  std::printf("memory       ring %.1f MiB, read buffers %.1f MiB, peak RSS %.1f MiB\n",
              stats.ring_bytes / 1048576.0, stats.arena_bytes / 1048576.0, peak_rss / 1048576.0);
  std::printf("device       %s, %s batches\n", stats.device.c_str(),
              std::string(DTypeName(o.output_dtype)).c_str());
  for (const StageStats& stage : stats.stages) {
    const ThreadStats t = stage.Total();
    if (stage.name == "copy" && t.busy_seconds > 0) {
      std::printf("copy         %.1f MB in %.3f s busy: %.2f GB/s\n", t.bytes / 1e6, t.busy_seconds,
                  t.bytes / t.busy_seconds / 1e9);
    }
  }
  std::printf("consumer     waited %.3f s for data (%.0f%% of the run)\n",
              stats.consumer_wait_seconds, 100.0 * stats.consumer_wait_seconds / seconds);
  if (stats.skipped) {
    std::printf("skipped      %llu bad samples, e.g. %s\n",
                static_cast<unsigned long long>(stats.skipped),
                stats.skipped_samples.empty() ? "" : stats.skipped_samples[0].error.c_str());
  }
  std::printf("%-14s %7s %12s %12s %10s %10s\n", "stage", "threads", "items", "MB", "busy s",
              "blocked s");
  for (const StageStats& stage : stats.stages) {
    const ThreadStats t = stage.Total();
    std::string name = stage.name == "read" ? "read/" + stats.io_backend : stage.name;
    std::printf("%-14s %7zu %12llu %12.1f %10.3f %10.3f\n", name.c_str(), stage.threads.size(),
                static_cast<unsigned long long>(t.items), t.bytes / 1e6, t.busy_seconds,
                t.blocked_seconds);
  }
  if (digest_on) std::printf("digest       %s\n", digest.Hex().c_str());

  if (flags.Has("json")) {
    JsonWriter j;
    j.BeginObject();
    j.Key("dataset").String((*dataset)->Describe());
    j.Key("format").String(format);
    j.Key("io_backend").String(stats.io_backend);
    j.Key("device").String(stats.device);
    j.Key("dtype").String(std::string(DTypeName(o.output_dtype)));
    j.Key("samples").Uint(samples);
    j.Key("batches").Uint(batches);
    j.Key("skipped").Uint(stats.skipped);
    j.Key("seconds").Number(seconds);
    j.Key("samples_per_second").Number(samples / seconds);
    j.Key("bytes_per_second").Number(bytes / seconds);
    j.Key("peak_rss_bytes").Uint(static_cast<uint64_t>(peak_rss));
    j.Key("ring_bytes").Uint(stats.ring_bytes);
    j.Key("arena_bytes").Uint(stats.arena_bytes);
    j.Key("consumer_wait_seconds").Number(stats.consumer_wait_seconds);
    j.Key("digest").String(digest_on ? digest.Hex() : "");
    j.Key("skipped_samples").BeginArray();
    for (const SkippedSample& s : stats.skipped_samples) {
      j.BeginObject().Key("index").Uint(s.index).Key("error").String(s.error).EndObject();
    }
    j.EndArray();
    j.Key("stages").BeginArray();
    for (const StageStats& stage : stats.stages) {
      const ThreadStats t = stage.Total();
      j.BeginObject();
      j.Key("name").String(stage.name);
      j.Key("threads").Uint(stage.threads.size());
      j.Key("items").Uint(t.items);
      j.Key("bytes").Uint(t.bytes);
      j.Key("busy_seconds").Number(t.busy_seconds);
      j.Key("blocked_seconds").Number(t.blocked_seconds);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
    const std::string json_path = flags.String("json", "");
    std::ofstream out(json_path);
    out << j.str() << "\n";
    if (!out) {
      return Fail(kExitData, ErrnoToStatus(errno, "--json " + json_path + ": cannot write"));
    }
  }
  return 0;
}

}  // namespace stoke::cli

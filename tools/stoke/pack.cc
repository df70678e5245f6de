#include "pack.h"

#include <unistd.h>

#include <chrono>
#include <set>

#include "command.h"
#include "flags.h"
#include "pipeline_flags.h"
#include "stoke/shards.h"

namespace stoke::cli {
namespace {

const char kPackUsage[] =
    "usage: stoke pack SRC DST [options]\n"
    "\n"
    "Converts the dataset at SRC (an ImageFolder, an image list, a list, IDX or CIFAR)\n"
    "into stoke shards in the folder DST: records of (key, label, bytes) in a seeded\n"
    "random order (so that even sequential reads give batches of mixed classes),\n"
    "an index and a CRC-32 per record. Images are stored as their JPEG files, rewritten\n"
    "losslessly with a restart marker per MCU (the same pixels; crops then decode only\n"
    "the part they cover); other datasets as their decoded samples. Each shard is\n"
    "written under a temporary name and renamed complete, so an interrupted pack leaves\n"
    "no shard that reads as valid.\n"
    "DST is a folder, or s3://BUCKET/PREFIX (AWS_ENDPOINT_URL and the AWS_* credentials\n"
    "as every AWS tool reads them): each shard is uploaded once complete (in parts past\n"
    "64 MiB) and stoke-manifest.txt, which lists them, is written last, so an\n"
    "interrupted pack never reads as a smaller dataset.\n"
    "Read them with `stoke profile DST` (--format shards).\n"
    "\n"
    "  --shard-size BYTES   close a shard past this size, e.g. 64M (default 256M)\n"
    "  --keep-jpeg          store JPEG files byte for byte, without restart markers\n"
    "  --short-side N       JPEGs whose short side exceeds N pixels: resampled to it\n"
    "                       (antialiased, as the loader resamples) and re-encoded at\n"
    "                       --quality; smaller ones kept. For training at N or below:\n"
    "                       the pixels beyond N are gone from the packed copy\n"
    "  --max-side N         the same for the long side\n"
    "  --quality Q          JPEG quality of resampled images, 1-100 (default 90)\n"
    "  --store jpeg|raw     raw: store each image decoded (RGB pixels, after any\n"
    "                       resize): loading crops and resamples with no JPEG decode,\n"
    "                       reading 3 bytes a pixel (default jpeg)\n"
    "  --threads N          threads rewriting JPEGs (default: one per core)\n"
    "  --seed N             seed of the record order (default 0)\n"
    "  --shuffle-records    write records in a seeded random order (the default)\n"
    "  --keep-order         write records in the source's index order instead\n"
    "  --format F, --split S, --raw-shape, --raw-dtype: as for stoke profile\n"
    "\n"
    "exit status: 0 success, 1 data or I/O error, 2 usage error\n";

struct PackRequest {
  std::string source, destination;
  Pipeline pipeline;
  PackOptions options;
};

// Every error here is a usage error naming its flag.
StatusOr<PackRequest> ParsePack(const std::vector<std::string>& args) {
  std::set<std::string> valued = PipelineValuedFlags();
  valued.insert({"shard-size", "threads", "short-side", "max-side", "quality", "store"});
  std::set<std::string> switches = PipelineSwitches();
  switches.insert({"keep-jpeg", "keep-order", "shuffle-records"});
  STOKE_ASSIGN_OR_RETURN(const Flags flags, Flags::Parse(args, valued, switches));
  if (flags.positional().size() != 2) {
    std::fputs(kPackUsage, stderr);
    return InvalidArgumentError("expected SRC and DST");
  }
  PackRequest r;
  r.source = flags.positional()[0];
  r.destination = flags.positional()[1];
  STOKE_RETURN_IF_ERROR(ParsePipelineFlags(flags, 32, "none", &r.pipeline));
  PackOptions& options = r.options;
  STOKE_ASSIGN_OR_RETURN(const uint64_t shard_bytes,
                         flags.Bytes("shard-size", options.shard_bytes));
  if (shard_bytes < 4096 || shard_bytes > (uint64_t{1} << 40)) {
    return InvalidArgumentError("--shard-size: " + std::to_string(shard_bytes) +
                                " bytes is outside [4K, 1T]");
  }
  options.shard_bytes = shard_bytes;
  options.jpeg_restart_markers = !flags.Has("keep-jpeg");
  if (flags.Has("keep-order") && flags.Has("shuffle-records")) {
    return InvalidArgumentError("--keep-order and --shuffle-records contradict");
  }
  options.shuffle_records = !flags.Has("keep-order");
  options.shuffle_seed = r.pipeline.options.seed;
  if (flags.Has("short-side") && flags.Has("max-side")) {
    return InvalidArgumentError("--short-side and --max-side: give one");
  }
  for (const char* side : {"short-side", "max-side"}) {
    if (!flags.Has(side)) continue;
    STOKE_ASSIGN_OR_RETURN(const int64_t pixels, flags.Int(side, 0, 1, 65535));
    options.resize = std::string(side) == "short-side" ? PackOptions::Resize::kShortSide
                                                       : PackOptions::Resize::kLongSide;
    options.resize_pixels = static_cast<int>(pixels);
  }
  STOKE_ASSIGN_OR_RETURN(const int64_t quality, flags.Int("quality", 90, 1, 100));
  if (flags.Has("quality") && options.resize == PackOptions::Resize::kNone) {
    return InvalidArgumentError(
        "--quality: applies to resampled images (--short-side or --max-side)");
  }
  options.resize_quality = static_cast<int>(quality);
  STOKE_ASSIGN_OR_RETURN(const std::string store, flags.Choice("store", "jpeg", {"jpeg", "raw"}));
  options.store_pixels = store == "raw";
  if (options.store_pixels && (flags.Has("quality") || flags.Has("keep-jpeg"))) {
    return InvalidArgumentError(
        "--store raw: stores decoded pixels; --quality and --keep-jpeg "
        "apply to JPEGs");
  }
  STOKE_ASSIGN_OR_RETURN(const int64_t threads, flags.Int("threads", 0, 0, 4096));
  options.threads = static_cast<int>(threads);
  return r;
}

void PrintPacked(const PackRequest& request, const Dataset& dataset, const PackResult& result,
                 double seconds) {
  const PackOptions& options = request.options;
  std::printf("stoke pack: %llu records of %s into %llu shards under %s, %.1f MB, %.2f s\n",
              static_cast<unsigned long long>(result.records), dataset.Describe().c_str(),
              static_cast<unsigned long long>(result.shards), request.destination.c_str(),
              result.bytes / 1e6, seconds);
  std::printf("  records %s\n", options.shuffle_records ? ("in a seeded random order (seed " +
                                                           std::to_string(options.shuffle_seed) +
                                                           "; --keep-order keeps the source's)")
                                                              .c_str()
                                                        : "in the source's order (--keep-order)");
  if (result.jpegs_resampled > 0) {
    std::printf("  %llu JPEGs resampled to a %s side of %d at quality %d (the rest kept)\n",
                static_cast<unsigned long long>(result.jpegs_resampled),
                options.resize == PackOptions::Resize::kLongSide ? "long" : "short",
                options.resize_pixels, options.resize_quality);
  }
  if (result.jpegs_rewritten > 0) {
    std::printf(
        "  %llu JPEGs rewritten with restart markers (--keep-jpeg stores them as they are)\n",
        static_cast<unsigned long long>(result.jpegs_rewritten));
  }
}

}  // namespace

void PrintPackUsage(FILE* out) { std::fputs(kPackUsage, out); }

int PackCommand(const std::vector<std::string>& args) {
  auto request = ParsePack(args);
  if (!request.ok()) return Fail("pack", Failure::Usage(request.status()));
  auto dataset = OpenDataset(request->source, request->pipeline.split, &request->pipeline);
  if (!dataset.ok()) return Fail("pack", Failure::Data(dataset.status()));
  const bool progress = isatty(STDERR_FILENO);
  PackOptions options = request->options;
  options.progress = [&](uint64_t done, uint64_t all) {
    if (progress && (done % 1000 == 0 || done == all)) {
      std::fprintf(stderr, "\r  %llu / %llu records", static_cast<unsigned long long>(done),
                   static_cast<unsigned long long>(all));
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto result = Pack(**dataset, request->destination, options);
  if (progress) std::fputs("\n", stderr);
  if (!result.ok()) {
    const bool usage = result.status().code() == StatusCode::kInvalidArgument;
    return Fail("pack", Failure{usage ? kExitUsage : kExitData, result.status()});
  }
  PrintPacked(*request, **dataset, *result,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

}  // namespace stoke::cli

// stoke/shards.h: packed shards, the layout that reads fast on any disk.
//
// A shard is one file of records (the samples' bytes, back to back) followed
// by an index (per record: offset, length, label, CRC-32, key) and a footer
// that checks the index. Pack writes each shard under a temporary name and
// renames it only once complete and synced, so an interrupted pack leaves no
// file that reads as a shard. Images are stored as their JPEG files, by
// default rewritten losslessly with restart markers so crops decode faster
// (decoded at load time with the usual ImageOptions); other datasets as their decoded
// samples, with their shape and type.
//
// Thread safety: an opened shards dataset is a Dataset (any const method from
// any thread). Pack reads and writes on the calling thread and rewrites JPEGs on
// PackOptions::threads threads of its own.
//
//   stoke::PackOptions pack;                                  // 256 MiB shards
//   auto written = stoke::Pack(*folder, "/data/train-shards", pack);
//   stoke::ShardsOptions open;
//   open.path = "/data/train-shards";                         // or a glob
//   auto shards = stoke::OpenShards(open);
#ifndef STOKE_SHARDS_H_
#define STOKE_SHARDS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "stoke/dataset.h"
#include "stoke/image.h"
#include "stoke/status.h"

namespace stoke {

struct PackOptions {
  // A shard is closed once it holds at least this many bytes. Default 256 MiB.
  uint64_t shard_bytes = uint64_t{256} << 20;
  // Rewrite each JPEG losslessly (the same DCT coefficients, so the same
  // pixels) with a restart marker after every MCU and optimised Huffman tables.
  // The decoder then entropy-decodes only the segments a crop covers instead of
  // every row down to the crop's bottom edge. Costs about one decode per image
  // at pack time; records come out about the same size (-3% to +12%).
  // Progressive JPEGs become sequential. A JPEG libjpeg cannot read cleanly is
  // stored as it is, so its damage is still reported when it is decoded.
  // Default true.
  bool jpeg_restart_markers = true;
  // Threads that rewrite JPEGs (reading and writing stay on the calling
  // thread); 0: one per core. Default 0.
  int threads = 0;
  // Write the records in a seeded random permutation of the source's order
  // (recorded in each shard's footer), as WebDataset and FFCV advise: then even
  // sequential or quasi-random reads give batches that mix the classes of a
  // class-sorted folder. Each record keeps its source key and label. Costs
  // random reads of the source once, at pack time. Default true.
  bool shuffle_records = true;
  uint64_t shuffle_seed = 0;  // default 0
  // Images larger than training needs (FFCV's max_resolution): a JPEG whose
  // short side (kShortSide) or long side (kLongSide) exceeds resize_pixels is
  // decoded once, resampled with the loader's antialiased resampler to that
  // side, and re-encoded at resize_quality with a restart marker per MCU;
  // smaller ones are kept (rewritten losslessly as above). The pixels beyond
  // that resolution are gone from the packed copy (the source is untouched);
  // crops decode fewer bytes. Recorded in every shard and shown by Describe().
  // Only for JPEG sources. Default kNone.
  enum class Resize { kNone = 0, kShortSide = 1, kLongSide = 2 };
  Resize resize = Resize::kNone;
  int resize_pixels = 0;    // > 0 with a resize
  int resize_quality = 90;  // 1..100 (JPEGs re-encoded; not with store_pixels)
  // Store each image decoded (RGB pixels, after the resize if any), not as a
  // JPEG: loading then only crops and resamples, with no JPEG decode, for
  // small images whose decode costs more than reading their pixels (3 bytes a
  // pixel: about 6x a q90 JPEG's bytes). Crops, flips and sizes are the
  // loader's as for JPEGs; the pixels differ from a JPEG's decode by its
  // rounding (resampled as RGB, not as YCbCr planes). Only for JPEG sources.
  // Default false.
  bool store_pixels = false;
  // Called after each record with (records written, records in all); may be empty.
  std::function<void(uint64_t, uint64_t)> progress{};
};

struct PackResult {
  uint64_t records = 0;
  uint64_t shards = 0;
  uint64_t bytes = 0;            // in all shards
  uint64_t jpegs_rewritten = 0;  // with restart markers (or resampled)
  uint64_t jpegs_resampled = 0;  // of those, brought down to PackOptions::resize
};

// Writes `dataset`, in a seeded permutation (shuffle_records) or in index order, as shards
// dst_dir/shard-NNNNNN.stk (the folder is created). Each shard is written to a .tmp file, synced
// and renamed into place. A sample that cannot be read, or a failed write, sync, close or rename,
// fails the pack naming the file and the cause, and removes every shard the pack wrote: a failed
// pack leaves nothing that reads as a (smaller) valid dataset. The source is only read.
StatusOr<PackResult> Pack(const Dataset& dataset, const std::string& dst_dir,
                          const PackOptions& options);

struct ShardsOptions {
  // A folder (its *.stk files, sorted) or a glob pattern ("/data/s/shard-*.stk").
  std::string path{};
  // How stored JPEGs are decoded (ignored for shards of decoded samples).
  ImageOptions image{};
  // Check each record's CRC-32 as it is decoded: a mismatch is DataLoss naming
  // the shard and the record. Costs one core about 0.3 ms per MB (zlib's
  // crc32: 2.9 to 3.9 GB/s on a 2-core EPYC VM). Default true.
  bool verify_checksums = true;
  FileSystem* file_system = nullptr;  // null: DefaultFileSystem()
};

// Reads every shard's footer and index (checked); InvalidArgument for shards
// that disagree on their payload, DataLoss naming a shard whose footer or index
// is damaged, NotFound when the path names no shard.
StatusOr<std::shared_ptr<Dataset>> OpenShards(const ShardsOptions& options);

}  // namespace stoke

#endif  // STOKE_SHARDS_H_

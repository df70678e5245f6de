// Packed shards (stoke/shards.h): each shard's footer and index are read and
// checked at open; samples are byte ranges of the shards, so the loader reads
// runs of consecutive records with one read; each record's CRC-32 is checked
// as it is decoded.

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dataset/crc32.h"
#include "dataset/file_set.h"
#include "dataset/image_decode.h"
#include "dataset/shard_format.h"
#include "dataset/stored.h"
#include "stoke/shards.h"
#include "util/checked.h"

namespace stoke {
namespace {

using internal::IndexEntry;
using internal::ShardFooter;
using internal::ShardMeta;
using internal::ShardPayload;

struct Record {
  uint32_t shard;
  uint32_t crc;
  uint64_t offset;
  uint64_t length;
  int64_t label;
  uint64_t ordinal;  // its number within its shard, for messages
};

class ShardsDataset final : public internal::ContextDecodedDataset {
 public:
  ShardsDataset(const ShardsOptions& options, FileSystem* fs, SampleSpec spec, ShardPayload payload,
                std::vector<std::string> paths, std::vector<Record> records,
                std::vector<std::string> keys, std::string packing)
      : options_(options),
        fs_(fs),
        spec_(std::move(spec)),
        payload_(payload),
        paths_(std::move(paths)),
        records_(std::move(records)),
        keys_(std::move(keys)),
        packing_(std::move(packing)) {
    const internal::StoredSizes sizes =
        internal::SizesOf(records_, [](const Record& r) { return r.length; });
    max_length_ = sizes.largest;
    typical_length_ = sizes.typical;
  }

  uint64_t size() const override { return records_.size(); }
  const SampleSpec& spec() const override { return spec_; }
  uint32_t file_count() const override { return static_cast<uint32_t>(paths_.size()); }
  const std::string& file_path(uint32_t file) const override { return paths_[file]; }
  FileSystem* file_system() const override { return fs_; }
  bool decode_is_compute_bound() const override { return payload_ != ShardPayload::kRaw; }
  uint64_t max_stored_bytes() const override { return max_length_; }
  uint64_t typical_stored_bytes() const override { return typical_length_; }
  std::optional<int64_t> StoredLabel(uint64_t index) const override {
    return records_[index].label;
  }

  SampleLocation Locate(uint64_t index) const override {
    const Record& r = records_[index];
    SampleLocation loc;
    loc.file = r.shard;
    loc.offset = r.offset;
    loc.length = r.length;
    return loc;
  }

  Status DecodeSample(const DecodeContext& ctx, Span<const std::byte> stored, Span<std::byte> out,
                      int64_t* label) const override {
    const Record& r = records_[ctx.index];
    if (options_.verify_checksums && !ctx.rewritten) {
      const uint32_t crc = internal::Crc32(stored.data(), stored.size());
      if (crc != r.crc) {
        return DataLossError(Name(ctx.index) + ": CRC-32 mismatch: the index says " +
                             std::to_string(r.crc) + ", the bytes give " + std::to_string(crc));
      }
    }
    if (payload_ == ShardPayload::kJpeg) {
      // The record's name is built on failure only: a decode allocates nothing.
      if (Status s = internal::DecodeImage(options_.image, ctx, stored, out); !s.ok()) {
        return s.WithContext(Name(ctx.index));
      }
    } else if (payload_ == ShardPayload::kPixels) {
      if (Status s = internal::DecodePixels(options_.image, ctx, stored, out); !s.ok()) {
        return s.WithContext(Name(ctx.index));
      }
    } else {
      if (stored.size() != out.size()) {
        return DataLossError(Name(ctx.index) + ": " + std::to_string(stored.size()) +
                             " bytes for a sample of " + std::to_string(out.size()));
      }
      std::memcpy(out.data(), stored.data(), out.size());
    }
    *label = r.label;
    return Status::Ok();
  }

  std::string Describe() const override {
    std::string s = "shards " + options_.path + ": " + std::to_string(records_.size()) +
                    " records in " + std::to_string(paths_.size()) + " shards of ";
    if (payload_ == ShardPayload::kJpeg) {
      return s + "JPEGs" + internal::DecodedDescription(options_.image, spec_) + packing_;
    }
    if (payload_ == ShardPayload::kPixels) {
      return s + "images stored as decoded pixels (stoke pack --store raw)" +
             internal::DecodedDescription(options_.image, spec_) + packing_;
    }
    return s + spec_.ToString() + " samples" + packing_;
  }

 private:
  // "shard /d/shard-000001.stk record 17 (key class_001/img_0000017.jpg)"
  std::string Name(uint64_t index) const {
    const Record& r = records_[index];
    return "shard " + paths_[r.shard] + " record " + std::to_string(r.ordinal) + " (key " +
           keys_[index] + ")";
  }

  const ShardsOptions options_;
  FileSystem* const fs_;
  const SampleSpec spec_;
  const ShardPayload payload_;
  const std::vector<std::string> paths_;
  const std::vector<Record> records_;
  const std::vector<std::string> keys_;
  // How stoke pack wrote the records (", JPEGs ... resampled ...", ", records
  // shuffled ..."), for Describe; empty when neither.
  const std::string packing_;
  uint64_t max_length_ = 0;
  uint64_t typical_length_ = 0;  // 0: no outliers
};

// One shard's footer and index, read and checked on its own.
struct ShardIndex {
  SampleSpec spec;
  ShardPayload payload = ShardPayload::kRaw;
  std::string resized;  // how stoke pack resampled its JPEGs, if it did
  bool shuffled = false;
  uint64_t shuffle_seed = 0;
  std::vector<Record> records;
  std::vector<std::string> keys;
};

StatusOr<ShardIndex> ReadShardIndex(FileSystem* fs, const std::string& path, uint32_t s,
                                    const ShardsOptions& options) {
  auto damaged = [&](const std::string& why) {
    return DataLossError(path + ": not a complete stoke shard: " + why);
  };
  ShardIndex out;
  STOKE_ASSIGN_OR_RETURN(auto file, fs->Open(path, {}));
  STOKE_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  if (size < sizeof(ShardFooter) + sizeof(ShardMeta)) return damaged("too short");
  ShardFooter footer;
  STOKE_RETURN_IF_ERROR(internal::ReadExactly(
      *file, size - sizeof footer, {reinterpret_cast<std::byte*>(&footer), sizeof footer}));
  if (std::memcmp(footer.magic, internal::kShardMagic, sizeof footer.magic) != 0) {
    return damaged("no footer");
  }
  if (footer.version != internal::kShardVersion) {
    return damaged("version " + std::to_string(footer.version));
  }
  // Every sum checked: the footer's numbers are the file's, hostile or not.
  const uint64_t index_bytes = footer.count * sizeof(IndexEntry);  // count <= 2^32
  const std::optional<uint64_t> keys_end =
      internal::CheckedAdd(footer.keys_offset, footer.keys_bytes);
  const std::optional<uint64_t> index_end =
      internal::CheckedAdd(footer.index_offset, index_bytes + sizeof(ShardMeta) + sizeof footer);
  if (footer.count > (uint64_t{1} << 32) || keys_end != footer.index_offset || index_end != size) {
    return damaged("its footer's sizes do not add up to the file's " + std::to_string(size) +
                   " bytes");
  }
  std::vector<std::byte> tail;
  try {
    tail.resize(footer.keys_bytes + index_bytes + sizeof(ShardMeta));  // bounded by its size
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError(path + ": no memory for its index of " +
                                  std::to_string(footer.keys_bytes + index_bytes) + " bytes");
  }
  STOKE_RETURN_IF_ERROR(internal::ReadExactly(*file, footer.keys_offset, tail));
  const uint32_t crc = internal::Crc32(tail.data(), tail.size());
  if (crc != footer.tail_crc) return damaged("its index fails its CRC-32");
  ShardMeta meta;
  std::memcpy(&meta, tail.data() + footer.keys_bytes + index_bytes, sizeof meta);
  if (footer.flags & internal::kRecordsShuffled) {
    out.shuffled = true;
    out.shuffle_seed = footer.shuffle_seed;
  }
  if (meta.payload == static_cast<uint32_t>(ShardPayload::kJpeg) ||
      meta.payload == static_cast<uint32_t>(ShardPayload::kPixels)) {
    STOKE_ASSIGN_OR_RETURN(out.spec, ImageSpec(options.image));
  } else if (meta.payload == static_cast<uint32_t>(ShardPayload::kRaw) && meta.rank <= 8 &&
             meta.dtype <= static_cast<uint32_t>(DType::kFloat64)) {
    out.spec.dtype = static_cast<DType>(meta.dtype);
    out.spec.shape.assign(meta.dims, meta.dims + meta.rank);
    out.spec.channels_last = meta.channels_last != 0;
    const std::optional<uint64_t> bytes =
        internal::CheckedBytes(DTypeSize(out.spec.dtype), out.spec.shape);
    if (!bytes || *bytes > internal::kMaxDeclaredSampleBytes) {
      return damaged("its samples of " + internal::DimsText(out.spec.shape) + " " +
                     std::string(DTypeName(out.spec.dtype)) + " are more than 1 TiB");
    }
  } else {
    return damaged("unknown payload " + std::to_string(meta.payload));
  }
  out.payload = static_cast<ShardPayload>(meta.payload);
  if (meta.payload != static_cast<uint32_t>(ShardPayload::kRaw) &&
      meta.dims[internal::kResizeModeDim] != 0) {
    const int64_t mode = meta.dims[internal::kResizeModeDim];
    const bool jpeg = meta.payload == static_cast<uint32_t>(ShardPayload::kJpeg);
    out.resized =
        std::string(jpeg ? ", JPEGs" : ", images") + " larger than a " +
        std::string(mode == 2 ? "long" : "short") + " side of " +
        std::to_string(meta.dims[internal::kResizePixelsDim]) + " resampled to it by stoke pack" +
        (jpeg ? " (quality " + std::to_string(meta.dims[internal::kResizeQualityDim]) + ")"
              : std::string());
  }
  const char* key_blob = reinterpret_cast<const char*>(tail.data());
  out.records.reserve(footer.count);
  out.keys.reserve(footer.count);
  for (uint64_t i = 0; i < footer.count; ++i) {
    IndexEntry e;
    std::memcpy(&e, tail.data() + footer.keys_bytes + i * sizeof e, sizeof e);
    const std::optional<uint64_t> record_end = internal::CheckedAdd(e.offset, e.length);
    const std::optional<uint64_t> key_end = internal::CheckedAdd(e.key_offset, e.key_length);
    if (!record_end || *record_end > footer.keys_offset || !key_end ||
        *key_end > footer.keys_bytes) {
      return damaged("record " + std::to_string(i) + " lies outside the records");
    }
    out.records.push_back({s, e.crc, e.offset, e.length, e.label, i});
    out.keys.emplace_back(key_blob + e.key_offset, e.key_length);
  }
  return out;
}

// Shards whose indexes are read at once, at open: a remote store answers each
// request tens of milliseconds late, so one at a time costs a second per 15
// shards.
constexpr size_t kIndexReaders = 16;

}  // namespace

StatusOr<std::shared_ptr<Dataset>> OpenShards(const ShardsOptions& options) {
  FileSystem* fs = internal::FileSystemFor(options.path, options.file_system);
  STOKE_ASSIGN_OR_RETURN(std::vector<std::string> paths,
                         internal::ListFileSet(options.path, internal::kShardSuffix));
  // 1. Every shard's index, on up to kIndexReaders threads.
  std::vector<std::optional<StatusOr<ShardIndex>>> indexes(paths.size());
  {
    std::atomic<size_t> next{0};
    auto read = [&] {
      for (size_t s = next++; s < paths.size(); s = next++) {
        indexes[s] = ReadShardIndex(fs, paths[s], static_cast<uint32_t>(s), options);
      }
    };
    std::vector<std::thread> readers;
    for (size_t t = 1; t < std::min(kIndexReaders, paths.size()); ++t) readers.emplace_back(read);
    read();
    for (std::thread& t : readers) t.join();
  }
  // 2. Checked against each other in shard order, so the error named is the
  //    first shard's, as reading them one by one would name it.
  std::vector<Record> records;
  std::vector<std::string> keys;
  bool shuffled = false;
  uint64_t shuffle_seed = 0;
  const ShardIndex* first = nullptr;
  for (uint32_t s = 0; s < paths.size(); ++s) {
    if (!indexes[s]->ok()) return indexes[s]->status();
    ShardIndex& index = **indexes[s];
    if (index.shuffled) {
      shuffled = true;
      shuffle_seed = index.shuffle_seed;
    }
    if (first == nullptr) {
      first = &index;
    } else if (!(index.spec == first->spec) || index.payload != first->payload) {
      return InvalidArgumentError(paths[s] + ": holds " + index.spec.ToString() +
                                  " records, unlike " + paths[0] + " (" + first->spec.ToString() +
                                  ")");
    } else if (index.resized != first->resized) {
      return InvalidArgumentError(paths[s] + ": packed with another resize than " + paths[0] +
                                  first->resized);
    }
    records.insert(records.end(), index.records.begin(), index.records.end());
    keys.insert(keys.end(), std::make_move_iterator(index.keys.begin()),
                std::make_move_iterator(index.keys.end()));
  }
  if (records.empty()) return InvalidArgumentError(options.path + ": the shards hold no records");
  return std::shared_ptr<Dataset>(
      new ShardsDataset(options, fs, first->spec, first->payload, std::move(paths),
                        std::move(records), std::move(keys),
                        first->resized + (shuffled ? ", records shuffled by stoke pack "
                                                     "(seed " +
                                                         std::to_string(shuffle_seed) + ")"
                                                   : "")));
}

}  // namespace stoke

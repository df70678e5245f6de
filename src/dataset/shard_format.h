// The on-disk layout of a stoke shard (native little-endian):
//
//   records    each sample's bytes, back to back, from offset 0
//   keys       every record's key (a relative path or an index), back to back
//   index      count x IndexEntry
//   meta       ShardMeta: what the payload is
//   footer     ShardFooter, the file's last 64 bytes
//
// The footer's CRC covers keys, index and meta; each IndexEntry carries the
// CRC-32 (zlib) of its record.
#ifndef STOKE_SRC_DATASET_SHARD_FORMAT_H_
#define STOKE_SRC_DATASET_SHARD_FORMAT_H_

#include <cstdint>

namespace stoke::internal {

inline constexpr char kShardMagic[8] = {'S', 'T', 'K', 'S', 'H', 'R', 'D', '1'};
inline constexpr uint32_t kShardVersion = 1;
inline constexpr char kShardSuffix[] = ".stk";

enum class ShardPayload : uint32_t {
  kRaw = 0,   // decoded samples of ShardMeta's spec
  kJpeg = 1,  // image files, decoded with ImageOptions at load time
  // Images decoded by stoke pack --store raw (decode/jpeg_resample.h's pixel
  // records), cropped and resized with ImageOptions at load time.
  kPixels = 2,
};

struct IndexEntry {
  uint64_t offset;
  uint64_t length;
  int64_t label;
  uint64_t key_offset;  // into the keys region
  uint32_t key_length;
  uint32_t crc;  // CRC-32 of the record's bytes
};
static_assert(sizeof(IndexEntry) == 40);

struct ShardMeta {
  uint32_t payload;  // ShardPayload
  uint32_t dtype;    // DType, kRaw
  uint32_t rank;
  uint32_t channels_last;
  int64_t dims[8];
};
static_assert(sizeof(ShardMeta) == 80);

// A JPEG payload's images have rank 3, which leaves the meta's last dims free:
// stoke pack records there how it resampled them (PackOptions::resize; zeros:
// every image as the source stored it).
inline constexpr int kResizeModeDim = 5;     // PackOptions::Resize
inline constexpr int kResizePixelsDim = 6;   // resize_pixels
inline constexpr int kResizeQualityDim = 7;  // resize_quality

struct ShardFooter {
  char magic[8];
  uint32_t version;
  uint32_t tail_crc;  // CRC-32 of keys + index + meta
  uint64_t count;
  uint64_t keys_offset;
  uint64_t keys_bytes;
  uint64_t index_offset;  // index, then meta right after it
  uint64_t flags;         // kRecordsShuffled, or 0 (records in the source's order)
  uint64_t shuffle_seed;  // with kRecordsShuffled: the seed of the permutation
};
inline constexpr uint64_t kRecordsShuffled = 1;
static_assert(sizeof(ShardFooter) == 64);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_SHARD_FORMAT_H_

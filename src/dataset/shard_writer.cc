// Pack: a dataset, in index order or a seeded permutation of it, into shards
// (dataset/shard_format.h), each written under a temporary name, synced, and renamed into place
// complete.
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "dataset/shard_format.h"
#include "dataset/stored.h"
#include "decode/jpeg_restart.h"
#include "stoke/shards.h"

namespace stoke {
namespace {

using internal::IndexEntry;
using internal::ShardFooter;
using internal::ShardMeta;

uint32_t Crc(const void* p, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* bytes = static_cast<const Bytef*>(p);
  while (n > 0) {  // zlib takes uInt lengths
    const auto chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = crc32(crc, bytes, chunk);
    bytes += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

class ShardWriter {
 public:
  ShardWriter(std::string path, const ShardMeta& meta, uint64_t flags, uint64_t shuffle_seed)
      : final_path_(std::move(path)),
        tmp_path_(final_path_ + ".tmp"),
        meta_(meta),
        flags_(flags),
        shuffle_seed_(shuffle_seed) {}
  ~ShardWriter() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(tmp_path_.c_str());  // never completed: leave nothing behind
    }
  }

  Status Open() {
    fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) return ErrnoToStatus(errno, tmp_path_ + ": create");
    return Status::Ok();
  }

  Status Add(const std::string& key, int64_t label, std::span<const std::byte> bytes) {
    STOKE_RETURN_IF_ERROR(Write(bytes.data(), bytes.size()));
    entries_.push_back({offset_ - bytes.size(), bytes.size(), label, keys_.size(),
                        static_cast<uint32_t>(key.size()), Crc(bytes.data(), bytes.size())});
    keys_ += key;
    return Status::Ok();
  }

  uint64_t bytes() const { return offset_; }
  uint64_t records() const { return entries_.size(); }

  // Keys, index, meta and footer; then sync, rename into place, sync the folder.
  Status Finish() {
    ShardFooter footer{};
    std::memcpy(footer.magic, internal::kShardMagic, sizeof footer.magic);
    footer.version = internal::kShardVersion;
    footer.count = entries_.size();
    footer.keys_offset = offset_;
    footer.keys_bytes = keys_.size();
    footer.index_offset = offset_ + keys_.size();
    footer.flags = flags_;
    footer.shuffle_seed = shuffle_seed_;
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(keys_.data()), static_cast<uInt>(keys_.size()));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(entries_.data()),
                static_cast<uInt>(entries_.size() * sizeof(IndexEntry)));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(&meta_), sizeof meta_);
    footer.tail_crc = static_cast<uint32_t>(crc);
    STOKE_RETURN_IF_ERROR(Write(keys_.data(), keys_.size()));
    STOKE_RETURN_IF_ERROR(Write(entries_.data(), entries_.size() * sizeof(IndexEntry)));
    STOKE_RETURN_IF_ERROR(Write(&meta_, sizeof meta_));
    STOKE_RETURN_IF_ERROR(Write(&footer, sizeof footer));
    if (::fsync(fd_) != 0) return ErrnoToStatus(errno, tmp_path_ + ": fsync");
    if (::close(fd_) != 0) {
      fd_ = -1;
      ::unlink(tmp_path_.c_str());
      return ErrnoToStatus(errno, tmp_path_ + ": close");
    }
    fd_ = -1;
    if (::rename(tmp_path_.c_str(), final_path_.c_str()) != 0) {
      const int e = errno;
      ::unlink(tmp_path_.c_str());
      return ErrnoToStatus(e, final_path_ + ": rename");
    }
    const std::string dir = std::filesystem::path(final_path_).parent_path().string();
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    return Status::Ok();
  }

 private:
  Status Write(const void* p, size_t n) {
    const auto* bytes = static_cast<const char*>(p);
    while (n > 0) {
      const ssize_t w = ::write(fd_, bytes, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, tmp_path_ + ": write at offset " + std::to_string(offset_));
      }
      bytes += w;
      n -= static_cast<size_t>(w);
      offset_ += static_cast<uint64_t>(w);
    }
    return Status::Ok();
  }

  const std::string final_path_;
  const std::string tmp_path_;
  const ShardMeta meta_;
  const uint64_t flags_;
  const uint64_t shuffle_seed_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  std::vector<IndexEntry> entries_;
  std::string keys_;
};

// The source index of each record: a seeded Fisher-Yates shuffle driven by
// splitmix64, so the same seed gives the same shards on every platform.
std::vector<uint64_t> RecordOrder(uint64_t n, bool shuffle, uint64_t seed) {
  std::vector<uint64_t> order(n);
  for (uint64_t i = 0; i < n; ++i) order[i] = i;
  if (!shuffle) return order;
  uint64_t state = seed ^ 0x5851f42d4c957f2dull;
  auto next = [&state] {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  for (uint64_t i = n; i > 1; --i) {
    // Modulo bias is below 2^-30 for fewer than 2^34 records.
    const uint64_t j = next() % i;
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

std::string ShardName(const std::string& dir, uint64_t n) {
  char name[32];
  std::snprintf(name, sizeof name, "/shard-%06llu", static_cast<unsigned long long>(n));
  return dir + name + internal::kShardSuffix;
}

}  // namespace

StatusOr<PackResult> Pack(const Dataset& d, const std::string& dst_dir, const PackOptions& o) {
  if (o.shard_bytes < 4096 || o.shard_bytes > (uint64_t{1} << 40)) {
    return InvalidArgumentError("PackOptions.shard_bytes: " + std::to_string(o.shard_bytes) +
                                " is outside [4096, 2^40]");
  }
  if (o.threads < 0 || o.threads > 4096) {
    return InvalidArgumentError("PackOptions.threads: " + std::to_string(o.threads) +
                                " is outside [0, 4096]");
  }
  std::error_code ec;
  std::filesystem::create_directories(dst_dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), dst_dir + ": create the folder");

  ShardMeta meta{};
  const bool images = d.decode_is_compute_bound();
  meta.payload =
      static_cast<uint32_t>(images ? internal::ShardPayload::kJpeg : internal::ShardPayload::kRaw);
  const SampleSpec& spec = d.spec();
  meta.dtype = static_cast<uint32_t>(spec.dtype);
  meta.rank = static_cast<uint32_t>(spec.shape.size());
  meta.channels_last = spec.channels_last ? 1 : 0;
  for (size_t i = 0; i < spec.shape.size() && i < 8; ++i) meta.dims[i] = spec.shape[i];

  PackResult result;
  std::unique_ptr<ShardWriter> shard;
  // Records go in chunks: read in order on this thread, JPEGs rewritten on the
  // pack's threads (a few ms each), then written in order.
  constexpr uint64_t kChunk = 256;
  const bool rewrite = images && o.jpeg_restart_markers;
  const int threads = o.threads > 0
                          ? o.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::vector<std::byte>> stored(kChunk), rewritten(kChunk);
  std::vector<char> was_rewritten(kChunk);
  std::vector<std::byte> sample(spec.bytes());
  const std::vector<uint64_t> order = RecordOrder(d.size(), o.shuffle_records, o.shuffle_seed);
  const uint64_t flags = o.shuffle_records ? internal::kRecordsShuffled : 0;
  for (uint64_t base = 0; base < d.size(); base += kChunk) {
    const uint64_t end = std::min(d.size(), base + kChunk);
    for (uint64_t r = base; r < end; ++r) {
      STOKE_RETURN_IF_ERROR(internal::ReadStoredSample(d, order[r], &stored[r - base]));
    }
    if (rewrite) {
      std::atomic<uint64_t> next{0};
      auto work = [&] {
        for (uint64_t k = next++; k < end - base; k = next++) {
          was_rewritten[k] = internal::AddRestartMarkers(stored[k], &rewritten[k]).ok();
        }
      };
      std::vector<std::thread> pool;
      for (int t = 1; t < std::min<int64_t>(threads, static_cast<int64_t>(end - base)); ++t) {
        pool.emplace_back(work);
      }
      work();
      for (std::thread& t : pool) t.join();
    }
    for (uint64_t r = base; r < end; ++r) {
      const uint64_t k = r - base;
      const uint64_t i = order[r];  // the source sample of record r
      const SampleLocation loc = d.Locate(i);
      std::string key = loc.whole_file ? d.file_path(loc.file) : std::to_string(i);
      int64_t label = 0;
      std::span<const std::byte> record;
      if (images) {
        // The file as stored (or rewritten); its label without decoding it.
        std::optional<int64_t> known = d.StoredLabel(i);
        if (!known) {
          return InvalidArgumentError("Pack: " + d.Describe() +
                                      " does not give labels without decoding");
        }
        label = *known;
        record = stored[k];
        if (rewrite && was_rewritten[k]) {
          record = rewritten[k];
          ++result.jpegs_rewritten;
        }
      } else {
        Status s = d.Decode(i, stored[k], sample, &label);
        if (!s.ok()) return s.WithContext("Pack: sample " + std::to_string(i));
        record = sample;
      }
      if (!shard) {
        shard = std::make_unique<ShardWriter>(ShardName(dst_dir, result.shards), meta, flags,
                                              o.shuffle_seed);
        STOKE_RETURN_IF_ERROR(shard->Open());
      }
      STOKE_RETURN_IF_ERROR(shard->Add(key, label, record));
      ++result.records;
      if (shard->bytes() >= o.shard_bytes || r + 1 == d.size()) {
        STOKE_RETURN_IF_ERROR(shard->Finish());
        result.bytes += shard->bytes();
        ++result.shards;
        shard.reset();
      }
      if (o.progress) o.progress(result.records, d.size());
    }
  }
  return result;
}

}  // namespace stoke

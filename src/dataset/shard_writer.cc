// Pack: a dataset, in index order or a seeded permutation of it, into shards
// (dataset/shard_format.h), each written under a temporary name, synced, and renamed into place
// complete.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "dataset/crc32.h"
#include "dataset/shard_format.h"
#include "dataset/shard_io.h"
#include "dataset/stored.h"
#include "decode/crop.h"
#include "decode/jpeg_decoder.h"
#include "decode/jpeg_resample.h"
#include "decode/jpeg_restart.h"
#include "io/remote_file.h"
#include "stoke/shards.h"

namespace stoke {
namespace {

using internal::IndexEntry;
using internal::ShardFooter;
using internal::ShardMeta;

class ShardWriter {
 public:
  ShardWriter(const internal::ShardIo& io, std::string path, const ShardMeta& meta, uint64_t flags,
              uint64_t shuffle_seed)
      : io_(io),
        final_path_(std::move(path)),
        tmp_path_(final_path_ + ".tmp"),
        meta_(meta),
        flags_(flags),
        shuffle_seed_(shuffle_seed) {}
  ~ShardWriter() {
    if (fd_ >= 0) {
      io_.close(fd_);
      ::unlink(tmp_path_.c_str());  // never completed: leave nothing behind
    }
  }

  Status Open() {
    fd_ = io_.open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) return ErrnoToStatus(errno, tmp_path_ + ": create");
    return Status::Ok();
  }

  Status Add(const std::string& key, int64_t label, std::span<const std::byte> bytes) {
    STOKE_RETURN_IF_ERROR(Write(bytes.data(), bytes.size()));
    entries_.push_back({offset_ - bytes.size(), bytes.size(), label, keys_.size(),
                        static_cast<uint32_t>(key.size()),
                        internal::Crc32(bytes.data(), bytes.size())});
    keys_ += key;
    return Status::Ok();
  }

  uint64_t bytes() const { return offset_; }
  const std::string& path() const { return final_path_; }
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
    uint32_t crc = internal::Crc32(keys_.data(), keys_.size());
    crc = internal::Crc32(entries_.data(), entries_.size() * sizeof(IndexEntry), crc);
    footer.tail_crc = internal::Crc32(&meta_, sizeof meta_, crc);
    STOKE_RETURN_IF_ERROR(Write(keys_.data(), keys_.size()));
    STOKE_RETURN_IF_ERROR(Write(entries_.data(), entries_.size() * sizeof(IndexEntry)));
    STOKE_RETURN_IF_ERROR(Write(&meta_, sizeof meta_));
    STOKE_RETURN_IF_ERROR(Write(&footer, sizeof footer));
    if (io_.fsync(fd_) != 0) return ErrnoToStatus(errno, tmp_path_ + ": fsync");
    if (io_.close(fd_) != 0) {
      const int e = errno;
      fd_ = -1;
      ::unlink(tmp_path_.c_str());
      return ErrnoToStatus(e, tmp_path_ + ": close");
    }
    fd_ = -1;
    if (io_.rename(tmp_path_.c_str(), final_path_.c_str()) != 0) {
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
      const ssize_t w = io_.write(fd_, bytes, n);
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

  const internal::ShardIo& io_;
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
// splitmix64 (SampleRandom), so the same seed gives the same shards on every
// platform.
std::vector<uint64_t> RecordOrder(uint64_t n, bool shuffle, uint64_t seed) {
  std::vector<uint64_t> order(n);
  for (uint64_t i = 0; i < n; ++i) order[i] = i;
  if (!shuffle) return order;
  internal::SampleRandom random(seed ^ 0x5851f42d4c957f2dull);
  for (uint64_t i = n; i > 1; --i) {
    // Modulo bias is below 2^-30 for fewer than 2^34 records.
    const uint64_t j = random.Next() % i;
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

std::string ShardName(const std::string& dir, uint64_t n) {
  char name[32];
  std::snprintf(name, sizeof name, "/shard-%06llu", static_cast<unsigned long long>(n));
  return dir + name + internal::kShardSuffix;
}

Status CheckPackOptions(const PackOptions& o) {
  if (o.shard_bytes < 4096 || o.shard_bytes > (uint64_t{1} << 40)) {
    return InvalidArgumentError("PackOptions.shard_bytes: " + std::to_string(o.shard_bytes) +
                                " is outside [4096, 2^40]");
  }
  if (o.threads < 0 || o.threads > 4096) {
    return InvalidArgumentError("PackOptions.threads: " + std::to_string(o.threads) +
                                " is outside [0, 4096]");
  }
  return Status::Ok();
}

ShardMeta MetaOf(const Dataset& d, bool store_pixels) {
  ShardMeta meta{};
  meta.payload = static_cast<uint32_t>(d.decode_is_compute_bound() ? internal::ShardPayload::kJpeg
                                                                   : internal::ShardPayload::kRaw);
  if (d.decode_is_compute_bound() && store_pixels) {
    meta.payload = static_cast<uint32_t>(internal::ShardPayload::kPixels);
  }
  const SampleSpec& spec = d.spec();
  meta.dtype = static_cast<uint32_t>(spec.dtype);
  meta.rank = static_cast<uint32_t>(spec.shape.size());
  meta.channels_last = spec.channels_last ? 1 : 0;
  for (size_t i = 0; i < spec.shape.size() && i < 8; ++i) meta.dims[i] = spec.shape[i];
  return meta;
}

// Records go in chunks: read in order on the packing thread, JPEGs rewritten on
// the pack's threads (a few ms each), then written in order.
struct Chunk {
  static constexpr uint64_t kRecords = 256;
  std::vector<std::vector<std::byte>> stored{kRecords}, rewritten{kRecords};
  std::vector<char> was_rewritten = std::vector<char>(kRecords);
  std::vector<char> was_resampled = std::vector<char>(kRecords);
  std::vector<std::byte> sample;  // a decoded raw sample
  uint64_t count = 0;

  // The stored records of sources order[base, base + count).
  Status Read(const Dataset& d, const std::vector<uint64_t>& order, uint64_t base) {
    count = std::min<uint64_t>(kRecords, d.size() - base);
    for (uint64_t k = 0; k < count; ++k) {
      STOKE_RETURN_IF_ERROR(internal::ReadStoredSample(d, order[base + k], &stored[k]));
    }
    return Status::Ok();
  }

  // Adds restart markers to every JPEG that takes them, on `threads` threads;
  // with a resize, first resamples those larger than it asks.
  Status Rewrite(int threads, const PackOptions& o) {
    std::atomic<uint64_t> next{0};
    std::vector<Status> failed(count);
    auto work = [&] {
      internal::JpegDecoder decoder;
      internal::ResampleJpegOptions resample;
      resample.side = o.resize == PackOptions::Resize::kLongSide
                          ? internal::ResampleJpegOptions::Side::kLong
                          : internal::ResampleJpegOptions::Side::kShort;
      resample.pixels = o.resize_pixels;
      resample.quality = o.resize_quality;
      resample.restart_markers = o.jpeg_restart_markers;
      for (uint64_t k = next++; k < count; k = next++) {
        was_resampled[k] = false;
        if (o.store_pixels) {
          internal::ResampleJpegOptions pixels = resample;
          if (o.resize == PackOptions::Resize::kNone) pixels.pixels = 0;
          bool resampled = false;
          failed[k] =
              internal::DecodePixelRecord(stored[k], pixels, &decoder, &rewritten[k], &resampled);
          was_resampled[k] = resampled;
          was_rewritten[k] = failed[k].ok();
          continue;
        }
        if (o.resize != PackOptions::Resize::kNone) {
          StatusOr<bool> resampled =
              internal::ResampleJpeg(stored[k], resample, &decoder, &rewritten[k]);
          if (!resampled.ok()) {
            failed[k] = resampled.status();
            continue;
          }
          was_resampled[k] = *resampled;
          was_rewritten[k] = *resampled;
          if (*resampled) continue;
        }
        was_rewritten[k] =
            o.jpeg_restart_markers && internal::AddRestartMarkers(stored[k], &rewritten[k]).ok();
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < std::min<int64_t>(threads, static_cast<int64_t>(count)); ++t) {
      pool.emplace_back(work);
    }
    work();
    for (std::thread& t : pool) t.join();
    for (Status& s : failed) STOKE_RETURN_IF_ERROR(std::move(s));
    return Status::Ok();
  }

  // Record k's bytes and label, for source sample i: an image file as stored
  // (or rewritten), its label without decoding it; a raw sample decoded.
  Status Record(const Dataset& d, uint64_t k, uint64_t i, bool rewrite,
                std::span<const std::byte>* record, int64_t* label, bool* rewrote) {
    *rewrote = false;
    if (!d.decode_is_compute_bound()) {
      Status s = d.Decode(i, stored[k], sample, label);
      if (!s.ok()) return s.WithContext("Pack: sample " + std::to_string(i));
      *record = sample;
      return Status::Ok();
    }
    std::optional<int64_t> known = d.StoredLabel(i);
    if (!known) {
      return InvalidArgumentError("Pack: " + d.Describe() +
                                  " does not give labels without decoding");
    }
    *label = *known;
    *rewrote = rewrite && was_rewritten[k];
    *record = *rewrote ? std::span<const std::byte>(rewritten[k]) : stored[k];
    return Status::Ok();
  }
};

// A shard written in place: its path and size, for the manifest.
struct WrittenShard {
  std::string path;
  uint64_t bytes = 0;
};

// Writes every record through `io`; the shards completed so far are added to
// *written as they are renamed into place, and handed to `done` (which may
// move them elsewhere: an upload).
Status PackRecords(const internal::ShardIo& io, const Dataset& d, const std::string& dst_dir,
                   const PackOptions& o, PackResult* result, std::vector<WrittenShard>* written,
                   const std::function<Status(const WrittenShard&)>& done) {
  ShardMeta meta = MetaOf(d, o.store_pixels);
  const bool resize = o.resize != PackOptions::Resize::kNone;
  if (resize) {
    if (!d.decode_is_compute_bound()) {
      return InvalidArgumentError("Pack: resize: " + d.Describe() +
                                  " holds no JPEGs to resample (only images are resized)");
    }
    if (o.resize_pixels < 1 || o.resize_pixels > 65535) {
      return InvalidArgumentError("Pack: resize_pixels " + std::to_string(o.resize_pixels) +
                                  " is outside [1, 65535]");
    }
    if (o.resize_quality < 1 || o.resize_quality > 100) {
      return InvalidArgumentError("Pack: resize_quality " + std::to_string(o.resize_quality) +
                                  " is outside [1, 100]");
    }
    meta.dims[internal::kResizeModeDim] = static_cast<int64_t>(o.resize);
    meta.dims[internal::kResizePixelsDim] = o.resize_pixels;
    meta.dims[internal::kResizeQualityDim] = o.resize_quality;
  }
  if (o.store_pixels && !d.decode_is_compute_bound()) {
    return InvalidArgumentError("Pack: store_pixels: " + d.Describe() +
                                " holds no JPEGs to store decoded (its samples are stored as "
                                "they are delivered already)");
  }
  const bool rewrite =
      d.decode_is_compute_bound() && (o.jpeg_restart_markers || resize || o.store_pixels);
  const int threads = o.threads > 0
                          ? o.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<uint64_t> order = RecordOrder(d.size(), o.shuffle_records, o.shuffle_seed);
  const uint64_t flags = o.shuffle_records ? internal::kRecordsShuffled : 0;
  std::unique_ptr<ShardWriter> shard;
  Chunk chunk;
  chunk.sample.resize(d.spec().bytes());
  for (uint64_t base = 0; base < d.size(); base += Chunk::kRecords) {
    STOKE_RETURN_IF_ERROR(chunk.Read(d, order, base));
    if (rewrite) {
      Status rewritten = chunk.Rewrite(threads, o);
      if (!rewritten.ok())
        return rewritten.WithContext("Pack: rewriting the images of " + d.Describe());
    }
    for (uint64_t k = 0; k < chunk.count; ++k) {
      const uint64_t i = order[base + k];  // the source sample of record base + k
      const SampleLocation loc = d.Locate(i);
      std::string key = loc.whole_file ? d.file_path(loc.file) : std::to_string(i);
      std::span<const std::byte> record;
      int64_t label = 0;
      bool rewrote = false;
      STOKE_RETURN_IF_ERROR(chunk.Record(d, k, i, rewrite, &record, &label, &rewrote));
      if (rewrote) ++result->jpegs_rewritten;
      if (rewrote && chunk.was_resampled[k]) ++result->jpegs_resampled;
      if (!shard) {
        shard = std::make_unique<ShardWriter>(io, ShardName(dst_dir, result->shards), meta, flags,
                                              o.shuffle_seed);
        STOKE_RETURN_IF_ERROR(shard->Open());
      }
      STOKE_RETURN_IF_ERROR(shard->Add(key, label, record));
      ++result->records;
      if (shard->bytes() >= o.shard_bytes || result->records == d.size()) {
        Status finished = shard->Finish();
        if (finished.ok() || std::filesystem::exists(shard->path())) {
          written->push_back({shard->path(), shard->bytes()});  // in place, maybe not synced
        }
        STOKE_RETURN_IF_ERROR(finished);
        STOKE_RETURN_IF_ERROR(done(written->back()));
        result->bytes += shard->bytes();
        ++result->shards;
        shard.reset();
      }
      if (o.progress) o.progress(result->records, d.size());
    }
  }
  return Status::Ok();
}

// Writes the manifest through `io` as the shards are written: a temporary
// name, synced, renamed into place.
Status WriteManifest(const internal::ShardIo& io, const std::string& dir, const std::string& text) {
  const std::string path = dir + "/" + internal::kManifestName;
  const std::string tmp = path + ".tmp";
  const int fd = io.open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoToStatus(errno, tmp + ": open");
  size_t at = 0;
  while (at < text.size()) {
    const ssize_t w = io.write(fd, text.data() + at, text.size() - at);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      const int e = errno;
      io.close(fd);
      ::unlink(tmp.c_str());
      return ErrnoToStatus(e, tmp + ": write");
    }
    at += static_cast<size_t>(w);
  }
  if (io.fsync(fd) != 0 || io.close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return ErrnoToStatus(e, tmp + ": fsync/close");
  }
  if (io.rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return ErrnoToStatus(e, path + ": rename");
  }
  return Status::Ok();
}

}  // namespace

namespace internal {

const ShardIo& SystemShardIo() {
  static const ShardIo io{
      [](const char* path, int flags, mode_t mode) { return ::open(path, flags, mode); },
      [](int fd, const void* data, size_t bytes) { return ::write(fd, data, bytes); },
      [](int fd) { return ::fsync(fd); }, [](int fd) { return ::close(fd); },
      [](const char* from, const char* to) { return ::rename(from, to); }};
  return io;
}

StatusOr<PackResult> PackWith(const ShardIo& io, const Dataset& d, const std::string& dst_dir,
                              const PackOptions& o) {
  STOKE_RETURN_IF_ERROR(CheckPackOptions(o));
  const bool remote = internal::IsRemotePath(dst_dir);
  if (remote && !dst_dir.starts_with("s3://")) {
    return InvalidArgumentError(dst_dir +
                                ": stoke pack writes to a folder or to s3://BUCKET/PREFIX "
                                "(HTTP has no upload)");
  }
  std::error_code ec;
  // Remote: each shard is written to a staging folder, uploaded once complete,
  // and removed there.
  std::string folder = dst_dir;
  std::string remote_dir = dst_dir;
  while (remote_dir.ends_with("/")) remote_dir.pop_back();
  if (remote) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "stoke-pack-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return ErrnoToStatus(errno, tmpl + ": create a staging folder for " + dst_dir);
    }
    folder = tmpl;
  } else {
    std::filesystem::create_directories(dst_dir, ec);
    if (ec) return ErrnoToStatus(ec.value(), dst_dir + ": create the folder");
  }
  using internal::DeleteRemote;
  using internal::kManifestHeader;
  using internal::kManifestName;
  using internal::PutRemote;
  using internal::UploadFile;
  PackResult result;
  std::vector<WrittenShard> written;
  std::vector<std::string> uploaded;
  std::string manifest = std::string(kManifestHeader) + "\n";
  auto done = [&](const WrittenShard& shard) -> Status {
    const std::string name = std::filesystem::path(shard.path).filename().string();
    manifest += name + " " + std::to_string(shard.bytes) + "\n";
    if (!remote) return Status::Ok();
    const std::string target = remote_dir + "/" + name;
    Status s = UploadFile(shard.path, target);
    std::filesystem::remove(shard.path, ec);
    if (s.ok()) uploaded.push_back(target);
    return s;
  };
  Status s = PackRecords(io, d, folder, o, &result, &written, done);
  // The manifest last: a folder without one is a pack that did not complete.
  if (s.ok() && remote) {
    s = PutRemote(remote_dir + "/" + kManifestName,
                  {reinterpret_cast<const std::byte*>(manifest.data()), manifest.size()});
  } else if (s.ok()) {
    s = WriteManifest(io, dst_dir, manifest);
  }
  if (remote) std::filesystem::remove_all(folder, ec);
  if (!s.ok()) {
    // A failed pack leaves no shard behind: the ones it completed would read as
    // a valid, smaller dataset. (The one being written removes itself.)
    for (const WrittenShard& shard : written) std::filesystem::remove(shard.path, ec);
    for (const std::string& path : uploaded) DeleteRemote(path).IgnoreError();
    return s;
  }
  return result;
}

}  // namespace internal

StatusOr<PackResult> Pack(const Dataset& d, const std::string& dst_dir, const PackOptions& o) {
  return internal::PackWith(internal::SystemShardIo(), d, dst_dir, o);
}

}  // namespace stoke

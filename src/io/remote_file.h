// Remote objects as files: a FileSystem whose paths are s3://bucket/key and
// http(s):// URLs, read with ranged GETs through the process's HttpClient.
// Listing a folder of shards: the manifest stoke pack writes
// (stoke-manifest.txt: its shards and their sizes, written last), else an S3
// listing (tars) or a brace pattern.
//
// Thread safety: as FileSystem and RandomAccessFile (any thread).
//
//   FileSystem* fs = RemoteFileSystem();
//   auto file = fs->Open("s3://bucket/train/shard-000000.stk", {});
#ifndef STOKE_SRC_IO_REMOTE_FILE_H_
#define STOKE_SRC_IO_REMOTE_FILE_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "io/http_client.h"
#include "io/object_store.h"
#include "stoke/file_system.h"

namespace stoke::internal {

// The manifest's name in a folder of shards, and its first line.
inline constexpr char kManifestName[] = "stoke-manifest.txt";
inline constexpr char kManifestHeader[] = "stoke-manifest 1";

class RemoteFile final : public RandomAccessFile {
 public:
  RemoteFile(HttpClient* client, std::shared_ptr<const S3Settings> s3, std::string name,
             std::string url, uint64_t size)
      : client_(client),
        s3_(std::move(s3)),
        name_(std::move(name)),
        url_(std::move(url)),
        size_(size) {}

  // One ranged GET of the bytes there are (fewer than asked only at the end).
  StatusOr<size_t> ReadAt(uint64_t offset, Span<std::byte> dst) override;
  StatusOr<uint64_t> Size() override { return size_; }
  const std::string& name() const override { return name_; }
  bool short_read_means_eof() const override { return true; }

  // As ReadAt, into `dst` from `offset`; *received is what landed, *retries
  // adds the attempts after the first; cancels the request once *cancelled.
  Status Read(uint64_t offset, std::span<std::byte> dst, const std::atomic<bool>* cancelled,
              uint64_t* received, int* retries);

  const std::string& url() const { return url_; }
  const HttpSigning* signing() const { return &s3_->signing; }
  HttpClient* client() const { return client_; }

 private:
  HttpClient* const client_;
  const std::shared_ptr<const S3Settings> s3_;
  const std::string name_;
  const std::string url_;
  const uint64_t size_;
};

// The file system for s3:// and http(s):// paths. Never null; lives forever.
// Open asks the object's size (HEAD) unless a listing or manifest gave it:
// NotFound, or InvalidArgument (403: credentials) naming the URL.
FileSystem* RemoteFileSystem();

// The objects a remote dataset location names, as RemoteFileSystem paths:
// a brace pattern's names; an object ending in `extension`; an s3 glob
// ("s3://b/train/shard-*.tar"); or a folder: the names its manifest lists,
// else (S3 only, when `listing_allowed`: not for stoke's own shards, whose
// manifest says the pack completed) the objects under it ending in
// `extension`. NotFound naming the location and what to do when nothing is
// found.
StatusOr<std::vector<std::string>> ListRemoteFileSet(const std::string& location,
                                                     const std::string& extension,
                                                     bool listing_allowed);

// Every object under the s3 folder `location` (its key starts with the
// folder's key and a '/'), as s3:// paths with their sizes, in key order; the
// sizes are remembered, so opening them asks nothing. InvalidArgument for an
// http(s) location (HTTP has no listing); the listing's error otherwise.
StatusOr<std::vector<ObjectEntry>> ListRemoteFolder(const std::string& location);

// Writes (PUT) `bytes` to a remote path, as one request. The client's error
// otherwise.
Status PutRemote(const std::string& path, std::span<const std::byte> bytes);
// Uploads local file `local` to s3 path `remote`: one PUT up to
// kMultipartBytes, else a multipart upload in parts of that size (aborted on
// failure). Reads one part into memory at a time. The file's or the store's
// error, naming both.
inline constexpr uint64_t kMultipartBytes = uint64_t{64} << 20;
Status UploadFile(const std::string& local, const std::string& remote);
// Removes a remote object (DELETE); a missing one is no error.
Status DeleteRemote(const std::string& path);

}  // namespace stoke::internal

#endif  // STOKE_SRC_IO_REMOTE_FILE_H_

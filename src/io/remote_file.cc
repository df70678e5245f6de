#include "io/remote_file.h"

#include <fnmatch.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <map>

#include "util/mutex.h"

namespace stoke::internal {
namespace {

class RemoteFs final : public FileSystem {
 public:
  StatusOr<std::unique_ptr<RandomAccessFile>> Open(const std::string& path,
                                                   const FileOptions& options) override {
    if (options.direct) {
      return InvalidArgumentError(path + ": direct I/O (O_DIRECT) applies to local files only");
    }
    STOKE_ASSIGN_OR_RETURN(const RemoteLocation location, ParseRemote(path));
    STOKE_ASSIGN_OR_RETURN(std::shared_ptr<const S3Settings> s3, Settings());
    std::string url = UrlOf(*s3, location);
    int64_t size = KnownSize(path);
    if (size < 0) {
      HttpTransfer head;
      head.method = HttpTransfer::Method::kHead;
      head.url = url;
      head.signing = &s3->signing;
      STOKE_RETURN_IF_ERROR(SharedHttpClient()->Fetch(&head).WithContext(path));
      if (head.content_length < 0) {
        return UnavailableError(path + ": HEAD " + url + " gave no Content-Length");
      }
      size = head.content_length;
    }
    return std::unique_ptr<RandomAccessFile>(new RemoteFile(
        SharedHttpClient(), std::move(s3), path, std::move(url), static_cast<uint64_t>(size)));
  }

  // The settings as the environment has them now (a Python user may set
  // AWS_ENDPOINT_URL between two opens); read again only when a variable
  // they come from changed, so that a file opened per sample (an ImageFolder
  // in S3) does not read ~/.aws/* each time.
  static StatusOr<std::shared_ptr<const S3Settings>> Settings() {
    std::string fingerprint;
    for (const char* name :
         {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
          "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE",
          "AWS_NO_SIGN_REQUEST", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "HOME"}) {
      const char* v = std::getenv(name);
      fingerprint += v == nullptr ? std::string("\x01") : std::string(v) + '\x00';
    }
    static Mutex mu;
    static std::string* cached_fingerprint = new std::string;
    static std::shared_ptr<const S3Settings>* cached = new std::shared_ptr<const S3Settings>;
    MutexLock lock(&mu);
    if (*cached && *cached_fingerprint == fingerprint) return *cached;
    STOKE_ASSIGN_OR_RETURN(S3Settings s, S3Settings::FromEnvironment());
    *cached = std::make_shared<const S3Settings>(std::move(s));
    *cached_fingerprint = fingerprint;
    return *cached;
  }

  void RememberSize(const std::string& path, uint64_t size) {
    MutexLock lock(&mu_);
    sizes_[path] = size;
  }

 private:
  int64_t KnownSize(const std::string& path) {
    MutexLock lock(&mu_);
    auto it = sizes_.find(path);
    return it == sizes_.end() ? -1 : static_cast<int64_t>(it->second);
  }

  Mutex mu_;
  // Sizes a listing or manifest gave, so that opening its objects asks nothing.
  std::map<std::string, uint64_t> sizes_ STOKE_GUARDED_BY(mu_);
};

RemoteFs* Shared() {
  static RemoteFs* const fs = new RemoteFs;
  return fs;
}

// The manifest's "NAME BYTES" lines as folder/NAME paths, sizes remembered.
StatusOr<std::vector<std::string>> ParseManifest(std::string_view text, const std::string& folder,
                                                 const std::string& manifest) {
  std::vector<std::string> paths;
  size_t start = 0;
  int number = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (++number == 1) {
      if (line != kManifestHeader) {
        return DataLossError(manifest + ": not a stoke manifest (its first line is not \"" +
                             std::string(kManifestHeader) + "\")");
      }
      continue;
    }
    if (line.empty()) continue;
    const size_t space = line.rfind(' ');
    uint64_t size = 0;
    const std::string_view name = line.substr(0, space);
    const std::string_view digits =
        space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), size);
    if (space == std::string_view::npos || name.empty() || name.find('/') != name.npos ||
        digits.empty() || parsed.ptr != digits.data() + digits.size()) {
      return DataLossError(manifest + ":" + std::to_string(number) + ": not \"NAME BYTES\"");
    }
    paths.push_back(folder + "/" + std::string(name));
    Shared()->RememberSize(paths.back(), size);
  }
  if (number == 0) return DataLossError(manifest + ": empty");
  return paths;
}

}  // namespace

StatusOr<size_t> RemoteFile::ReadAt(uint64_t offset, Span<std::byte> dst) {
  uint64_t received = 0;
  int retries = 0;
  STOKE_RETURN_IF_ERROR(
      Read(offset, std::span(dst.data(), dst.size()), nullptr, &received, &retries));
  return static_cast<size_t>(received);
}

Status RemoteFile::Read(uint64_t offset, std::span<std::byte> dst,
                        const std::atomic<bool>* cancelled, uint64_t* received, int* retries) {
  *received = 0;
  if (offset >= size_ || dst.empty()) return Status::Ok();
  HttpTransfer t;
  t.url = url_;
  t.signing = &s3_->signing;
  t.offset = offset;
  t.dst = dst.subspan(0, static_cast<size_t>(std::min<uint64_t>(dst.size(), size_ - offset)));
  Status s = client_->Fetch(&t, cancelled);
  *received = t.received;
  *retries += t.retries;
  return s.ok() ? s : s.WithContext(name_);
}

FileSystem* RemoteFileSystem() { return Shared(); }

StatusOr<std::vector<std::string>> ListRemoteFileSet(const std::string& location,
                                                     const std::string& extension,
                                                     bool listing_allowed) {
  STOKE_ASSIGN_OR_RETURN(const RemoteLocation parsed, ParseRemote(location));
  if (location.find('{') != std::string::npos) return ExpandBraces(location);
  STOKE_ASSIGN_OR_RETURN(std::shared_ptr<const S3Settings> s3, RemoteFs::Settings());
  HttpClient* client = SharedHttpClient();
  const bool glob = parsed.s3 && parsed.key.find_first_of("*?[") != std::string::npos;
  if (glob) {
    const std::string prefix = parsed.key.substr(0, parsed.key.find_first_of("*?["));
    STOKE_ASSIGN_OR_RETURN(auto entries, ListObjects(client, *s3, parsed.bucket, prefix));
    std::vector<std::string> paths;
    for (const ObjectEntry& e : entries) {
      if (fnmatch(parsed.key.c_str(), e.key.c_str(), FNM_PATHNAME) != 0) continue;
      paths.push_back("s3://" + parsed.bucket + "/" + e.key);
      Shared()->RememberSize(paths.back(), e.size);
    }
    if (paths.empty()) return NotFoundError(location + ": no object matches");
    return paths;
  }
  if (location.ends_with(extension)) return std::vector<std::string>{location};
  std::string folder = location;
  while (folder.ends_with("/")) folder.pop_back();
  const std::string manifest = folder + "/" + kManifestName;
  STOKE_ASSIGN_OR_RETURN(const RemoteLocation manifest_location, ParseRemote(manifest));
  std::vector<std::byte> body;
  HttpTransfer get;
  get.url = UrlOf(*s3, manifest_location);
  get.signing = &s3->signing;
  get.body = &body;
  get.max_body = uint64_t{256} << 20;
  const Status fetched = client->Fetch(&get);
  if (fetched.ok()) {
    return ParseManifest({reinterpret_cast<const char*>(body.data()), body.size()}, folder,
                         manifest);
  }
  if (fetched.code() != StatusCode::kNotFound) return fetched.WithContext(manifest);
  if (!parsed.s3 || !listing_allowed) {
    return NotFoundError(location + ": no " + kManifestName +
                         (parsed.s3
                              ? " (stoke pack writes it last: without it the pack did not complete)"
                              : " (HTTP has no listing)") +
                         "; name the files with brace notation, e.g. " + folder +
                         "/shard-{000000..000009}" + extension);
  }
  const std::string prefix =
      parsed.key.empty() || parsed.key.ends_with("/") ? parsed.key : parsed.key + "/";
  STOKE_ASSIGN_OR_RETURN(auto entries, ListObjects(client, *s3, parsed.bucket, prefix));
  std::vector<std::string> paths;
  for (const ObjectEntry& e : entries) {
    if (!e.key.ends_with(extension) || e.key.find('/', prefix.size()) != std::string::npos)
      continue;
    paths.push_back("s3://" + parsed.bucket + "/" + e.key);
    Shared()->RememberSize(paths.back(), e.size);
  }
  if (paths.empty()) return NotFoundError(location + ": no *" + extension + " objects");
  return paths;
}

StatusOr<std::vector<ObjectEntry>> ListRemoteFolder(const std::string& location) {
  STOKE_ASSIGN_OR_RETURN(const RemoteLocation parsed, ParseRemote(location));
  if (!parsed.s3) {
    return InvalidArgumentError(location +
                                ": HTTP has no listing; pack the images into shards (stoke pack) "
                                "or name them in a list file");
  }
  STOKE_ASSIGN_OR_RETURN(std::shared_ptr<const S3Settings> s3, RemoteFs::Settings());
  std::string prefix = parsed.key;
  if (!prefix.empty() && !prefix.ends_with("/")) prefix += "/";
  STOKE_ASSIGN_OR_RETURN(auto entries, ListObjects(SharedHttpClient(), *s3, parsed.bucket, prefix));
  for (ObjectEntry& e : entries) {
    e.key = "s3://" + parsed.bucket + "/" + e.key;
    Shared()->RememberSize(e.key, e.size);
  }
  return entries;
}

namespace {

// One request to a remote path, signed as the environment says; its body
// (an acknowledgement or an error) read and dropped.
Status RequestRemote(HttpTransfer::Method method, const std::string& path,
                     std::span<const std::byte> upload) {
  STOKE_ASSIGN_OR_RETURN(const RemoteLocation location, ParseRemote(path));
  STOKE_ASSIGN_OR_RETURN(std::shared_ptr<const S3Settings> s3, RemoteFs::Settings());
  HttpTransfer t;
  t.method = method;
  t.url = UrlOf(*s3, location);
  t.signing = &s3->signing;
  t.upload = upload;
  std::vector<std::byte> ignored;
  t.body = &ignored;
  return SharedHttpClient()->Fetch(&t);
}

}  // namespace

Status PutRemote(const std::string& path, std::span<const std::byte> bytes) {
  STOKE_RETURN_IF_ERROR(RequestRemote(HttpTransfer::Method::kPut, path, bytes).WithContext(path));
  Shared()->RememberSize(path, bytes.size());
  return Status::Ok();
}

namespace {

// One request of a multipart upload; its response body in *body.
Status MultipartRequest(HttpTransfer::Method method, const std::string& url, const S3Settings& s3,
                        std::span<const std::byte> upload, std::vector<std::byte>* body,
                        std::string* etag) {
  HttpTransfer t;
  t.method = method;
  t.url = url;
  t.signing = &s3.signing;
  t.upload = upload;
  t.body = body;
  STOKE_RETURN_IF_ERROR(SharedHttpClient()->Fetch(&t));
  if (etag != nullptr) *etag = t.etag;
  return Status::Ok();
}

}  // namespace

Status UploadFile(const std::string& local, const std::string& remote) {
  std::ifstream in(local, std::ios::binary);
  if (!in) return NotFoundError(local + ": cannot open it to upload to " + remote);
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  std::vector<std::byte> part(static_cast<size_t>(std::min(size, kMultipartBytes)));
  auto read_part = [&](size_t n) -> Status {
    part.resize(n);
    if (!in.read(reinterpret_cast<char*>(part.data()), static_cast<std::streamsize>(n))) {
      return DataLossError(local + ": read failed while uploading it to " + remote);
    }
    return Status::Ok();
  };
  if (size <= kMultipartBytes) {
    STOKE_RETURN_IF_ERROR(read_part(static_cast<size_t>(size)));
    return PutRemote(remote, part).WithContext("uploading " + local);
  }
  STOKE_ASSIGN_OR_RETURN(const RemoteLocation location, ParseRemote(remote));
  STOKE_ASSIGN_OR_RETURN(std::shared_ptr<const S3Settings> s3, RemoteFs::Settings());
  const std::string url = UrlOf(*s3, location);
  std::vector<std::byte> body;
  STOKE_RETURN_IF_ERROR(
      MultipartRequest(HttpTransfer::Method::kPost, url + "?uploads=", *s3, {}, &body, nullptr)
          .WithContext("starting a multipart upload of " + local));
  const std::string xml(reinterpret_cast<const char*>(body.data()), body.size());
  const size_t a = xml.find("<UploadId>");
  const size_t b = xml.find("</UploadId>");
  if (a == std::string::npos || b == std::string::npos) {
    return UnavailableError(remote +
                            ": the store's answer to CreateMultipartUpload has no UploadId");
  }
  const std::string id = xml.substr(a + 10, b - a - 10);
  std::string complete = "<CompleteMultipartUpload>";
  Status s;
  for (uint64_t at = 0, number = 1; at < size && s.ok(); at += kMultipartBytes, ++number) {
    s = read_part(static_cast<size_t>(std::min(kMultipartBytes, size - at)));
    std::string etag;
    if (s.ok()) {
      s = MultipartRequest(HttpTransfer::Method::kPut,
                           url + "?partNumber=" + std::to_string(number) + "&uploadId=" + id, *s3,
                           part, &body, &etag);
    }
    complete += "<Part><PartNumber>" + std::to_string(number) + "</PartNumber><ETag>" + etag +
                "</ETag></Part>";
  }
  complete += "</CompleteMultipartUpload>";
  if (s.ok()) {
    s = MultipartRequest(HttpTransfer::Method::kPost, url + "?uploadId=" + id, *s3,
                         {reinterpret_cast<const std::byte*>(complete.data()), complete.size()},
                         &body, nullptr);
  }
  if (!s.ok()) {
    MultipartRequest(HttpTransfer::Method::kDelete, url + "?uploadId=" + id, *s3, {}, &body,
                     nullptr)
        .IgnoreError();
    return s.WithContext("uploading " + local + " to " + remote + " in parts");
  }
  return Status::Ok();
}

Status DeleteRemote(const std::string& path) {
  const Status s = RequestRemote(HttpTransfer::Method::kDelete, path, {});
  if (s.code() == StatusCode::kNotFound) return Status::Ok();
  return s.ok() ? s : s.WithContext(path);
}

}  // namespace stoke::internal

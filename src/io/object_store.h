// Where remote data lives: s3://bucket/key and http(s)://host/path locations,
// the S3 settings every AWS tool takes (environment, ~/.aws/credentials and
// ~/.aws/config), the HTTP URL of an object, listings (S3's ListObjectsV2,
// paged through continuation tokens) and WebDataset's brace notation.
//
// Thread safety: pure functions, but ListObjects, which blocks on the client.
//
//   auto store = S3Settings::FromEnvironment();
//   auto url = ObjectUrl(*store, *ParseRemote("s3://bucket/train/shard-000000.stk"));
#ifndef STOKE_SRC_IO_OBJECT_STORE_H_
#define STOKE_SRC_IO_OBJECT_STORE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "io/http_client.h"
#include "stoke/status.h"

namespace stoke::internal {

// Whether `path` names remote data: it starts with s3://, http:// or https://.
bool IsRemotePath(std::string_view path);

struct RemoteLocation {
  bool s3 = false;
  std::string bucket;  // s3 only
  std::string key;     // s3: the key (or prefix); http(s): empty
  std::string url;     // http(s): the URL as given; s3: empty (ObjectUrl makes it)
};

// InvalidArgument naming `path` for a malformed location (no bucket, a scheme
// other than s3/http/https).
StatusOr<RemoteLocation> ParseRemote(std::string_view path);

// The S3 settings, as the AWS CLI and SDKs read them.
struct S3Settings {
  HttpSigning signing;   // sign = false: unsigned requests (public buckets)
  std::string endpoint;  // AWS_ENDPOINT_URL: path-style requests to it; empty: AWS
  std::string profile;   // for messages
  std::string source;    // where the credentials came from, for messages

  // From AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else
  // AWS_PROFILE's (default "default") section of AWS_SHARED_CREDENTIALS_FILE
  // (default ~/.aws/credentials); the region from AWS_REGION,
  // AWS_DEFAULT_REGION, then AWS_CONFIG_FILE's (~/.aws/config) "profile NAME"
  // section, default us-east-1; the endpoint from AWS_ENDPOINT_URL_S3 or
  // AWS_ENDPOINT_URL. No credentials, or AWS_NO_SIGN_REQUEST=true: unsigned.
  // InvalidArgument naming the file and line of a malformed credentials file,
  // or a key id without its secret.
  static StatusOr<S3Settings> FromEnvironment();
};

// An INI file's sections ("[default]", "[profile x]") and their key = value
// lines, keys lower-cased. InvalidArgument naming `name` and the line.
StatusOr<std::map<std::string, std::map<std::string, std::string>>> ParseIni(
    std::string_view text, const std::string& name);

// Percent-encodes a key for a URL path: everything but unreserved characters
// and '/'.
std::string EncodeKey(std::string_view key);

// The URL of s3 object `key` in `bucket`: {endpoint}/{bucket}/{key} with an
// endpoint (path-style, as S3-compatible servers want), else
// https://{bucket}.s3.{region}.amazonaws.com/{key}.
std::string ObjectUrl(const S3Settings& s3, const std::string& bucket, const std::string& key);

// The remote location's URL: ObjectUrl for s3, the URL itself for http(s).
std::string UrlOf(const S3Settings& s3, const RemoteLocation& location);

struct ObjectEntry {
  std::string key;
  uint64_t size = 0;
};

// Every object of `bucket` whose key starts with `prefix`, in key order,
// following continuation tokens (`page_keys` keys a page). The client's
// error, naming the listing's URL, otherwise.
StatusOr<std::vector<ObjectEntry>> ListObjects(HttpClient* client, const S3Settings& s3,
                                               const std::string& bucket, const std::string& prefix,
                                               int page_keys = 1000);

// WebDataset's brace notation: "shard-{000000..000003}.tar" gives four names,
// zero-padded as the first bound is; "{a,b}" gives each; several braces
// multiply. A path without braces is itself. InvalidArgument naming the
// pattern for an unclosed brace, a backwards range, more than 10^6 names or
// more than 256 MiB of them.
StatusOr<std::vector<std::string>> ExpandBraces(std::string_view pattern);

}  // namespace stoke::internal

#endif  // STOKE_SRC_IO_OBJECT_STORE_H_

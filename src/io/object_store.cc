#include "io/object_store.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace stoke::internal {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The file's text; empty when it does not exist.
std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string HomeFile(const char* env, const char* relative) {
  std::string path = Env(env);
  if (!path.empty()) return path;
  const std::string home = Env("HOME");
  return home.empty() ? std::string() : home + "/" + relative;
}

// Percent-encodes everything but unreserved characters (and '/' if kept).
std::string Encode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string XmlUnescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    static constexpr std::pair<std::string_view, char> kEntities[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    bool matched = false;
    for (const auto& [entity, c] : kEntities) {
      if (s.substr(i, entity.size()) == entity) {
        out += c;
        i += entity.size() - 1;
        matched = true;
        break;
      }
    }
    if (!matched) out += '&';
  }
  return out;
}

// The text between <tag> and </tag> from `from` on; npos-terminated search.
std::string_view Between(std::string_view s, std::string_view open, std::string_view close,
                         size_t* from) {
  const size_t a = s.find(open, *from);
  if (a == std::string_view::npos) return {};
  const size_t b = s.find(close, a + open.size());
  if (b == std::string_view::npos) return {};
  *from = b + close.size();
  return s.substr(a + open.size(), b - a - open.size());
}

}  // namespace

bool IsRemotePath(std::string_view path) {
  return path.starts_with("s3://") || path.starts_with("http://") || path.starts_with("https://");
}

StatusOr<RemoteLocation> ParseRemote(std::string_view path) {
  RemoteLocation loc;
  if (path.starts_with("s3://")) {
    std::string_view rest = path.substr(5);
    const size_t slash = rest.find('/');
    loc.s3 = true;
    loc.bucket = std::string(rest.substr(0, slash));
    loc.key = slash == std::string_view::npos ? std::string() : std::string(rest.substr(slash + 1));
    if (loc.bucket.empty()) {
      return InvalidArgumentError(std::string(path) + ": no bucket (s3://BUCKET/PREFIX)");
    }
    return loc;
  }
  if (path.starts_with("http://") || path.starts_with("https://")) {
    const size_t host = path.find("://") + 3;
    if (host >= path.size() || path[host] == '/') {
      return InvalidArgumentError(std::string(path) + ": no host");
    }
    loc.url = std::string(path);
    return loc;
  }
  return InvalidArgumentError(std::string(path) + ": not an s3://, http:// or https:// location");
}

StatusOr<std::map<std::string, std::map<std::string, std::string>>> ParseIni(
    std::string_view text, const std::string& name) {
  std::map<std::string, std::map<std::string, std::string>> sections;
  std::string section;
  int number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = Trim(text.substr(start, end - start));
    start = end + 1;
    ++number;
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') {
        return InvalidArgumentError(name + ":" + std::to_string(number) + ": unclosed section");
      }
      section = Trim(std::string_view(line).substr(1, line.size() - 2));
      sections[section];
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      return InvalidArgumentError(name + ":" + std::to_string(number) + ": not key = value");
    }
    if (section.empty()) {
      return InvalidArgumentError(name + ":" + std::to_string(number) +
                                  ": a setting outside any [section]");
    }
    sections[section][Lower(Trim(std::string_view(line).substr(0, eq)))] =
        Trim(std::string_view(line).substr(eq + 1));
  }
  return sections;
}

StatusOr<S3Settings> S3Settings::FromEnvironment() {
  S3Settings s;
  s.profile = Env("AWS_PROFILE");
  if (s.profile.empty()) s.profile = "default";
  s.endpoint = Env("AWS_ENDPOINT_URL_S3");
  if (s.endpoint.empty()) s.endpoint = Env("AWS_ENDPOINT_URL");
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  HttpSigning& g = s.signing;
  g.region = Env("AWS_REGION");
  if (g.region.empty()) g.region = Env("AWS_DEFAULT_REGION");
  const std::string config_path = HomeFile("AWS_CONFIG_FILE", ".aws/config");
  if (g.region.empty() && !config_path.empty()) {
    STOKE_ASSIGN_OR_RETURN(auto config, ParseIni(ReadText(config_path), config_path));
    const std::string section = s.profile == "default" ? "default" : "profile " + s.profile;
    if (auto it = config.find(section); it != config.end()) g.region = it->second["region"];
  }
  if (g.region.empty()) g.region = "us-east-1";
  if (Lower(Env("AWS_NO_SIGN_REQUEST")) == "true") {
    s.source = "AWS_NO_SIGN_REQUEST";
    return s;
  }
  g.access_key_id = Env("AWS_ACCESS_KEY_ID");
  g.secret_access_key = Env("AWS_SECRET_ACCESS_KEY");
  g.session_token = Env("AWS_SESSION_TOKEN");
  s.source = "the environment (AWS_ACCESS_KEY_ID)";
  if (g.access_key_id.empty()) {
    const std::string path = HomeFile("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
    if (!path.empty()) {
      STOKE_ASSIGN_OR_RETURN(auto credentials, ParseIni(ReadText(path), path));
      if (auto it = credentials.find(s.profile); it != credentials.end()) {
        g.access_key_id = it->second["aws_access_key_id"];
        g.secret_access_key = it->second["aws_secret_access_key"];
        g.session_token = it->second["aws_session_token"];
        s.source = path + " [" + s.profile + "]";
      }
    }
  }
  if (g.access_key_id.empty()) {
    s.source = "none found: unsigned requests";
    return s;
  }
  if (g.secret_access_key.empty()) {
    return InvalidArgumentError("S3 credentials from " + s.source + ": an access key id (" +
                                g.access_key_id + ") without its secret access key");
  }
  g.sign = true;
  return s;
}

std::string EncodeKey(std::string_view key) { return Encode(key, /*keep_slash=*/true); }

std::string ObjectUrl(const S3Settings& s3, const std::string& bucket, const std::string& key) {
  if (!s3.endpoint.empty()) return s3.endpoint + "/" + bucket + "/" + EncodeKey(key);
  return "https://" + bucket + ".s3." + s3.signing.region + ".amazonaws.com/" + EncodeKey(key);
}

std::string UrlOf(const S3Settings& s3, const RemoteLocation& location) {
  return location.s3 ? ObjectUrl(s3, location.bucket, location.key) : location.url;
}

StatusOr<std::vector<ObjectEntry>> ListObjects(HttpClient* client, const S3Settings& s3,
                                               const std::string& bucket, const std::string& prefix,
                                               int page_keys) {
  std::vector<ObjectEntry> entries;
  std::string token;
  std::vector<std::byte> body;
  for (;;) {
    // Query parameters in sorted order, as SigV4's canonical request has them.
    std::string query;
    if (!token.empty()) query += "continuation-token=" + Encode(token, false) + "&";
    query +=
        "list-type=2&max-keys=" + std::to_string(page_keys) + "&prefix=" + Encode(prefix, false);
    HttpTransfer t;
    t.url =
        (s3.endpoint.empty() ? "https://" + bucket + ".s3." + s3.signing.region + ".amazonaws.com/"
                             : s3.endpoint + "/" + bucket) +
        "?" + query;
    t.signing = &s3.signing;
    t.body = &body;
    STOKE_RETURN_IF_ERROR(client->Fetch(&t).WithContext("listing s3://" + bucket + "/" + prefix));
    const std::string_view xml(reinterpret_cast<const char*>(body.data()), body.size());
    size_t at = 0;
    for (;;) {
      const std::string_view item = Between(xml, "<Contents>", "</Contents>", &at);
      if (item.empty()) break;
      size_t in = 0;
      ObjectEntry e;
      e.key = XmlUnescape(Between(item, "<Key>", "</Key>", &in));
      in = 0;
      const std::string_view size = Between(item, "<Size>", "</Size>", &in);
      std::from_chars(size.data(), size.data() + size.size(), e.size);
      entries.push_back(std::move(e));
    }
    size_t from = 0;
    const bool truncated = Between(xml, "<IsTruncated>", "</IsTruncated>", &from) == "true";
    from = 0;
    token = XmlUnescape(Between(xml, "<NextContinuationToken>", "</NextContinuationToken>", &from));
    if (!truncated) break;
    if (token.empty()) {
      return DataLossError("listing s3://" + bucket + "/" + prefix +
                           ": a truncated page without a continuation token");
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const ObjectEntry& a, const ObjectEntry& b) { return a.key < b.key; });
  return entries;
}

StatusOr<std::vector<std::string>> ExpandBraces(std::string_view pattern) {
  constexpr size_t kMaxNames = 1000000;
  const size_t open = pattern.find('{');
  if (open == std::string_view::npos) {
    if (pattern.find('}') != std::string_view::npos) {
      return InvalidArgumentError(std::string(pattern) + ": a '}' without its '{'");
    }
    return std::vector<std::string>{std::string(pattern)};
  }
  const size_t close = pattern.find('}', open);
  if (close == std::string_view::npos) {
    return InvalidArgumentError(std::string(pattern) + ": an unclosed '{'");
  }
  const std::string_view inner = pattern.substr(open + 1, close - open - 1);
  std::vector<std::string> choices;
  if (const size_t dots = inner.find(".."); dots != std::string_view::npos) {
    const std::string_view a = inner.substr(0, dots);
    const std::string_view b = inner.substr(dots + 2);
    uint64_t first = 0, last = 0;
    const auto pa = std::from_chars(a.data(), a.data() + a.size(), first);
    const auto pb = std::from_chars(b.data(), b.data() + b.size(), last);
    if (a.empty() || b.empty() || pa.ptr != a.data() + a.size() || pb.ptr != b.data() + b.size()) {
      return InvalidArgumentError(std::string(pattern) + ": {" + std::string(inner) +
                                  "} is not a range of numbers {FIRST..LAST}");
    }
    if (last < first) {
      return InvalidArgumentError(std::string(pattern) + ": the range {" + std::string(inner) +
                                  "} runs backwards");
    }
    if (last - first >= kMaxNames) {
      return InvalidArgumentError(std::string(pattern) + ": more than 10^6 names");
    }
    for (uint64_t i = first; i <= last; ++i) {
      std::string n = std::to_string(i);
      if (n.size() < a.size()) n.insert(0, a.size() - n.size(), '0');
      choices.push_back(std::move(n));
    }
  } else {
    size_t start = 0;
    for (;;) {
      const size_t comma = inner.find(',', start);
      choices.emplace_back(inner.substr(start, comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  STOKE_ASSIGN_OR_RETURN(std::vector<std::string> tails, ExpandBraces(pattern.substr(close + 1)));
  if (choices.size() * tails.size() > kMaxNames) {
    return InvalidArgumentError(std::string(pattern) + ": more than 10^6 names");
  }
  // Long names times many: bounded in bytes too (a hostile pattern).
  if (choices.size() * tails.size() * (pattern.size() + 32) > (uint64_t{256} << 20)) {
    return InvalidArgumentError(std::string(pattern) + ": its names would take more than 256 MiB");
  }
  std::vector<std::string> out;
  out.reserve(choices.size() * tails.size());
  const std::string head(pattern.substr(0, open));
  for (const std::string& c : choices) {
    for (const std::string& t : tails) out.push_back(head + c + t);
  }
  return out;
}

}  // namespace stoke::internal

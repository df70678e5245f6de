// The HTTP client (http_client.h): one thread, one curl multi handle, every
// transfer of the process. Each transfer keeps its own easy handle between
// attempts and submissions; connections live in the multi handle's cache and
// are reused by whichever transfer goes to the same host next.
#include "io/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "util/mutex.h"
#include "util/thread_role.h"
#include "util/trace.h"

namespace stoke::internal {

// A transfer's state, touched only by the client's thread (but `generation`,
// which the submitter sets before the client sees the transfer).
struct HttpTransferState {
  ~HttpTransferState() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    curl_slist_free_all(headers);
  }
  enum class Phase { kIdle, kActive, kWaiting };
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;  // built at the first attempt of a submission
  std::string userpwd;            // "key:secret" for SigV4
  std::string sigv4;              // "aws:amz:REGION:s3"
  Phase phase = Phase::kIdle;
  uint64_t generation = 0;  // submissions of this transfer so far
  int attempt = 0;          // attempts started in this submission
  bool overflow = false;    // the body was longer than asked
  bool ignored_range = false;
  bool saw_byte = false;
  std::string error_body;  // the first bytes of a response of status >= 300
  size_t upload_pos = 0;
  int64_t start_ns = 0;
  int64_t progress_ns = 0;  // the attempt's start or its last byte in or out
  size_t active_index = 0;  // in the client's active list while kActive
  std::chrono::steady_clock::time_point retry_at{};
  char range[64] = {};
};

namespace {

constexpr size_t kMaxErrorBody = 4096;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* MethodName(HttpTransfer::Method m) {
  switch (m) {
    case HttpTransfer::Method::kGet:
      return "GET";
    case HttpTransfer::Method::kHead:
      return "HEAD";
    case HttpTransfer::Method::kPut:
      return "PUT";
    case HttpTransfer::Method::kPost:
      return "POST";
    case HttpTransfer::Method::kDelete:
      return "DELETE";
  }
  return "?";
}

// "GET http://h/k bytes 100-199"
std::string Describe(const HttpTransfer& t) {
  std::string s = std::string(MethodName(t.method)) + " " + t.url;
  if (!t.dst.empty()) {
    s += " bytes " + std::to_string(t.offset) + "-" + std::to_string(t.offset + t.dst.size() - 1);
  }
  return s;
}

// Between the tags of the first <tag>...</tag> in an XML body, or empty.
std::string XmlField(std::string_view body, std::string_view tag) {
  const std::string open = "<" + std::string(tag) + ">";
  const std::string close = "</" + std::string(tag) + ">";
  const size_t a = body.find(open);
  if (a == std::string_view::npos) return {};
  const size_t b = body.find(close, a + open.size());
  if (b == std::string_view::npos) return {};
  return std::string(body.substr(a + open.size(), b - a - open.size()));
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<HttpTransfer*>(user);
  HttpTransferState& st = *t->state;
  const size_t bytes = size * count;
  st.progress_ns = NowNs();
  if (!st.saw_byte) {
    st.saw_byte = true;
    if (t->first_byte_ns == 0) t->first_byte_ns = st.progress_ns - st.start_ns;
  }
  long code = 0;
  curl_easy_getinfo(st.easy, CURLINFO_RESPONSE_CODE, &code);
  if (code >= 300) {
    const size_t keep =
        std::min(bytes, kMaxErrorBody - std::min(kMaxErrorBody, st.error_body.size()));
    st.error_body.append(data, keep);
    return bytes;
  }
  if (!t->dst.empty()) {
    if (code == 200 && t->offset + t->received != 0) {
      st.ignored_range = true;  // the whole object, where a range was asked
      return 0;
    }
    if (bytes > t->dst.size() - t->received) {
      st.overflow = true;
      return 0;
    }
    std::memcpy(t->dst.data() + t->received, data, bytes);
    t->received += bytes;
    return bytes;
  }
  if (t->body != nullptr) {
    if (bytes > t->max_body - std::min<uint64_t>(t->max_body, t->body->size())) {
      st.overflow = true;
      return 0;
    }
    const auto* p = reinterpret_cast<const std::byte*>(data);
    t->body->insert(t->body->end(), p, p + bytes);
  }
  t->received += bytes;
  return bytes;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<HttpTransfer*>(user);
  const size_t bytes = size * count;
  std::string_view line(data, bytes);
  if (line.size() > 5 && strncasecmp(line.data(), "etag:", 5) == 0) {
    line.remove_prefix(5);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n' || line.back() == ' ')) {
      line.remove_suffix(1);
    }
    t->etag.assign(line);
  }
  return bytes;
}

size_t OnUpload(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<HttpTransfer*>(user);
  HttpTransferState& st = *t->state;
  st.progress_ns = NowNs();
  const size_t n = std::min(size * count, t->upload.size() - st.upload_pos);
  std::memcpy(buffer, t->upload.data() + st.upload_pos, n);
  st.upload_pos += n;
  return n;
}

// Whether a failed attempt may succeed if made again.
bool Retryable(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

class Waiter final : public HttpDone {
 public:
  void OnHttpDone(HttpTransfer*) override {
    MutexLock lock(&mu_);
    done_ = true;
    cv_.NotifyAll();
  }
  // Waits until done; cancels `t` once *cancelled turns true.
  void Wait(HttpClient* client, HttpTransfer* t, const std::atomic<bool>* cancelled) {
    bool cancel_sent = false;
    MutexLock lock(&mu_);
    while (!done_) {
      if (cancelled == nullptr) {
        cv_.Wait(&mu_);
        continue;
      }
      cv_.WaitUntil(&mu_, std::chrono::steady_clock::now() + std::chrono::milliseconds(20));
      if (!done_ && !cancel_sent && cancelled->load(std::memory_order_acquire)) {
        cancel_sent = true;
        client->Cancel(t);  // never blocks; completion comes back through OnHttpDone
      }
    }
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool done_ STOKE_GUARDED_BY(mu_) = false;
};

}  // namespace

HttpTransfer::HttpTransfer() : state(std::make_unique<HttpTransferState>()) {}
HttpTransfer::~HttpTransfer() = default;

std::chrono::milliseconds BackoffDelay(const HttpClientOptions& o, int attempt, double unit) {
  const int shift = std::clamp(attempt - 1, 0, 30);
  const int64_t grown = o.backoff_base.count() << shift;
  const int64_t d = std::min<int64_t>(o.backoff_cap.count(), grown);
  return std::chrono::milliseconds(d / 2 + static_cast<int64_t>(unit * static_cast<double>(d / 2)));
}

std::string S3ErrorCode(std::string_view body) { return XmlField(body, "Code"); }

struct HttpClient::Impl {
  explicit Impl(HttpClient* client) : client_(client) {
    static std::once_flag global;
    std::call_once(global, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    multi_ = curl_multi_init();
    const HttpClientOptions& o = client->options_;
    curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, long{o.max_connections_per_host});
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, long{o.max_connections_per_host} * 4);
    thread_ = std::thread([this] {
      MarkStokeThread();
      Run();
    });
  }
  ~Impl() {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    curl_multi_wakeup(multi_);
    thread_.join();
    curl_multi_cleanup(multi_);
  }

  void Submit(HttpTransfer* t) {
    {
      MutexLock lock(&mu_);
      ++t->state->generation;
      live_[t] = t->state->generation;
      submitted_.push_back(t);
    }
    curl_multi_wakeup(multi_);
  }

  void Cancel(HttpTransfer* t) {
    {
      MutexLock lock(&mu_);
      auto it = live_.find(t);
      if (it == live_.end()) return;  // already completed
      cancels_.push_back({t, it->second});
    }
    curl_multi_wakeup(multi_);
  }

 private:
  struct CancelRequest {
    HttpTransfer* transfer;
    uint64_t generation;
  };

  // The client's thread: 1. take new transfers and cancellations; 2. start
  // the retries that are due; 3. let libcurl move bytes; 4. finish what ended;
  // 5. sleep until a socket is ready, a retry is due or somebody wakes us.
  void Run() {
    std::vector<HttpTransfer*> fresh;
    std::vector<HttpTransfer*> cancelled;
    for (;;) {
      fresh.clear();
      cancelled.clear();
      {
        MutexLock lock(&mu_);
        if (stopping_) break;
        fresh.swap(submitted_);
        for (const CancelRequest& c : cancels_) {
          auto it = live_.find(c.transfer);
          if (it != live_.end() && it->second == c.generation) cancelled.push_back(c.transfer);
        }
        cancels_.clear();
      }
      for (HttpTransfer* t : fresh) {
        t->state->attempt = 0;
        t->state->phase = HttpTransferState::Phase::kIdle;
        StartAttempt(t);
      }
      for (HttpTransfer* t : cancelled) {
        if (t->state->phase == HttpTransferState::Phase::kIdle) continue;  // done meanwhile
        Detach(t);
        Complete(t, CancelledError(Describe(*t) + ": cancelled"));
      }
      CheckStalls();
      const auto now = std::chrono::steady_clock::now();
      auto next_retry = now + std::chrono::milliseconds(100);
      for (size_t i = 0; i < waiting_.size();) {
        HttpTransfer* t = waiting_[i];
        if (t->state->retry_at <= now) {
          waiting_[i] = waiting_.back();
          waiting_.pop_back();
          StartAttempt(t);
        } else {
          next_retry = std::min(next_retry, t->state->retry_at);
          ++i;
        }
      }
      int running = 0;
      curl_multi_perform(multi_, &running);
      int queued = 0;
      while (CURLMsg* m = curl_multi_info_read(multi_, &queued)) {
        if (m->msg != CURLMSG_DONE) continue;
        HttpTransfer* t = nullptr;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &t);
        AttemptDone(t, m->data.result);
      }
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
          next_retry - std::chrono::steady_clock::now());
      curl_multi_poll(multi_, nullptr, 0, static_cast<int>(std::max<int64_t>(0, wait.count())),
                      nullptr);
    }
    // Shutting down: whatever is left completes as cancelled.
    std::vector<HttpTransfer*> left;
    {
      MutexLock lock(&mu_);
      for (const auto& [t, generation] : live_) left.push_back(t);
      submitted_.clear();
      cancels_.clear();
    }
    for (HttpTransfer* t : left) {
      Detach(t);
      Complete(t, CancelledError(Describe(*t) + ": the HTTP client is shutting down"));
    }
  }

  void StartAttempt(HttpTransfer* t) {
    HttpTransferState& st = *t->state;
    const HttpClientOptions& o = client_->options_;
    ++st.attempt;
    st.overflow = false;
    st.ignored_range = false;
    st.saw_byte = false;
    st.error_body.clear();
    st.upload_pos = 0;
    st.start_ns = NowNs();
    if (t->dst.empty()) {  // a whole body starts again; a range resumes where it stopped
      t->received = 0;
      if (t->body != nullptr) t->body->clear();
    }
    if (st.attempt == 1) {
      t->status = Status::Ok();
      t->http_status = 0;
      t->content_length = -1;
      t->retries = 0;
      t->etag.clear();
      t->first_byte_ns = 0;
      if (!t->dst.empty()) t->received = 0;
      curl_slist_free_all(st.headers);
      st.headers = nullptr;
      if (t->signing != nullptr && t->signing->sign) {
        // S3 wants the payload's hash: the empty body's for reads, none for writes.
        const bool writes =
            t->method == HttpTransfer::Method::kPut || t->method == HttpTransfer::Method::kPost;
        st.headers = curl_slist_append(
            st.headers, writes
                            ? "x-amz-content-sha256: UNSIGNED-PAYLOAD"
                            : "x-amz-content-sha256: "
                              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        if (!t->signing->session_token.empty()) {
          st.headers = curl_slist_append(
              st.headers, ("x-amz-security-token: " + t->signing->session_token).c_str());
        }
        st.userpwd = t->signing->access_key_id + ":" + t->signing->secret_access_key;
        st.sigv4 = "aws:amz:" + t->signing->region + ":s3";
      }
      // No "Expect: 100-continue" wait before a body: one round trip less.
      if (t->method == HttpTransfer::Method::kPut || t->method == HttpTransfer::Method::kPost) {
        st.headers = curl_slist_append(st.headers, "Expect:");
      }
      for (const std::string& h : t->headers) st.headers = curl_slist_append(st.headers, h.c_str());
    }
    if (st.easy == nullptr) st.easy = curl_easy_init();
    CURL* e = st.easy;
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, t->url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnBody);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &OnHeader);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.connect_timeout.count()));
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    if (st.headers != nullptr) curl_easy_setopt(e, CURLOPT_HTTPHEADER, st.headers);
    if (t->signing != nullptr && t->signing->sign) {
      curl_easy_setopt(e, CURLOPT_AWS_SIGV4, st.sigv4.c_str());
      curl_easy_setopt(e, CURLOPT_USERPWD, st.userpwd.c_str());
    }
    switch (t->method) {
      case HttpTransfer::Method::kGet:
        break;
      case HttpTransfer::Method::kHead:
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
        break;
      case HttpTransfer::Method::kPut:
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, &OnUpload);
        curl_easy_setopt(e, CURLOPT_READDATA, t);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(t->upload.size()));
        break;
      case HttpTransfer::Method::kPost:
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->upload.data());
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->upload.size()));
        break;
      case HttpTransfer::Method::kDelete:
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
        break;
    }
    if (!t->dst.empty()) {
      std::snprintf(st.range, sizeof st.range, "%llu-%llu",
                    static_cast<unsigned long long>(t->offset + t->received),
                    static_cast<unsigned long long>(t->offset + t->dst.size() - 1));
      curl_easy_setopt(e, CURLOPT_RANGE, st.range);
    }
    st.phase = HttpTransferState::Phase::kActive;
    st.progress_ns = st.start_ns;
    st.active_index = active_.size();
    active_.push_back(t);
    curl_multi_add_handle(multi_, e);
  }

  void Deactivate(HttpTransfer* t) {
    HttpTransferState& st = *t->state;
    curl_multi_remove_handle(multi_, st.easy);
    HttpTransfer* last = active_.back();
    active_[st.active_index] = last;
    last->state->active_index = st.active_index;
    active_.pop_back();
    st.phase = HttpTransferState::Phase::kIdle;
  }

  // Ends the attempts that have moved no byte for stall_timeout (a stalled
  // body, or a first byte that never comes), at most every 50 ms.
  void CheckStalls() {
    const int64_t now = NowNs();
    if (now - last_stall_check_ns_ < 50'000'000) return;
    last_stall_check_ns_ = now;
    const int64_t limit = std::chrono::nanoseconds(client_->options_.stall_timeout).count();
    for (size_t i = 0; i < active_.size();) {
      HttpTransfer* t = active_[i];
      if (now - t->state->progress_ns > limit) {
        AttemptDone(t, CURLE_OPERATION_TIMEDOUT, /*stalled=*/true);  // moves another into i
      } else {
        ++i;
      }
    }
  }

  // Takes `t` out of libcurl or the retry list.
  void Detach(HttpTransfer* t) {
    HttpTransferState& st = *t->state;
    if (st.phase == HttpTransferState::Phase::kActive) {
      Deactivate(t);
    } else if (st.phase == HttpTransferState::Phase::kWaiting) {
      waiting_.erase(std::find(waiting_.begin(), waiting_.end(), t));
    }
    st.phase = HttpTransferState::Phase::kIdle;
  }

  void AttemptDone(HttpTransfer* t, CURLcode rc, bool stalled = false) {
    HttpTransferState& st = *t->state;
    Deactivate(t);
    long code = 0;
    curl_easy_getinfo(st.easy, CURLINFO_RESPONSE_CODE, &code);
    t->http_status = code;
    const std::string what = Describe(*t);
    if (rc == CURLE_OK && code >= 200 && code < 300) {
      if (t->method == HttpTransfer::Method::kHead) {
        curl_off_t length = -1;
        curl_easy_getinfo(st.easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
        t->content_length = length;
      }
      if (!t->dst.empty() && t->received < t->dst.size()) {
        return Retry(t,
                     DataLossError(what + ": the body ended after " + std::to_string(t->received) +
                                   " of " + std::to_string(t->dst.size()) + " bytes"));
      }
      return Complete(t, Status::Ok());
    }
    if (rc == CURLE_OK) {
      const std::string code_text = S3ErrorCode(st.error_body);
      const std::string message = XmlField(st.error_body, "Message");
      std::string detail = what + ": HTTP " + std::to_string(code);
      if (!code_text.empty()) detail += " " + code_text;
      if (!message.empty()) detail += " (" + message + ")";
      if (code == 429 || code >= 500) return Retry(t, UnavailableError(detail));
      if (code == 404) return Complete(t, NotFoundError(detail));
      if (code == 400 || code == 401 || code == 403) {
        return Complete(t, InvalidArgumentError(detail + ": check the URL, the endpoint "
                                                         "(AWS_ENDPOINT_URL) and the credentials"));
      }
      if (code == 416) return Complete(t, DataLossError(detail + ": the object is shorter"));
      return Complete(t, UnavailableError(detail));
    }
    const std::string curl_text = what + ": " + curl_easy_strerror(rc) + " (curl " +
                                  std::to_string(static_cast<int>(rc)) + ")";
    if (st.overflow) {
      return Complete(t, DataLossError(what + ": the server sent more bytes than asked"));
    }
    if (st.ignored_range) {
      return Complete(t, UnavailableError(what + ": the server ignored the Range header (HTTP 200 "
                                                 "with the whole object)"));
    }
    if (stalled) {
      return Retry(t,
                   DeadlineExceededError(what + ": no byte for " +
                                         std::to_string(client_->options_.stall_timeout.count()) +
                                         " ms (HttpClientOptions::stall_timeout)"));
    }
    if (rc == CURLE_OPERATION_TIMEDOUT) return Retry(t, DeadlineExceededError(curl_text));
    if (Retryable(rc)) return Retry(t, UnavailableError(curl_text));
    return Complete(t, UnavailableError(curl_text + ": check the URL and the endpoint"));
  }

  void Retry(HttpTransfer* t, Status why) {
    HttpTransferState& st = *t->state;
    const HttpClientOptions& o = client_->options_;
    if (st.attempt >= client_->max_attempts()) {
      return Complete(t, why.WithContext("after " + std::to_string(st.attempt) + " attempts"));
    }
    ++t->retries;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    st.retry_at = std::chrono::steady_clock::now() + BackoffDelay(o, st.attempt, unit(random_));
    st.phase = HttpTransferState::Phase::kWaiting;
    waiting_.push_back(t);
  }

  void Complete(HttpTransfer* t, Status status) {
    t->status = std::move(status);
    t->state->phase = HttpTransferState::Phase::kIdle;
    {
      MutexLock lock(&mu_);
      live_.erase(t);
    }
    if (t->done != nullptr) t->done->OnHttpDone(t);
  }

  HttpClient* const client_;
  CURLM* multi_ = nullptr;
  std::mt19937_64 random_{std::random_device{}()};  // the client's thread only
  std::vector<HttpTransfer*> waiting_;              // the client's thread only
  std::vector<HttpTransfer*> active_;               // the client's thread only: in libcurl
  int64_t last_stall_check_ns_ = 0;                 // the client's thread only
  Mutex mu_;
  bool stopping_ STOKE_GUARDED_BY(mu_) = false;
  std::vector<HttpTransfer*> submitted_ STOKE_GUARDED_BY(mu_);
  std::vector<CancelRequest> cancels_ STOKE_GUARDED_BY(mu_);
  // Submitted and not yet completed, with their submission's generation.
  std::unordered_map<HttpTransfer*, uint64_t> live_ STOKE_GUARDED_BY(mu_);
  std::thread thread_;
};

HttpClient::HttpClient(const HttpClientOptions& options)
    : options_(options), impl_(std::make_unique<Impl>(this)) {}

HttpClient::~HttpClient() { impl_.reset(); }

void HttpClient::Submit(HttpTransfer* t) { impl_->Submit(t); }

void HttpClient::Cancel(HttpTransfer* t) { impl_->Cancel(t); }

Status HttpClient::Fetch(HttpTransfer* t, const std::atomic<bool>* cancelled) {
  Waiter waiter;
  t->done = &waiter;
  impl_->Submit(t);
  waiter.Wait(this, t, cancelled);
  t->done = nullptr;
  return t->status;
}

HttpClientOptions HttpClientOptions::FromEnvironment() {
  HttpClientOptions o;
  if (const char* attempts = std::getenv("AWS_MAX_ATTEMPTS")) {
    const int n = std::atoi(attempts);
    if (n >= 1) o.max_attempts = n;
  }
  return o;
}

HttpClient* SharedHttpClient() {
  static HttpClient* const client = new HttpClient(HttpClientOptions::FromEnvironment());
  return client;
}

}  // namespace stoke::internal

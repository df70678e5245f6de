// HTTP(S) requests on libcurl's multi interface: one thread drives every
// transfer of the process, on connections kept alive and reused; a ranged GET
// lands straight in the caller's buffer; failures that may pass (5xx, 429,
// S3's SlowDown, resets, timeouts, a short body) are retried with capped
// exponential backoff and jitter, a short body from where it stopped.
//
// Thread safety: Submit, Cancel and the blocking calls may be called from any
// thread, including from inside HttpDone::OnHttpDone (which runs on the
// client's thread and must not block).
//
//   HttpTransfer t;
//   t.url = "http://127.0.0.1:8080/shard-000000.stk";
//   t.offset = 4096;
//   t.dst = buffer;                       // bytes [4096, 4096 + buffer.size())
//   Status s = client->Fetch(&t);         // blocks; names the URL and range on failure
#ifndef STOKE_SRC_IO_HTTP_CLIENT_H_
#define STOKE_SRC_IO_HTTP_CLIENT_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stoke/status.h"

namespace stoke::internal {

// How requests are signed: SigV4 for S3 (libcurl's CURLOPT_AWS_SIGV4), or not.
struct HttpSigning {
  bool sign = false;
  std::string region;             // "us-east-1"
  std::string access_key_id;      // AWS_ACCESS_KEY_ID
  std::string secret_access_key;  // AWS_SECRET_ACCESS_KEY
  std::string session_token;      // AWS_SESSION_TOKEN; empty: none
};

struct HttpClientOptions {
  // A connection that does not open in this long fails the attempt.
  std::chrono::milliseconds connect_timeout{5000};
  // An attempt that moves no byte for this long fails (a stalled body, or a
  // first byte that never comes), checked every 50 ms.
  std::chrono::milliseconds stall_timeout{10000};
  // Attempts per request, the first included; then the request's error.
  int max_attempts = 8;
  // The wait before retry n (n >= 1) is drawn from [d/2, d] with
  // d = min(backoff_cap, backoff_base x 2^(n-1)).
  std::chrono::milliseconds backoff_base{50};
  std::chrono::milliseconds backoff_cap{2000};
  // Connections open at once per host (and kept in all, x 4). HTTP/1.1 has
  // one request in flight per connection, so this bounds the requests in
  // flight to one store: as many as the loader keeps in flight for remote
  // data (kRemoteInFlight), so that 30 ms a request still gives 8,500 GETs/s.
  int max_connections_per_host = 256;

  // The defaults, but max_attempts from AWS_MAX_ATTEMPTS (as the AWS CLI and
  // SDKs read it) when set to a number >= 1.
  static HttpClientOptions FromEnvironment();
};

class HttpTransfer;

class HttpDone {
 public:
  // Called once per submitted transfer, on the client's thread, with its
  // results set. Must not block or throw; may Submit more.
  virtual void OnHttpDone(HttpTransfer* t) = 0;

 protected:
  ~HttpDone() = default;
};

struct HttpTransferState;  // the client's, per transfer

// One request. The caller owns it; it must stay alive, and its fields
// unchanged, from Submit until its OnHttpDone (or Fetch's return).
class HttpTransfer {
 public:
  HttpTransfer();
  ~HttpTransfer();
  HttpTransfer(const HttpTransfer&) = delete;
  HttpTransfer& operator=(const HttpTransfer&) = delete;

  enum class Method { kGet, kHead, kPut, kPost, kDelete };

  // ---- Set by the caller. ----
  Method method = Method::kGet;
  std::string url;
  const HttpSigning* signing = nullptr;  // null: unsigned
  // kGet with a non-empty dst: bytes [offset, offset + dst.size()) of the
  // object, exactly, into dst (fewer is DataLoss once retries are spent: the
  // object is shorter). Otherwise, with body: the whole response body (at most
  // max_body bytes, else DataLoss).
  uint64_t offset = 0;
  std::span<std::byte> dst;
  std::vector<std::byte>* body = nullptr;
  uint64_t max_body = uint64_t{64} << 20;
  // kPut / kPost: the request's body.
  std::span<const std::byte> upload;
  // Extra request headers ("Content-Type: application/xml"), signed with the rest.
  std::vector<std::string> headers;
  // Called when done (Submit). Null for Fetch.
  HttpDone* done = nullptr;
  void* user = nullptr;  // the caller's, untouched

  // ---- Set by the client when the transfer completes. ----
  // Ok; or the error naming the method, URL, range, HTTP status and the
  // store's error code: NotFound (404), InvalidArgument (400, 401, 403: the
  // request or its credentials), DataLoss (416, a short or long body),
  // Unavailable (5xx, 429 and network failures, once retries are spent),
  // Cancelled (Cancel or the client's shutdown).
  Status status;
  long http_status = 0;         // the last attempt's, 0 if none answered
  uint64_t received = 0;        // body bytes in dst or body
  int64_t content_length = -1;  // kHead: the object's size
  int retries = 0;              // attempts after the first
  std::string etag;             // the response's ETag header, if any (multipart uploads)
  int64_t first_byte_ns = 0;    // from the first attempt's start to its first byte

  std::unique_ptr<HttpTransferState> state;  // the client's
};

class HttpClient {
 public:
  explicit HttpClient(const HttpClientOptions& options);
  ~HttpClient();  // cancels what is in flight (completing it) and joins the thread
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Starts `t` (its `done` set). Never blocks.
  void Submit(HttpTransfer* t);
  // Completes `t` with Cancelled soon if it has not completed yet (its
  // OnHttpDone still runs, once). Never blocks.
  void Cancel(HttpTransfer* t);
  // Submits `t` and waits for it (t->done must be null); then t->status. When
  // *cancelled becomes true, cancels it.
  Status Fetch(HttpTransfer* t, const std::atomic<bool>* cancelled = nullptr);

  const HttpClientOptions& options() const { return options_; }

  // Attempts per request from now on (>= 1): options().max_attempts until
  // set. For tests of the process's shared client.
  int max_attempts() const { return max_attempts_.load(std::memory_order_relaxed); }
  void set_max_attempts(int attempts) {
    max_attempts_.store(attempts < 1 ? 1 : attempts, std::memory_order_relaxed);
  }

 private:
  struct Impl;
  const HttpClientOptions options_;
  std::unique_ptr<Impl> impl_;
  std::atomic<int> max_attempts_{options_.max_attempts};
};

// The process's client, made on first use with FromEnvironment's options;
// lives forever (its thread is never joined).
HttpClient* SharedHttpClient();

// The wait before retry `attempt` (>= 1), `unit` in [0, 1) drawing the jitter.
std::chrono::milliseconds BackoffDelay(const HttpClientOptions& o, int attempt, double unit);

// S3's error code from an error response body ("SlowDown" from
// <Error><Code>SlowDown</Code>...), or empty.
std::string S3ErrorCode(std::string_view body);

}  // namespace stoke::internal

#endif  // STOKE_SRC_IO_HTTP_CLIENT_H_

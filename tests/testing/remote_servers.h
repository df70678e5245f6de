// Real servers for the remote-data tests, on loopback, started and stopped by
// the tests: nginx (plain HTTP range reads of a folder), s3rver (an
// S3-compatible server: ranges, listings, S3's errors; it accepts any
// signature), and a fault-injecting HTTP proxy of our own between client and
// server (a delay per request, a bandwidth cap per connection, resets in the
// middle of a body, injected 503 SlowDown, stalls).
//
// Thread safety: each object from one thread; the proxy's counters from any.
//
//   Nginx web;
//   ASSERT_TRUE(web.Start("/tmp/root").ok());
//   FaultProxy proxy({.upstream_port = web.port(), .reset_every = 10});
//   // http://127.0.0.1:{proxy.port()}/file
#ifndef STOKE_TESTS_TESTING_REMOTE_SERVERS_H_
#define STOKE_TESTS_TESTING_REMOTE_SERVERS_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "stoke/status.h"

namespace stoke::testing {

// A child process that serves on a loopback port until destroyed (SIGTERM,
// then SIGKILL after 5 s).
class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess() { Stop(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  // "http://127.0.0.1:PORT"
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void Stop();

 protected:
  // Runs argv with stdout and stderr to `log`, then waits up to 20 s for
  // `port` to accept connections. Unavailable naming the command and its log
  // otherwise.
  Status Spawn(const std::vector<std::string>& argv, int port, const std::string& log);

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

// nginx serving `root` (range requests, keep-alive) from a scratch prefix.
class Nginx final : public ServerProcess {
 public:
  Status Start(const std::string& root);
};

// s3rver (build/npm, installed by tools/install_deps.sh) storing under
// `directory`, with `bucket` created.
class S3rver final : public ServerProcess {
 public:
  Status Start(const std::string& directory, const std::string& bucket);
};

// A socket listening on loopback `port` (0: any free port; SO_REUSEADDR set)
// with `backlog`, its port in *bound_port; -1 when it cannot bind or listen.
int ListenOnLoopback(int port, int backlog, int* bound_port);

// A loopback port nothing listens on now.
int FreePort();

struct ProxyFaults {
  int upstream_port = 0;
  int listen_port = 0;  // 0: any free port
  // Added before each request is forwarded (a store's first-byte latency).
  std::chrono::milliseconds delay{0};
  // Response bytes per second per connection; 0: no cap.
  uint64_t bytes_per_second = 0;
  // Every Nth request (1-based, counted over all connections): its response
  // is cut after half its body and the connection reset. 0: never.
  uint64_t reset_every = 0;
  // Every Nth request is answered 503 SlowDown by the proxy itself. 0: never.
  uint64_t slowdown_every = 0;
  // Every Nth request: half its body, then nothing (until the client gives
  // up or the proxy stops). 0: never.
  uint64_t stall_every = 0;
};

class FaultProxy {
 public:
  explicit FaultProxy(const ProxyFaults& faults);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  uint64_t requests() const { return requests_.load(); }
  uint64_t resets() const { return resets_.load(); }
  uint64_t slowdowns() const { return slowdowns_.load(); }
  uint64_t stalls() const { return stalls_.load(); }
  // Changes ProxyFaults::delay for the requests read from now on.
  void SetDelay(std::chrono::milliseconds delay) { delay_ms_ = delay.count(); }
  // Requests whose target (path and query) contains `needle`.
  uint64_t RequestsFor(const std::string& needle) const;

 private:
  void Accept();
  void Serve(int client);

  const ProxyFaults faults_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> delay_ms_{0};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> resets_{0};
  std::atomic<uint64_t> slowdowns_{0};
  std::atomic<uint64_t> stalls_{0};
  mutable std::mutex mu_;
  std::vector<int> sockets_;          // guarded by mu_: open client and upstream sockets
  std::vector<std::string> targets_;  // guarded by mu_: every request's target
  std::vector<std::thread> threads_;  // guarded by mu_
  std::thread acceptor_;
};

}  // namespace stoke::testing

#endif  // STOKE_TESTS_TESTING_REMOTE_SERVERS_H_

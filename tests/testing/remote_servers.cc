#include "testing/remote_servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace stoke::testing {
namespace {

std::string ReadLog(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  if (text.size() > 2000) text = text.substr(text.size() - 2000);
  return text;
}

// A connection to a loopback port (TCP_NODELAY), or -1.
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool Accepts(int port) {
  const int fd = Connect(port);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// Appends what one read(2) gives; false at end of stream or on error.
bool ReadSome(int fd, std::string* buffer) {
  char chunk[65536];
  const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
  if (n <= 0) return false;
  buffer->append(chunk, static_cast<size_t>(n));
  return true;
}

bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// A header's value in a message head (case-insensitive name), or empty.
std::string Header(const std::string& head, const std::string& name) {
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const size_t at = lower.find("\r\n" + name + ":");
  if (at == std::string::npos) return {};
  size_t v = at + 3 + name.size();
  while (v < head.size() && head[v] == ' ') ++v;
  return head.substr(v, head.find("\r\n", v) - v);
}

}  // namespace

int ListenOnLoopback(int port, int backlog, int* bound_port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return -1;
  }
  *bound_port = ntohs(a.sin_port);
  return fd;
}

int FreePort() {
  int port = 0;
  const int fd = ListenOnLoopback(0, 1, &port);
  if (fd >= 0) ::close(fd);
  return port;
}

Status ServerProcess::Spawn(const std::vector<std::string>& argv, int port,
                            const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return InternalError("fork: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  pid_ = pid;
  port_ = port;
  for (int i = 0; i < 400; ++i) {
    int wstatus = 0;
    if (::waitpid(pid, &wstatus, WNOHANG) == pid) {
      pid_ = -1;
      return UnavailableError(argv[0] + " exited before serving on port " + std::to_string(port) +
                              "; its log (" + log + "):\n" + ReadLog(log));
    }
    if (Accepts(port)) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Stop();
  return UnavailableError(argv[0] + " did not serve on port " + std::to_string(port) +
                          " within 20 s; its log (" + log + "):\n" + ReadLog(log));
}

void ServerProcess::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

Status Nginx::Start(const std::string& root) {
  char tmpl[] = "/tmp/stoke-nginx-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const int port = FreePort();
  std::ofstream conf(dir + "/nginx.conf");
  conf << "master_process off;\ndaemon off;\npid " << dir << "/nginx.pid;\nerror_log " << dir
       << "/error.log;\nevents { worker_connections 4096; }\nhttp {\n  access_log off;\n"
       << "  client_body_temp_path " << dir << "/body;\n  proxy_temp_path " << dir << "/proxy;\n"
       << "  fastcgi_temp_path " << dir << "/fastcgi;\n  uwsgi_temp_path " << dir << "/uwsgi;\n"
       << "  scgi_temp_path " << dir << "/scgi;\n  keepalive_requests 1000000;\n"
       << "  server { listen 127.0.0.1:" << port << "; root " << root << "; }\n}\n";
  conf.close();
  const std::string nginx =
      std::filesystem::exists("/usr/sbin/nginx") ? "/usr/sbin/nginx" : "nginx";
  return Spawn({nginx, "-c", dir + "/nginx.conf", "-p", dir, "-e", dir + "/error.log"}, port,
               dir + "/stdout.log");
}

Status S3rver::Start(const std::string& directory, const std::string& bucket) {
  const std::string binary = STOKE_S3RVER;
  if (!std::filesystem::exists(binary)) {
    return NotFoundError(binary + ": s3rver is not installed; tools/install_deps.sh installs it");
  }
  const int port = FreePort();
  std::filesystem::create_directories(directory);
  // Node 17+ (OpenSSL 3) refuses the legacy cipher s3rver makes listing
  // continuation tokens with, unless asked.
  return Spawn({"node", "--openssl-legacy-provider", binary, "-d", directory, "-p",
                std::to_string(port), "-a", "127.0.0.1", "--silent", "--configure-bucket", bucket},
               port, directory + "/../s3rver-" + std::to_string(port) + ".log");
}

FaultProxy::FaultProxy(const ProxyFaults& faults)
    : faults_(faults), delay_ms_(faults.delay.count()) {
  listener_ = ListenOnLoopback(faults.listen_port, 512, &port_);
  acceptor_ = std::thread([this] { Accept(); });
}

FaultProxy::~FaultProxy() {
  stopping_ = true;
  ::shutdown(listener_, SHUT_RDWR);
  acceptor_.join();
  ::close(listener_);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const int fd : sockets_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

uint64_t FaultProxy::RequestsFor(const std::string& needle) const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<uint64_t>(std::count_if(targets_.begin(), targets_.end(), [&](const auto& t) {
    return t.find(needle) != std::string::npos;
  }));
}

void FaultProxy::Accept() {
  while (!stopping_) {
    const int client = ::accept(listener_, nullptr, nullptr);
    if (client < 0) {
      if (stopping_) return;
      continue;
    }
    const int one = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      ::close(client);
      return;
    }
    sockets_.push_back(client);
    threads_.emplace_back([this, client] { Serve(client); });
  }
}

// One client connection: 1. read a request; 2. apply the request's faults
// (delay, SlowDown); 3. forward it on this connection's upstream; 4. relay the
// response, paced, cut short for a reset or a stall.
void FaultProxy::Serve(int client) {
  int upstream = -1;
  auto forget = [this](int fd) {
    if (fd < 0) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sockets_.erase(std::find(sockets_.begin(), sockets_.end(), fd));
    }
    ::close(fd);
  };
  std::string in;
  auto pace_next = std::chrono::steady_clock::now();
  for (;;) {
    size_t end;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) {
      if (!ReadSome(client, &in)) goto done;
    }
    {
      const std::string head = in.substr(0, end + 4);
      in.erase(0, end + 4);
      const uint64_t body_length =
          std::strtoull(Header(head, "content-length").c_str(), nullptr, 10);
      while (in.size() < body_length) {
        if (!ReadSome(client, &in)) goto done;
      }
      const std::string body = in.substr(0, body_length);
      in.erase(0, body_length);
      const bool head_request = head.starts_with("HEAD ");
      const uint64_t n = ++requests_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        targets_.push_back(head.substr(0, head.find("\r\n")));
      }
      if (const int64_t ms = delay_ms_.load(); ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      }
      if (faults_.slowdown_every > 0 && n % faults_.slowdown_every == 0) {
        ++slowdowns_;
        const std::string xml =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>"
            "Please reduce your request rate.</Message></Error>";
        const std::string response =
            "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
            "Content-Length: " +
            std::to_string(head_request ? 0 : xml.size()) + "\r\n\r\n" + (head_request ? "" : xml);
        if (!WriteAll(client, response.data(), response.size())) goto done;
        continue;
      }
      if (upstream < 0) {
        upstream = Connect(faults_.upstream_port);
        if (upstream < 0) goto done;  // the server is gone: the client sees a reset
        std::lock_guard<std::mutex> lock(mu_);
        sockets_.push_back(upstream);
      }
      const std::string request = head + body;
      if (!WriteAll(upstream, request.data(), request.size())) goto done;
      std::string out;
      while ((end = out.find("\r\n\r\n")) == std::string::npos) {
        if (!ReadSome(upstream, &out)) goto done;
      }
      const std::string response_head = out.substr(0, end + 4);
      std::string rest = out.substr(end + 4);
      const int status = std::atoi(response_head.c_str() + 9);
      const bool chunked =
          Header(response_head, "transfer-encoding").find("chunked") != std::string::npos;
      const bool no_body = head_request || status == 204 || status == 304 || status < 200;
      const uint64_t length =
          no_body ? 0 : std::strtoull(Header(response_head, "content-length").c_str(), nullptr, 10);
      const bool reset = faults_.reset_every > 0 && n % faults_.reset_every == 0 && length > 1;
      const bool stall =
          !reset && faults_.stall_every > 0 && n % faults_.stall_every == 0 && length > 1;
      const uint64_t limit = reset || stall ? length / 2 : length;
      if (!WriteAll(client, response_head.data(), response_head.size())) goto done;
      // The body: what came with the head, then the rest, paced.
      uint64_t sent = 0;
      for (;;) {
        if (chunked) {
          // Relayed as it comes, until the last chunk's terminator.
          if (!rest.empty() && !WriteAll(client, rest.data(), rest.size())) goto done;
          const bool last = rest.ends_with("0\r\n\r\n");
          rest.clear();
          if (last) break;
          if (!ReadSome(upstream, &rest)) goto done;
          continue;
        }
        while (!rest.empty() && sent < limit) {
          const size_t piece =
              static_cast<size_t>(std::min<uint64_t>({rest.size(), limit - sent, 65536}));
          if (faults_.bytes_per_second > 0) {
            pace_next = std::max(pace_next, std::chrono::steady_clock::now());
            std::this_thread::sleep_until(pace_next);
            pace_next += std::chrono::nanoseconds(piece * 1000000000ull / faults_.bytes_per_second);
          }
          if (!WriteAll(client, rest.data(), piece)) goto done;
          rest.erase(0, piece);
          sent += piece;
        }
        if (sent >= limit) break;
        if (!ReadSome(upstream, &rest)) goto done;
      }
      if (reset) {
        ++resets_;
        const linger hard{1, 0};  // close with RST
        ::setsockopt(client, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        goto done;
      }
      if (stall) {
        ++stalls_;
        // Nothing more until the client gives up (closes) or the proxy stops.
        while (!stopping_) {
          pollfd p{client, POLLIN, 0};
          if (::poll(&p, 1, 100) > 0) break;
        }
        goto done;
      }
      if (sent < length) {  // more than the reset/stall limit was read: drop the connection
        goto done;
      }
    }
  }
done:
  forget(upstream);
  forget(client);
}

}  // namespace stoke::testing

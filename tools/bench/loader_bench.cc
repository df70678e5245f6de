// loader_bench: does the loader deliver the bytes a plain read loop does?
//
// For an IDX dataset (Fashion-MNIST, uncompressed) and a list of .npy files, it
// measures in one run, on the same threads and the same bytes:
//   baseline: T threads pread every sample (list: open, read whole, close) and
//             copy it into one contiguous buffer; no pipeline;
//   stoke:    a Loader with T read threads, each backend, consuming every batch.
// warm (page cache hot) and cold (page cache dropped, or the files evicted with
// posix_fadvise when dropping is not permitted). Then, in a child process, 10
// epochs of the loader with peak RSS per epoch against ring + arena + 64 MiB.
//
// usage: loader_bench [WORK_DIR] [THREADS] [CASE]   (default /tmp/stoke_bench, 2, all)
// CASE picks the cases whose name contains it, e.g. "shuffled".
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "stoke/stoke.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Files {
  std::vector<std::string> paths;  // to evict
};

std::string g_cold_method;

void DropCaches(const Files& files) {
  ::sync();
  std::ofstream drop("/proc/sys/vm/drop_caches");
  if (drop << "1" << std::flush) {
    g_cold_method = "drop_caches";
    return;
  }
  for (const std::string& p : files.paths) {
    int fd = ::open(p.c_str(), O_RDONLY);
    if (fd >= 0) {
      ::fdatasync(fd);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
  }
  g_cold_method = "posix_fadvise(DONTNEED)";
}

// The order both sides read in: sequential, or one seeded random permutation.
std::vector<uint64_t> Order(uint64_t n, bool shuffled) {
  std::vector<uint64_t> order(n);
  for (uint64_t i = 0; i < n; ++i) order[i] = i;
  if (shuffled) std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  return order;
}

// The baseline: the k-th sample of `order` goes to thread k % threads, and into
// its place in one contiguous buffer; `passes` times over.
double Baseline(const stoke::Dataset& d, int threads, bool whole_files, bool shuffled, int passes,
                std::vector<char>* out) {
  const std::vector<uint64_t> order = Order(d.size(), shuffled);
  const size_t sample = d.spec().bytes();
  const uint64_t n = d.size();
  out->assign(n * sample, 0);
  int shared_fd = whole_files ? -1 : ::open(d.file_path(0).c_str(), O_RDONLY);
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<char> scratch(sample + 65536 + 1);
      for (uint64_t k = t; k < n * passes; k += threads) {
        const uint64_t i = order[k % n];
        stoke::SampleLocation loc = d.Locate(i);
        if (!whole_files) {
          if (::pread(shared_fd, out->data() + i * sample, sample, loc.offset) != ssize_t(sample)) {
            std::abort();
          }
          continue;
        }
        int fd = ::open(d.file_path(loc.file).c_str(), O_RDONLY);
        ssize_t got = ::pread(fd, scratch.data(), scratch.size(), 0);
        ::close(fd);
        if (got < ssize_t(sample)) std::abort();
        std::memcpy(out->data() + i * sample, scratch.data() + (got - sample), sample);
      }
    });
  }
  for (auto& th : pool) th.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (shared_fd >= 0) ::close(shared_fd);
  return double(n * sample * passes) / secs;
}

double Stoke(std::shared_ptr<stoke::Dataset> d, int threads, stoke::IoBackend io, bool shuffled,
             int epochs) {
  stoke::LoaderOptions o;
  o.order = shuffled ? stoke::Order::kFullShuffle : stoke::Order::kSequential;
  o.batch_size = 256;
  o.read_threads = threads;
  o.io = io;
  auto loader = stoke::Loader::Open(d, o);
  if (!loader.ok()) return 0;  // e.g. mmap of a list of files: not applicable
  const auto t0 = Clock::now();
  uint64_t bytes = 0, check = 0;
  for (int e = 0; e < epochs; ++e) {
    for (stoke::Batch& b : (*loader)->Epoch(e)) {
      bytes += b.bytes();
      check += b.data<uint8_t>()[b.bytes() - 1];
    }
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (check == 1) std::printf(" ");  // keep the read
  return double(bytes) / secs;
}

// What io = auto picks for this dataset in the cache's present state.
std::string AutoChoice(std::shared_ptr<stoke::Dataset> d, int threads) {
  stoke::LoaderOptions o;
  o.read_threads = threads;
  auto loader = stoke::Loader::Open(d, o);
  return loader.ok() ? (*loader)->stats().io_backend : "?";
}

long RssKiB(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
  }
  return -1;
}

// In a child: 10 epochs, RSS after each. Exit 0 iff within ring + arena + 64 MiB and flat.
int RssChild(std::shared_ptr<stoke::Dataset> d, int threads) {
  stoke::LoaderOptions o;
  o.batch_size = 256;
  o.read_threads = threads;
  o.order = stoke::Order::kFullShuffle;
  auto loader = stoke::Loader::Open(d, o);
  if (!loader.ok()) return 2;
  const long base = RssKiB("VmRSS:");
  std::vector<long> after;
  for (int e = 0; e < 10; ++e) {
    for (stoke::Batch& b : (*loader)->Epoch(e)) (void)b;
    after.push_back(RssKiB("VmRSS:"));
  }
  const stoke::LoaderStats s = (*loader)->stats();
  const long limit = long((s.ring_bytes + s.arena_bytes) / 1024) + 64 * 1024;
  const long peak = RssKiB("VmHWM:");
  std::printf("  RSS at open %ld KiB; after epochs 1..10:", base);
  for (long r : after) std::printf(" %ld", r);
  std::printf(
      " KiB\n  peak %ld KiB vs ring %llu + arena %llu + 64 MiB = %ld KiB: %s; growth epochs 2..10: "
      "%ld KiB\n",
      peak, (unsigned long long)s.ring_bytes / 1024, (unsigned long long)s.arena_bytes / 1024,
      limit, peak <= limit ? "within" : "OVER", after.back() - after[1]);
  return peak <= limit && after.back() - after[1] < 1024 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string work = argc > 1 ? argv[1] : "/tmp/stoke_bench";
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const std::string only = argc > 3 ? argv[3] : "";
  std::filesystem::create_directories(work + "/idx");
  std::filesystem::create_directories(work + "/npy");

  // 1. Data: Fashion-MNIST uncompressed, and 20,000 .npy files of 3x32x32.
  const std::string fm = "/usr/share/datasets/fashion-mnist";
  Files idx_files, npy_files;
  for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}) {
    const std::string dst = work + "/idx/" + f;
    if (!std::filesystem::exists(dst)) {
      const std::string cmd = "zcat " + fm + "/" + f + ".gz > " + dst;
      if (std::system(cmd.c_str()) != 0)
        return std::fprintf(stderr, "cannot run %s\n", cmd.c_str()), 1;
    }
    idx_files.paths.push_back(dst);
  }
  const int kNpy = 20000;
  const std::string list = work + "/npy/list.txt";
  if (!std::filesystem::exists(list)) {
    std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (3, 32, 32), }";
    while ((10 + header.size() + 1) % 64) header += ' ';
    header += '\n';
    std::ofstream l(list);
    std::vector<char> payload(3072);
    for (int i = 0; i < kNpy; ++i) {
      for (size_t j = 0; j < payload.size(); ++j) payload[j] = char((i * 131 + j * 7) ^ (j >> 3));
      std::ofstream f(work + "/npy/" + std::to_string(i) + ".npy", std::ios::binary);
      f.write("\x93NUMPY\x01\x00", 8);
      const uint16_t len = uint16_t(header.size());
      f.write(reinterpret_cast<const char*>(&len), 2);
      f << header;
      f.write(payload.data(), std::streamsize(payload.size()));
      l << i << ".npy " << i % 10 << "\n";
    }
  }
  for (int i = 0; i < kNpy; ++i)
    npy_files.paths.push_back(work + "/npy/" + std::to_string(i) + ".npy");

  auto idx = stoke::OpenIdxSplit(work + "/idx", "train");
  stoke::ListOptions lo;
  lo.list_path = list;
  auto npy = stoke::OpenList(lo);
  if (!idx.ok() || !npy.ok()) return std::fprintf(stderr, "cannot open the bench datasets\n"), 1;

  std::printf("loader_bench: %d threads, %u cores\n", threads, std::thread::hardware_concurrency());
  std::printf("%-20s %-5s %9s %9s %9s %9s %9s %7s %7s %s\n", "dataset", "cache", "baseline",
              "pread", "uring", "mmap", "auto", "best/b", "auto/b", "(MB/s; auto chose)");
  bool ok = true;
  struct Case {
    const char* name;
    std::shared_ptr<stoke::Dataset> d;
    bool whole;
    bool shuffled;
    const Files* files;
  } cases[] = {{"IDX fashion-mnist", *idx, false, false, &idx_files},
               {"IDX shuffled", *idx, false, true, &idx_files},
               {"list 20k .npy 3KiB", *npy, true, false, &npy_files},
               {"list shuffled", *npy, true, true, &npy_files}};
  for (const Case& c : cases) {
    if (std::string(c.name).find(only) == std::string::npos) continue;
    for (bool cold : {false, true}) {
      std::vector<char> sink;
      // Best of several for each, interleaved so that all see the same machine state.
      // Warm: 5 passes over the data per measurement; cold: one, from an empty cache.
      const int passes = cold ? 1 : 5;
      const stoke::IoBackend backends[] = {stoke::IoBackend::kPread, stoke::IoBackend::kUring,
                                           stoke::IoBackend::kMmap, stoke::IoBackend::kAuto};
      double base = 0, mbs[4] = {0, 0, 0, 0};
      // Best of 5 warm (short runs, a noisy machine), 3 cold (each drops the cache).
      for (int rep = 0; rep < (cold ? 3 : 5); ++rep) {
        if (cold)
          DropCaches(*c.files);
        else
          Baseline(*c.d, threads, c.whole, false, 1, &sink);  // warm the cache
        base = std::max(base, Baseline(*c.d, threads, c.whole, c.shuffled, passes, &sink));
        for (int b = 0; b < 4; ++b) {
          if (cold) DropCaches(*c.files);
          mbs[b] = std::max(mbs[b], Stoke(c.d, threads, backends[b], c.shuffled, passes));
        }
      }
      if (cold) DropCaches(*c.files);
      const std::string chose = AutoChoice(c.d, threads);
      const double best = *std::max_element(mbs, mbs + 4);
      ok = ok && mbs[3] >= 0.9 * base;
      auto cell = [](double v) {
        char buf[16];
        std::snprintf(buf, sizeof buf, v > 0 ? "%.0f" : "n/a", v / 1e6);
        return std::string(buf);
      };
      std::printf("%-20s %-5s %9.0f %9s %9s %9s %9s %7.2f %7.2f %s\n", c.name,
                  cold ? "cold" : "warm", base / 1e6, cell(mbs[0]).c_str(), cell(mbs[1]).c_str(),
                  cell(mbs[2]).c_str(), cell(mbs[3]).c_str(), best / base, mbs[3] / base,
                  chose.c_str());
    }
  }
  if (!g_cold_method.empty())
    std::printf("cold passes: page cache emptied by %s\n", g_cold_method.c_str());

  std::printf("peak RSS over 10 shuffled epochs of the .npy list (child process):\n");
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    const int rc = RssChild(*npy, threads);
    std::fflush(stdout);
    _exit(rc);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::printf("%s\n",
              ok ? "PASS: stoke (io auto) >= 0.9 x baseline everywhere, RSS bounded and flat"
                 : "FAIL: see the figures above");
  return ok ? 0 : 1;
}

#include "synth.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <tuple>

#include "command.h"
#include "decode/crop.h"
#include "decode/synth_image.h"
#include "flags.h"
#include "stoke/status.h"

namespace stoke::cli {

namespace {

const char kSynthUsage[] =
    "usage: stoke synth DIR [options]\n"
    "\n"
    "Writes a synthetic ImageFolder: DIR/class_NNN/img_NNNNNNN.jpg. The images are\n"
    "gradients, shapes, texture and noise, so they compress like photographs, not\n"
    "like flat colour; each gradient starts from its class's hue, so a small model can\n"
    "learn the classes. The same options and seed give the same files.\n"
    "\n"
    "  --count N          images (default 1000)\n"
    "  --classes K        class folders (default 10)\n"
    "  --min-side N       smallest width or height (default 320)\n"
    "  --max-side N       largest width or height (default 500)\n"
    "  --quality Q        JPEG quality 1..100 (default 90)\n"
    "  --progressive P    percent of images written progressive (default 0)\n"
    "  --restart N        a restart marker every N MCUs in sequential images (default 0:\n"
    "                     none, as most cameras write; `stoke pack` adds them)\n"
    "  --seed N           (default 0)\n"
    "  --threads N        encoding threads (default: the cores)\n"
    "\n"
    "exit status: 0 success, 1 I/O error, 2 usage error\n";

}  // namespace

void PrintSynthUsage(FILE* out) { std::fputs(kSynthUsage, out); }

namespace {

struct SynthRequest {
  std::string dir;
  int64_t count = 0, classes = 0, min_side = 0, max_side = 0, quality = 0, progressive = 0,
          restart = 0, seed = 0, threads = 0;
};

// Every error here is a usage error naming its flag.
StatusOr<SynthRequest> ParseSynth(const std::vector<std::string>& args) {
  STOKE_ASSIGN_OR_RETURN(const Flags flags,
                         Flags::Parse(args,
                                      {"count", "classes", "min-side", "max-side", "quality",
                                       "progressive", "restart", "seed", "threads"},
                                      {}));
  if (flags.positional().size() != 1) {
    PrintSynthUsage(stderr);
    return InvalidArgumentError("expected exactly one output DIR");
  }
  SynthRequest r;
  r.dir = flags.positional()[0];
  for (auto [out, name, fallback, lo, hi] :
       {std::tuple<int64_t*, const char*, int64_t, int64_t, int64_t>{&r.count, "count", 1000, 1,
                                                                     int64_t{1} << 32},
        {&r.classes, "classes", 10, 1, 100000},
        {&r.min_side, "min-side", 320, 8, 16384},
        {&r.max_side, "max-side", 500, 8, 16384},
        {&r.quality, "quality", 90, 1, 100},
        {&r.progressive, "progressive", 0, 0, 100},
        {&r.restart, "restart", 0, 0, 65535},
        {&r.seed, "seed", 0, 0, INT64_MAX},
        {&r.threads, "threads", std::max(1u, std::thread::hardware_concurrency()), 1, 1024}}) {
    STOKE_ASSIGN_OR_RETURN(*out, flags.Int(name, fallback, lo, hi));
  }
  if (r.min_side > r.max_side) {
    return InvalidArgumentError("--min-side " + std::to_string(r.min_side) +
                                " is above --max-side " + std::to_string(r.max_side));
  }
  return r;
}

// Image i: its size, pixels and encoding drawn from (seed, i), in class i % classes.
Status WriteImage(const SynthRequest& r, int64_t i, uint64_t* bytes) {
  internal::SampleRandom random(
      internal::SampleSeed(static_cast<uint64_t>(r.seed), 0, static_cast<uint64_t>(i)));
  const int w = static_cast<int>(random.Int(r.min_side, r.max_side));
  const int h = static_cast<int>(random.Int(r.min_side, r.max_side));
  internal::JpegEncodeOptions eo;
  eo.quality = static_cast<int>(r.quality);
  eo.progressive = random.Int(0, 99) < r.progressive;
  eo.restart_mcus = static_cast<int>(r.restart);
  STOKE_ASSIGN_OR_RETURN(
      const auto jpeg,
      internal::EncodeJpeg(
          internal::SynthPixels(w, h, static_cast<uint64_t>(r.seed) * 1000003 + i,
                                static_cast<int>(i % r.classes), static_cast<int>(r.classes)),
          w, h, eo));
  char name[64];
  std::snprintf(name, sizeof name, "class_%03lld/img_%07lld.jpg",
                static_cast<long long>(i % r.classes), static_cast<long long>(i));
  const std::string path = r.dir + "/" + name;
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
  if (!f) return UnavailableError(path + ": write failed");
  *bytes = jpeg.size();
  return Status::Ok();
}

// Writes every image on `threads` threads; returns the bytes written.
StatusOr<uint64_t> WriteImages(const SynthRequest& r) {
  std::error_code ec;
  for (int64_t c = 0; c < r.classes; ++c) {
    char name[32];
    std::snprintf(name, sizeof name, "class_%03lld", static_cast<long long>(c));
    std::filesystem::create_directories(std::filesystem::path(r.dir) / name, ec);
    if (ec) return ErrnoToStatus(ec.value(), r.dir + "/" + name + ": mkdir");
  }
  std::atomic<int64_t> next{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex error_mu;
  Status error;
  auto work = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < r.count;) {
      uint64_t written = 0;
      Status s = WriteImage(r, i, &written);
      bytes += written;
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (error.ok()) error = s;
        next = r.count;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < r.threads; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  if (!error.ok()) return error;
  return bytes.load();
}

}  // namespace

int SynthCommand(const std::vector<std::string>& args) {
  auto request = ParseSynth(args);
  if (!request.ok()) return Fail("synth", Failure::Usage(request.status()));
  const auto t0 = std::chrono::steady_clock::now();
  auto bytes = WriteImages(*request);
  if (!bytes.ok()) return Fail("synth", Failure::Data(bytes.status()));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("stoke synth: %lld JPEGs in %lld classes under %s, %.1f MB (%.0f KB each), %.2f s\n",
              static_cast<long long>(request->count), static_cast<long long>(request->classes),
              request->dir.c_str(), *bytes / 1e6, *bytes / 1e3 / request->count, secs);
  return 0;
}

}  // namespace stoke::cli

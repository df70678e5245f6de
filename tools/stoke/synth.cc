#include "synth.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "decode/crop.h"
#include "decode/synth_image.h"
#include "flags.h"
#include "stoke/status.h"

namespace stoke::cli {

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

namespace {

int Fail(int code, const Status& s) {
  std::fprintf(stderr, "stoke synth: %s\n", s.ToString().c_str());
  return code;
}

}  // namespace

int SynthCommand(const std::vector<std::string>& args) {
  auto parsed = Flags::Parse(args,
                             {"count", "classes", "min-side", "max-side", "quality", "progressive",
                              "restart", "seed", "threads"},
                             {});
  if (!parsed.ok()) return Fail(2, parsed.status());
  const Flags& flags = *parsed;
  if (flags.positional().size() != 1) {
    std::fputs(kSynthUsage, stderr);
    return Fail(2, InvalidArgumentError("expected exactly one output DIR"));
  }
  const std::string dir = flags.positional()[0];
  int64_t count = 0, classes = 0, min_side = 0, max_side = 0, quality = 0, progressive = 0,
          restart = 0, seed = 0, threads = 0;
  for (auto [out, name, fallback, lo, hi] :
       {std::tuple<int64_t*, const char*, int64_t, int64_t, int64_t>{&count, "count", 1000, 1,
                                                                     int64_t{1} << 32},
        {&classes, "classes", 10, 1, 100000},
        {&min_side, "min-side", 320, 8, 16384},
        {&max_side, "max-side", 500, 8, 16384},
        {&quality, "quality", 90, 1, 100},
        {&progressive, "progressive", 0, 0, 100},
        {&restart, "restart", 0, 0, 65535},
        {&seed, "seed", 0, 0, INT64_MAX},
        {&threads, "threads", std::max(1u, std::thread::hardware_concurrency()), 1, 1024}}) {
    auto v = flags.Int(name, fallback, lo, hi);
    if (!v.ok()) return Fail(2, v.status());
    *out = *v;
  }
  if (min_side > max_side) {
    return Fail(2, InvalidArgumentError("--min-side " + std::to_string(min_side) +
                                        " is above --max-side " + std::to_string(max_side)));
  }
  std::error_code ec;
  for (int64_t c = 0; c < classes; ++c) {
    char name[32];
    std::snprintf(name, sizeof name, "class_%03lld", static_cast<long long>(c));
    std::filesystem::create_directories(std::filesystem::path(dir) / name, ec);
    if (ec) return Fail(1, ErrnoToStatus(ec.value(), dir + "/" + name + ": mkdir"));
  }

  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<int64_t> next{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex error_mu;
  Status error;
  auto work = [&] {
    while (true) {
      const int64_t i = next.fetch_add(1);
      if (i >= count) return;
      internal::SampleRandom random(
          internal::SampleSeed(static_cast<uint64_t>(seed), 0, static_cast<uint64_t>(i)));
      const int w = static_cast<int>(random.Int(min_side, max_side));
      const int h = static_cast<int>(random.Int(min_side, max_side));
      internal::JpegEncodeOptions eo;
      eo.quality = static_cast<int>(quality);
      eo.progressive = random.Int(0, 99) < progressive;
      eo.restart_mcus = static_cast<int>(restart);
      auto jpeg = internal::EncodeJpeg(
          internal::SynthPixels(w, h, static_cast<uint64_t>(seed) * 1000003 + i,
                                static_cast<int>(i % classes), static_cast<int>(classes)),
          w, h, eo);
      char name[64];
      std::snprintf(name, sizeof name, "class_%03lld/img_%07lld.jpg",
                    static_cast<long long>(i % classes), static_cast<long long>(i));
      const std::string path = dir + "/" + name;
      Status s = jpeg.status();
      if (s.ok()) {
        std::ofstream f(path, std::ios::binary);
        f.write(reinterpret_cast<const char*>(jpeg->data()),
                static_cast<std::streamsize>(jpeg->size()));
        if (!f) s = UnavailableError(path + ": write failed");
        bytes += jpeg->size();
      }
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (error.ok()) error = s;
        next = count;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  if (!error.ok()) return Fail(1, error);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("stoke synth: %lld JPEGs in %lld classes under %s, %.1f MB (%.0f KB each), %.2f s\n",
              static_cast<long long>(count), static_cast<long long>(classes), dir.c_str(),
              bytes.load() / 1e6, bytes.load() / 1e3 / count, secs);
  return 0;
}

}  // namespace stoke::cli

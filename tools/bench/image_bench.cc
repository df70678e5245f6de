// image_bench: does the loader's decode stage beat a plain decode loop?
//
// On a synthetic ImageFolder of ImageNet-sized JPEGs (about 500x375; made with
// stoke's generator if WORK_DIR/images is missing), warm page cache, it
// measures in one run, on the same images and the same number of threads:
//   plain: T threads, each reading an image, decoding it at full size with
//          TurboJPEG, and resizing the same crop region to 224x224 with the same
//          antialiasing filter stoke uses (so output quality is equal);
//   stoke: a Loader over the ImageFolder with T read threads (decoding on them),
//          batches of 64, uint8 HWC 224x224.
// for centre crops and for random-resized crops (+ flip). It prints images/s,
// images/s per core and output megapixels/s, and the ratio. Targets: >= 1.5x
// (centre) and >= 2x (random-resized) on 2 cores.
//
// With python3-torch and python3-torchvision importable, it also runs PyTorch's
// DataLoader (torchvision ImageFolder, RandomResizedCrop/CenterCrop, uint8
// PILToTensor, T workers) on the same folder and prints stoke's ratio to it.
//
// usage: image_bench [WORK_DIR] [THREADS] [IMAGES]  (default /tmp/stoke_bench, 2, 1000)
#include <fcntl.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "decode/crop.h"
#include "decode/jpeg_decoder.h"
#include "decode/jpeg_restart.h"
#include "decode/resize.h"
#include "stoke/stoke.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kOut = 224;

std::vector<char> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

// Images per second of `work(i)` over images 0..count-1 on `threads` threads,
// each with its own state from make_worker().
template <typename MakeWorker>
double ImagesPerSecond(size_t count, int threads, MakeWorker make_worker) {
  std::atomic<size_t> next{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      auto work = make_worker();
      for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) work(i);
    });
  }
  for (auto& th : pool) th.join();
  return count / std::chrono::duration<double>(Clock::now() - t0).count();
}

// The crop of image i, as the loader would choose it (seeded by i here).
stoke::internal::Region ChooseRegion(int w, int h, bool random, size_t i,
                                     stoke::internal::ResizeTarget* target) {
  stoke::internal::SampleRandom r(i);
  const stoke::internal::Region region =
      random ? stoke::internal::RandomResizedCrop(w, h, 0.08, 1.0, 3.0 / 4, 4.0 / 3, r)
             : stoke::internal::CenterCrop(w, h, kOut, kOut, 224.0 / 256);
  target->width = target->height = kOut;
  target->flip = random && r.Uniform() < 0.5;
  return region;
}

// The plain loop: full-size TurboJPEG decode, then the crop resized.
double Plain(const std::vector<std::string>& files, int threads, bool random) {
  return ImagesPerSecond(files.size(), threads, [&] {
    struct Worker {
      const std::vector<std::string>* files = nullptr;
      bool random = false;
      std::shared_ptr<void> tj{tjInitDecompress(), [](void* h) { tjDestroy(h); }};
      stoke::internal::Resampler resampler;
      std::vector<unsigned char> rgb;
      std::vector<std::byte> out = std::vector<std::byte>(kOut * kOut * 3);
      void operator()(size_t i) {
        const std::vector<char> jpeg = ReadFile((*files)[i]);
        int w = 0, h = 0, sub = 0, cs = 0;
        auto* data = reinterpret_cast<const unsigned char*>(jpeg.data());
        if (tjDecompressHeader3(tj.get(), data, jpeg.size(), &w, &h, &sub, &cs) != 0) std::abort();
        rgb.resize(static_cast<size_t>(w) * h * 3);
        if (tjDecompress2(tj.get(), data, jpeg.size(), rgb.data(), w, 0, h, TJPF_RGB, 0) != 0) {
          std::abort();
        }
        stoke::internal::ResizeTarget target;
        const stoke::internal::Region region = ChooseRegion(w, h, random, i, &target);
        resampler.Resize(rgb.data(), w, h, static_cast<size_t>(w) * 3, region, target, out);
      }
    };
    Worker worker;
    worker.files = &files;
    worker.random = random;
    return worker;
  });
}

// stoke's decoder alone, on the same threads, no loader: what the pipeline costs.
double DecoderOnly(const std::vector<std::string>& files, int threads, bool random) {
  return ImagesPerSecond(files.size(), threads, [&] {
    struct Worker {
      const std::vector<std::string>* files = nullptr;
      bool random = false;
      std::shared_ptr<stoke::internal::JpegDecoder> decoder =
          std::make_shared<stoke::internal::JpegDecoder>();
      std::vector<std::byte> out = std::vector<std::byte>(kOut * kOut * 3);
      void operator()(size_t i) {
        const std::vector<char> jpeg = ReadFile((*files)[i]);
        stoke::internal::JpegHeader hdr;
        if (!decoder->Begin(std::as_bytes(std::span(jpeg)), uint64_t{1} << 27, &hdr).ok()) {
          std::abort();
        }
        stoke::internal::ResizeTarget target;
        const stoke::internal::Region region =
            ChooseRegion(hdr.width, hdr.height, random, i, &target);
        if (!decoder->Finish(region, target, out).ok()) std::abort();
      }
    };
    Worker worker;
    worker.files = &files;
    worker.random = random;
    return worker;
  });
}

// A Loader with T read threads (decoding on them), batches of 64, uint8 HWC
// 224x224, over an ImageFolder (`shards` false) or packed shards.
double Stoke(const std::string& path, bool shards, int threads, bool random) {
  stoke::ImageOptions image;
  image.crop = random ? stoke::CropMode::kRandomResized : stoke::CropMode::kCenter;
  image.flip = random;
  stoke::StatusOr<std::shared_ptr<stoke::Dataset>> d =
      shards ? stoke::OpenShards({.path = path, .image = image})
             : stoke::OpenImageFolder({.root = path, .image = image});
  if (!d.ok()) return std::fprintf(stderr, "%s\n", d.status().ToString().c_str()), 0;
  stoke::LoaderOptions o;
  o.batch_size = 64;
  o.read_threads = threads;
  o.order = stoke::Order::kFullShuffle;
  auto loader = stoke::Loader::Open(*d, o);
  if (!loader.ok()) return std::fprintf(stderr, "%s\n", loader.status().ToString().c_str()), 0;
  const auto t0 = Clock::now();
  uint64_t images = 0;
  for (stoke::Batch& b : (*loader)->Epoch(0)) images += static_cast<uint64_t>(b.size());
  return images / std::chrono::duration<double>(Clock::now() - t0).count();
}

// The folder's JPEGs rewritten with restart markers, as `stoke pack` stores
// them: into a folder of files (for the plain loop) and into shards.
bool MakeRestartCopies(const std::string& root, const std::string& folder,
                       const std::string& shards) {
  if (!std::filesystem::exists(folder)) {
    std::vector<std::byte> rewritten;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
      if (!e.is_regular_file()) continue;
      const std::vector<char> jpeg = ReadFile(e.path().string());
      const stoke::Status s =
          stoke::internal::AddRestartMarkers(std::as_bytes(std::span(jpeg)), &rewritten);
      if (!s.ok()) {
        std::fprintf(stderr, "%s: %s\n", e.path().c_str(), s.ToString().c_str());
        return false;
      }
      const auto out = std::filesystem::path(folder) / std::filesystem::relative(e.path(), root);
      std::filesystem::create_directories(out.parent_path());
      std::ofstream(out, std::ios::binary)
          .write(reinterpret_cast<const char*>(rewritten.data()),
                 static_cast<std::streamsize>(rewritten.size()));
    }
  }
  if (!std::filesystem::exists(shards)) {
    auto d = stoke::OpenImageFolder({.root = root});
    if (!d.ok()) return std::fprintf(stderr, "%s\n", d.status().ToString().c_str()), false;
    auto packed = stoke::Pack(**d, shards, {});
    if (!packed.ok()) {
      std::fprintf(stderr, "%s\n", packed.status().ToString().c_str());
      return false;
    }
  }
  return true;
}

std::vector<std::string> ListFiles(const std::string& root, uint64_t* bytes = nullptr) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    files.push_back(e.path().string());
    if (bytes) *bytes += e.file_size();
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) ReadFile(f);  // warm the page cache
  return files;
}

// Debian's python3-torch is for the system interpreter, which may not be the
// first python3 on PATH.
std::string Python() {
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

double Torch(const std::string& root, int threads, bool random) {
  const std::string script = R"PY(
import sys, time, torch, torchvision
from torchvision import transforms as T
root, workers, random = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.PILToTensor()] if random
               else [T.Resize(256), T.CenterCrop(224), T.PILToTensor()])
ds = torchvision.datasets.ImageFolder(root, transform=tf)
dl = torch.utils.data.DataLoader(ds, batch_size=64, shuffle=True, num_workers=workers)
t0 = time.time(); n = 0
for x, y in dl: n += x.shape[0]
print(n / (time.time() - t0))
)PY";
  const std::string path = "/tmp/stoke_image_bench_torch.py";
  std::ofstream(path) << script;
  const std::string cmd = Python() + " " + path + " " + root + " " + std::to_string(threads) + " " +
                          (random ? "1" : "0") + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return 0;
  double v = 0;
  if (std::fscanf(p, "%lf", &v) != 1) v = 0;
  pclose(p);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string work = argc > 1 ? argv[1] : "/tmp/stoke_bench";
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const int count = argc > 3 ? std::atoi(argv[3]) : 1000;
  const std::string root = work + "/images";
  if (!std::filesystem::exists(root)) {
    const std::string stoke = std::filesystem::path(argv[0]).parent_path().string() + "/stoke";
    const std::string cmd = stoke + " synth " + root + " --count " + std::to_string(count) +
                            " --classes 10 --min-side 375 --max-side 500 --seed 1";
    if (std::system(cmd.c_str()) != 0)
      return std::fprintf(stderr, "cannot run %s\n", cmd.c_str()), 1;
  }
  const std::string restart_root = work + "/images_restart";
  const std::string shards = work + "/shards_restart";
  if (!MakeRestartCopies(root, restart_root, shards)) return 1;
  uint64_t bytes = 0, restart_bytes = 0;
  const std::vector<std::string> files = ListFiles(root, &bytes);
  const std::vector<std::string> restart_files = ListFiles(restart_root, &restart_bytes);
  ListFiles(shards);

  const bool torch =
      std::system((Python() + " -c 'import torch, torchvision' 2>/dev/null").c_str()) == 0;
  std::printf(
      "image_bench: %zu JPEGs (375..500 px sides), %.1f MB (%.1f MB with restart markers),"
      " %d threads, %u cores, output %dx%d\n",
      files.size(), bytes / 1e6, restart_bytes / 1e6, threads, std::thread::hardware_concurrency(),
      kOut, kOut);
  std::printf(
      "plain: full-size TurboJPEG decode + the same resize, on the JPEGs as made.\n"
      "stoke: the loader on the same files, then on `stoke pack` shards of them\n"
      "(restart markers added losslessly: the same pixels). Warm page cache.\n\n");
  std::printf("%-15s %-15s %11s %9s %9s %8s\n", "crop", "reading", "img/s", "per core", "out MP/s",
              "ratio");
  bool ok = true;
  for (bool random : {false, true}) {
    const char* crop = random ? "random-resized" : "center";
    double plain = 0, plain_restart = 0, decoder = 0, folder = 0, packed = 0;
    for (int rep = 0; rep < 5; ++rep) {  // best of 5, interleaved
      plain = std::max(plain, Plain(files, threads, random));
      plain_restart = std::max(plain_restart, Plain(restart_files, threads, random));
      decoder = std::max(decoder, DecoderOnly(files, threads, random));
      folder = std::max(folder, Stoke(root, false, threads, random));
      packed = std::max(packed, Stoke(shards, true, threads, random));
    }
    const double target = random ? 2.0 : 1.5;
    ok = ok && packed / plain >= target;
    auto row = [&](const char* what, double rate) {
      std::printf("%-15s %-15s %11.0f %9.0f %9.1f %7.2fx\n", crop, what, rate, rate / threads,
                  rate * kOut * kOut / 1e6, rate / plain);
    };
    row("plain loop", plain);
    row("stoke, files", folder);
    row("stoke, shards", packed);
    std::printf(
        "%-15s target %.1fx from shards. The plain loop on the rewritten files: %.0f img/s"
        " (%.2fx); stoke's decoder alone on the files: %.0f img/s (%.2fx)\n",
        "", target, plain_restart, plain_restart / plain, decoder, decoder / plain);
    if (torch) {
      const double t = Torch(root, threads, random);
      std::printf(
          "%-15s PyTorch DataLoader: %.0f img/s; stoke %.2fx on the files, %.2fx on"
          " shards (target 3x)\n",
          "", t, t > 0 ? folder / t : 0, t > 0 ? packed / t : 0);
      ok = ok && t > 0 && folder / t >= 3.0;
    }
  }
  if (!torch) std::printf("PyTorch comparison skipped: python3-torch/torchvision not importable\n");
  std::printf("%s\n", ok ? "PASS" : "FAIL: below target");
  return ok ? 0 : 1;
}

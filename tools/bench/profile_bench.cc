// profile_bench: what does profiling cost?
//
// The loader always keeps its per-thread counters; `stoke profile --trace`
// adds a trace event per read, decode, copy and wait. This program runs, in one
// process and alternating to share any drift, loaders with the trace off and
// on (10 epochs each for Fashion-MNIST, 1 for the images; ROUNDS pairs), over Fashion-MNIST
// (cheap samples, where per-event costs show most) and over a synthetic JPEG folder if one is
// given, and prints the best throughput of each and their ratio (target: on / off >= 0.97).
//
// usage: profile_bench [IDX_DIR] [IMAGE_FOLDER] [ROUNDS]
//        (default /usr/share/datasets/fashion-mnist, none, 15)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "stoke/stoke.h"

namespace {

double SamplesPerSecond(const std::shared_ptr<stoke::Dataset>& d, bool trace, int epochs) {
  stoke::LoaderOptions o;
  o.batch_size = 64;
  o.order = stoke::Order::kFullShuffle;
  o.trace_events = trace ? uint64_t{1} << 20 : 0;  // as stoke profile --trace
  auto loader = stoke::Loader::Open(d, o);
  if (!loader.ok()) {
    std::fprintf(stderr, "profile_bench: %s\n", loader.status().ToString().c_str());
    std::exit(1);
  }
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t samples = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    for (stoke::Batch& b : (*loader)->Epoch(epoch)) samples += static_cast<uint64_t>(b.size());
  }
  return static_cast<double>(samples) /
         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs off and on back to back, `rounds` times; the verdict is the median of
// the paired ratios, which cancels most of a shared VM's drift.
bool Compare(const char* name, const std::shared_ptr<stoke::Dataset>& d, int rounds, int epochs) {
  double off = 0, on = 0;
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r) {
    const double a = SamplesPerSecond(d, false, epochs);
    const double b = SamplesPerSecond(d, true, epochs);
    off = std::max(off, a);
    on = std::max(on, b);
    ratios.push_back(b / a);
  }
  std::sort(ratios.begin(), ratios.end());
  const double ratio = ratios[ratios.size() / 2];
  std::printf(
      "%-14s trace off %.0f samples/s, on %.0f samples/s (best of %d); median paired "
      "ratio %.3f %s\n",
      name, off, on, rounds, ratio, ratio >= 0.97 ? "PASS" : "FAIL");
  return ratio >= 0.97;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string idx = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const std::string images = argc > 2 ? argv[2] : "";
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 15;
  bool pass = true;
  auto mnist = stoke::OpenIdxSplit(idx, "train");
  if (!mnist.ok()) {
    std::fprintf(stderr, "profile_bench: %s\n", mnist.status().ToString().c_str());
    return 1;
  }
  pass &= Compare("Fashion-MNIST", *mnist, rounds, 10);
  if (!images.empty()) {
    stoke::ImageFolderOptions fo;
    fo.root = images;
    auto folder = stoke::OpenImageFolder(fo);
    if (!folder.ok()) {
      std::fprintf(stderr, "profile_bench: %s\n", folder.status().ToString().c_str());
      return 1;
    }
    pass &= Compare("JPEG folder", *folder, std::max(1, rounds / 2), 1);
  }
  std::printf("profile_bench: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}

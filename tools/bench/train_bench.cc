// train_bench: is stoke's CPU training epoch at least 5x PyTorch's?
//
// On the same machine, data and split (the first 85% of Fashion-MNIST's
// training set), it trains the same MLP (784-300-100-10, ReLU, softmax
// cross-entropy), with SGD lr 0.01 and batches of 32, for EPOCHS epochs:
//   stoke:   a shuffling loader and stoke::train's oneDNN step, in this process;
//   PyTorch: tools/bench/train_torch.py under the system python3 (Debian
//            python3-torch): TensorDataset, shuffling DataLoader, nn.Sequential.
// Both use THREADS threads. It prints every epoch's time, loss and accuracy,
// the median epoch time of each, and their ratio (target: PyTorch / stoke >= 5).
//
// usage: train_bench [IDX_DIR] [EPOCHS] [THREADS] [TORCH_EPOCHS]
//        (default /usr/share/datasets/fashion-mnist 3 2 2)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "stoke/stoke.h"
#include "stoke/train.h"

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void Check(const stoke::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "train_bench: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 3;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const int torch_epochs = argc > 4 ? std::atoi(argv[4]) : 2;
  if (epochs < 1 || threads < 1 || torch_epochs < 0) {
    std::fprintf(stderr, "usage: train_bench [IDX_DIR] [EPOCHS] [THREADS] [TORCH_EPOCHS]\n");
    return 2;
  }
  setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);  // oneDNN's, before first use

  auto all = stoke::OpenIdxSplit(dir, "train");
  Check(all.status(), "OpenIdxSplit");
  const uint64_t n = (*all)->size();
  const uint64_t n_train = n - static_cast<uint64_t>(0.15 * static_cast<double>(n) + 0.5);
  auto train_set = stoke::Slice(*all, 0, n_train);
  Check(train_set.status(), "Slice");
  stoke::LoaderOptions o;
  o.batch_size = 32;
  o.order = stoke::Order::kFullShuffle;
  o.read_threads = threads;
  auto loader = stoke::Loader::Open(*train_set, o);
  Check(loader.status(), "Loader::Open");
  auto trainer = stoke::train::Trainer::Open({}, (*loader)->sample_spec());
  Check(trainer.status(), "Trainer::Open");
  std::printf("train_bench: %s, %llu samples, batch 32, SGD lr 0.01, %d threads\n",
              (*trainer)->Describe().c_str(), static_cast<unsigned long long>(n_train), threads);

  std::vector<double> stoke_seconds;
  for (int e = 0; e < epochs; ++e) {
    stoke::train::StepResult r;
    const auto t0 = std::chrono::steady_clock::now();
    while (true) {
      auto b = (*loader)->Next();
      Check(b.status(), "Loader::Next");
      if (!*b) break;
      Check((*trainer)->Step(*b, &r), "Trainer::Step");
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stoke_seconds.push_back(s);
    std::printf("stoke    epoch %d  %.3f s  loss %.4f  accuracy %.4f\n", e + 1, s, r.loss(),
                r.accuracy());
    std::fflush(stdout);
  }

  std::vector<double> torch_seconds;
  if (torch_epochs > 0) {
    const std::string script = std::string(STOKE_SOURCE_DIR) + "/tools/bench/train_torch.py";
    const std::string command = "/usr/bin/python3 " + script + " " + dir + " " +
                                std::to_string(torch_epochs) + " 32 " + std::to_string(threads) +
                                " 0.15 2>&1";
    FILE* p = popen(command.c_str(), "r");
    char line[512];
    while (p && std::fgets(line, sizeof line, p)) {
      double s, loss, accuracy;
      if (std::sscanf(line, "epoch %lf %lf %lf", &s, &loss, &accuracy) == 3) {
        torch_seconds.push_back(s);
        std::printf("PyTorch  epoch %zu  %.3f s  loss %.4f  accuracy %.4f\n", torch_seconds.size(),
                    s, loss, accuracy);
        std::fflush(stdout);
      } else {
        std::printf("PyTorch: %s", line);
      }
    }
    if (p) pclose(p);
  }
  const double stoke_median = Median(stoke_seconds);
  std::printf("median epoch: stoke %.3f s", stoke_median);
  if (torch_seconds.empty()) {
    std::printf("; PyTorch did not run (python3-torch missing?)\n");
    return 0;
  }
  const double ratio = Median(torch_seconds) / stoke_median;
  std::printf(", PyTorch %.3f s: stoke is %.1fx faster %s\n", Median(torch_seconds), ratio,
              ratio >= 5 ? "PASS" : "FAIL");
  return ratio >= 5 ? 0 : 1;
}

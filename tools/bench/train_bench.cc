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
// With a CUDA device (and stoke built with cuDNN), it then prints the CPU-vs-GPU
// table: stoke's epoch on the CPU and on cuda:0 (loader delivering to the GPU,
// CUDA graphs, one Collect an epoch) for the MLP and the small CNN
// (cnn:32-64-128-10) at batches of 32 and 256. Target: the batch-32 MLP's GPU
// epoch at least 5x faster than its CPU epoch.
//
// usage: train_bench [IDX_DIR] [EPOCHS] [THREADS] [TORCH_EPOCHS]
//        (default /usr/share/datasets/fashion-mnist 3 2 2)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
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

// The median epoch time of `model` trained on `data` at `batch` on `device`.
double EpochSeconds(const std::shared_ptr<stoke::Dataset>& data, const std::string& model,
                    int batch, stoke::DeviceSpec device, int threads, int epochs,
                    stoke::train::StepResult* last) {
  stoke::LoaderOptions o;
  o.batch_size = batch;
  o.order = stoke::Order::kFullShuffle;
  o.read_threads = threads;
  o.device = device;
  auto loader = stoke::Loader::Open(data, o);
  Check(loader.status(), "Loader::Open");
  stoke::train::TrainOptions t;
  t.model = model;
  t.device = device;
  t.threads = threads;
  auto trainer = stoke::train::Trainer::Open(t, (*loader)->sample_spec());
  Check(trainer.status(), "Trainer::Open");
  std::vector<double> seconds;
  for (int e = 0; e < epochs; ++e) {
    *last = {};
    const auto t0 = std::chrono::steady_clock::now();
    for (stoke::Batch& b : (*loader)->Epoch(e)) Check((*trainer)->Step(b, nullptr), "Step");
    Check((*trainer)->Collect(last), "Collect");
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return Median(seconds);
}

// The CPU-vs-GPU table; true when the batch-32 MLP's target holds.
bool GpuTable(const std::shared_ptr<stoke::Dataset>& data, int threads, int epochs) {
  const stoke::DeviceSpec cpu{}, gpu{stoke::DeviceKind::kCuda, 0};
  {
    stoke::train::TrainOptions t;
    t.device = gpu;
    auto trainer = stoke::train::Trainer::Open(t, data->spec());
    if (!trainer.ok()) {
      std::printf("GPU table skipped: %s\n", trainer.status().ToString().c_str());
      return true;
    }
    std::printf("\nGPU: %s\n", (*trainer)->Describe().c_str());
  }
  std::printf("%-22s %6s %12s %12s %8s %14s\n", "model", "batch", "cpu epoch s", "gpu epoch s",
              "gpu/cpu", "gpu accuracy");
  bool ok = true;
  for (const char* model : {"mlp:784-300-100-10", "cnn:32-64-128-10"}) {
    for (int batch : {32, 256}) {
      stoke::train::StepResult c, g;
      const double cpu_s = EpochSeconds(data, model, batch, cpu, threads, epochs, &c);
      const double gpu_s = EpochSeconds(data, model, batch, gpu, threads, epochs, &g);
      std::printf("%-22s %6d %12.3f %12.3f %7.1fx %14.4f\n", model, batch, cpu_s, gpu_s,
                  cpu_s / gpu_s, g.accuracy());
      std::fflush(stdout);
      if (std::string(model).starts_with("mlp") && batch == 32) ok = cpu_s / gpu_s >= 5;
    }
  }
  std::printf("batch-32 MLP on the GPU: %s (target 5x its CPU epoch)\n", ok ? "PASS" : "FAIL");
  return ok;
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
  bool ok = true;
  if (torch_seconds.empty()) {
    std::printf("; PyTorch did not run (python3-torch missing?)\n");
  } else {
    const double ratio = Median(torch_seconds) / stoke_median;
    std::printf(", PyTorch %.3f s: stoke is %.1fx faster %s\n", Median(torch_seconds), ratio,
                ratio >= 5 ? "PASS" : "FAIL");
    ok = ratio >= 5;
  }
  if (stoke::CudaDeviceCount() > 0) {
    ok = GpuTable(*train_set, threads, epochs) && ok;
  } else {
    std::printf("GPU table skipped: no CUDA device visible\n");
  }
  return ok ? 0 : 1;
}

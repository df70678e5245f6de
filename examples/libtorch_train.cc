// A libtorch training loop (a torch::nn model, torch::optim::SGD) fed by stoke
// through stoke/torch.h, or by libtorch's own torch::data DataLoader with the
// same decoding (TurboJPEG), random-resized crops and flips, for comparison.
// The model step is the same code for both. Prints images/s and the epoch time.
//
//   libtorch_train ROOT [--loader stoke|torchdata] [--epochs 2] [--batch 64]
//                  [--size 224] [--threads 2] [--torch-threads 1] [--steps N]
//                  [--lr 0.05] [--seed 1]
//                  [--mpi] [--union-of-ranks N] [--report FILE]
//
// ROOT is an ImageFolder of JPEGs (class folders) or, for stoke, the shards
// `stoke pack` made of one. --threads: stoke's decode threads, or torch::data's
// workers; --torch-threads: libtorch's own (intra-op) threads, for the step and
// for torch::data's resizing.
//
// Many ranks (--mpi, built when CMake finds MPI): each rank opens its own
// loader on its shard of every epoch (rank and world size from
// MPI_COMM_WORLD), starts from rank 0's parameters, and averages the gradients
// with MPI_Allreduce after each backward pass, so every rank ends with the same
// parameters:
//
//   mpirun -np 2 libtorch_train /data/photos --mpi
//
// --union-of-ranks N trains one process on what N ranks would read together:
// at each step, the union of the N ranks' batches (the check that gradient
// averaging is exact). --report FILE writes the run's batch count, the dataset
// indices it read and its final parameters, one per line (with --mpi, each
// rank to FILE.RANK).
#include <torch/torch.h>
#include <turbojpeg.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#ifdef STOKE_EXAMPLE_MPI
#include <mpi.h>
#endif

#include "stoke/stoke.h"
#include "stoke/torch.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string root;
  std::string loader = "stoke";
  int epochs = 2;
  int64_t batch = 64;
  int size = 224;
  int threads = 2;
  int torch_threads = 1;
  int64_t steps = -1;  // per epoch; -1: all
  double lr = 0.05;
  uint64_t seed = 1;
  bool mpi = false;
  int union_of_ranks = 0;
  std::string report;
  int64_t stop_after = -1;  // steps, then write --checkpoint and exit (a preempted job)
  std::string checkpoint;
  std::string resume;  // a --checkpoint folder to continue from, on any number of ranks
};

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "libtorch_train: %s\nusage: libtorch_train ROOT [--loader stoke|torchdata] "
               "[--epochs N] [--batch N] [--size N] [--threads N] [--torch-threads N] [--steps N] "
               "[--lr X] "
               "[--seed N] [--mpi] [--union-of-ranks N] [--report FILE] "
               "[--stop-after STEPS --checkpoint DIR] [--resume DIR]\n",
               why.c_str());
  std::exit(2);
}

int64_t Number(const std::string& flag, const char* text, int64_t low, int64_t high) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v < low || v > high) {
    Usage(flag + ": '" + text + "' is not a whole number in [" + std::to_string(low) + ", " +
          std::to_string(high) + "]");
  }
  return v;
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--loader") {
      a.loader = value();
      if (a.loader != "stoke" && a.loader != "torchdata") {
        Usage("--loader: '" + a.loader + "' is not stoke or torchdata");
      }
    } else if (arg == "--epochs") {
      a.epochs = static_cast<int>(Number(arg, value(), 1, 100000));
    } else if (arg == "--batch") {
      a.batch = Number(arg, value(), 1, 1 << 16);
    } else if (arg == "--size") {
      a.size = static_cast<int>(Number(arg, value(), 8, 4096));
    } else if (arg == "--threads") {
      a.threads = static_cast<int>(Number(arg, value(), 1, 1024));
    } else if (arg == "--torch-threads") {
      a.torch_threads = static_cast<int>(Number(arg, value(), 1, 1024));
    } else if (arg == "--steps") {
      a.steps = Number(arg, value(), 1, int64_t{1} << 40);
    } else if (arg == "--lr") {
      a.lr = std::atof(value());
      if (!(a.lr > 0 && a.lr < 100)) Usage("--lr: not a rate in (0, 100)");
    } else if (arg == "--seed") {
      a.seed = static_cast<uint64_t>(Number(arg, value(), 0, int64_t{1} << 62));
    } else if (arg == "--mpi") {
      a.mpi = true;
    } else if (arg == "--union-of-ranks") {
      a.union_of_ranks = static_cast<int>(Number(arg, value(), 1, 1024));
    } else if (arg == "--report") {
      a.report = value();
    } else if (arg == "--stop-after") {
      a.stop_after = Number(arg, value(), 1, int64_t{1} << 40);
    } else if (arg == "--checkpoint") {
      a.checkpoint = value();
    } else if (arg == "--resume") {
      a.resume = value();
    } else if (arg.rfind("--", 0) == 0 || !a.root.empty()) {
      Usage("unknown argument '" + arg + "'");
    } else {
      a.root = arg;
    }
  }
  if (a.root.empty()) Usage("no ROOT given");
  if (a.loader == "torchdata" && (a.mpi || a.union_of_ranks > 0)) {
    Usage("--mpi and --union-of-ranks feed the model from stoke (--loader stoke)");
  }
  if (a.mpi && a.union_of_ranks > 0) Usage("--mpi and --union-of-ranks exclude each other");
  if ((a.stop_after > 0) != !a.checkpoint.empty())
    Usage("--stop-after and --checkpoint go together");
  if ((!a.checkpoint.empty() || !a.resume.empty()) &&
      (a.loader != "stoke" || a.union_of_ranks > 0)) {
    Usage(
        "--checkpoint and --resume: a stoke loader per rank (not torchdata, not --union-of-ranks)");
  }
  return a;
}

// ---- The model, the same for both loaders ----

// Images in, class scores out: every 8th pixel of every 8th row of the uint8
// NCHW images, scaled to [0, 1], and a two-layer perceptron on them. Small on
// purpose (converting whole 224x224 batches to float alone takes 100 ms a batch
// on these cores): the comparison is of the loaders, and a step this cheap
// shows which one keeps the cores busy.
struct NetImpl : torch::nn::Module {
  static int64_t Sampled(int side) { return (side + 15) / 16; }

  NetImpl(int size, int64_t classes)
      : hidden(register_module("hidden", torch::nn::Linear(3 * Sampled(size) * Sampled(size), 32))),
        out(register_module("out", torch::nn::Linear(32, classes))) {}

  torch::Tensor forward(const torch::Tensor& images) {
    using torch::indexing::None;
    using torch::indexing::Slice;
    torch::Tensor x =
        images.index({Slice(), Slice(), Slice(None, None, 16), Slice(None, None, 16)});
    x = x.to(torch::kFloat).div_(255).flatten(1);
    return out(torch::relu(hidden(x)));
  }

  torch::nn::Linear hidden, out;
};
TORCH_MODULE(Net);

// One step: forward, loss, backward, `reduce` on the gradients (the ranks'
// average under MPI), update. Returns the loss.
template <typename Reduce>
double Step(Net& net, torch::optim::SGD& sgd, const torch::Tensor& images,
            const torch::Tensor& labels, Reduce&& reduce) {
  sgd.zero_grad();
  torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(images), labels);
  loss.backward();
  reduce(net);
  sgd.step();
  return loss.item<double>();
}

// ---- torch::data: an ImageFolder decoded with TurboJPEG in full, then cropped
// and resized (antialiased bilinear) as torchvision's RandomResizedCrop does ----

class JpegFolder : public torch::data::datasets::Dataset<JpegFolder> {
 public:
  JpegFolder(const std::string& root, int size, uint64_t seed) : size_(size), seed_(seed) {
    std::vector<fs::path> classes;
    for (const auto& e : fs::directory_iterator(root)) {
      if (e.is_directory()) classes.push_back(e.path());
    }
    std::sort(classes.begin(), classes.end());
    for (size_t label = 0; label < classes.size(); ++label) {
      std::vector<fs::path> files;
      for (const auto& e : fs::recursive_directory_iterator(classes[label])) {
        const std::string ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".JPEG")) {
          files.push_back(e.path());
        }
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) samples_.push_back({f.string(), static_cast<int64_t>(label)});
    }
  }

  torch::data::Example<> get(size_t index) override {
    const Sample& s = samples_.at(index);
    // The file in one read, and one TurboJPEG handle per worker thread, as a
    // careful torch::data pipeline would have them.
    std::ifstream in(s.path, std::ios::binary | std::ios::ate);
    if (!in) throw std::runtime_error(s.path + ": cannot be opened");
    std::vector<unsigned char> bytes(static_cast<size_t>(in.tellg()));
    in.seekg(0);
    if (!in.read(reinterpret_cast<char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()))) {
      throw std::runtime_error(s.path + ": cannot be read");
    }
    thread_local std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitDecompress(), tjDestroy);
    int w = 0, h = 0, subsamp = 0, colorspace = 0;
    if (tjDecompressHeader3(tj.get(), bytes.data(), bytes.size(), &w, &h, &subsamp, &colorspace) !=
        0) {
      throw std::runtime_error(s.path + ": not a JPEG");
    }
    torch::Tensor hwc = torch::empty({h, w, 3}, torch::kByte);
    const int rc = tjDecompress2(tj.get(), bytes.data(), bytes.size(), hwc.data_ptr<uint8_t>(), w,
                                 0, h, TJPF_RGB, TJFLAG_ACCURATEDCT);
    if (rc != 0) throw std::runtime_error(s.path + ": a corrupt JPEG");
    std::mt19937_64 rng(seed_ * 1000003 + index + (*draws_)++ * 7919);
    const auto [y, x, ch, cw] = RandomResizedCrop(h, w, rng);
    torch::Tensor crop = hwc.slice(0, y, y + ch)
                             .slice(1, x, x + cw)
                             .permute({2, 0, 1})
                             .unsqueeze(0)
                             .to(torch::kFloat);
    namespace F = torch::nn::functional;
    torch::Tensor out = F::interpolate(crop, F::InterpolateFuncOptions()
                                                 .size(std::vector<int64_t>{size_, size_})
                                                 .mode(torch::kBilinear)
                                                 .align_corners(false)
                                                 .antialias(true));
    if (rng() & 1) out = out.flip(3);
    out = out.round_().clamp_(0, 255).to(torch::kByte).squeeze(0).contiguous();
    return {out, torch::tensor(s.label, torch::kLong)};
  }

  torch::optional<size_t> size() const override { return samples_.size(); }

 private:
  struct Sample {
    std::string path;
    int64_t label;
  };

  // torchvision's RandomResizedCrop: scale (0.08, 1), ratio (3/4, 4/3), ten
  // tries, then the centre crop of the clamped ratio.
  std::array<int, 4> RandomResizedCrop(int h, int w, std::mt19937_64& rng) const {
    std::uniform_real_distribution<double> scale(0.08, 1.0);
    std::uniform_real_distribution<double> log_ratio(std::log(3.0 / 4), std::log(4.0 / 3));
    const double area = static_cast<double>(h) * w;
    for (int i = 0; i < 10; ++i) {
      const double target = area * scale(rng);
      const double ratio = std::exp(log_ratio(rng));
      const int cw = static_cast<int>(std::lround(std::sqrt(target * ratio)));
      const int ch = static_cast<int>(std::lround(std::sqrt(target / ratio)));
      if (cw > 0 && ch > 0 && cw <= w && ch <= h) {
        const int y = static_cast<int>(rng() % static_cast<uint64_t>(h - ch + 1));
        const int x = static_cast<int>(rng() % static_cast<uint64_t>(w - cw + 1));
        return {y, x, ch, cw};
      }
    }
    const double in_ratio = static_cast<double>(w) / h;
    int cw = w, ch = h;
    if (in_ratio < 3.0 / 4) ch = static_cast<int>(std::lround(w / (3.0 / 4)));
    if (in_ratio > 4.0 / 3) cw = static_cast<int>(std::lround(h * (4.0 / 3)));
    return {(h - ch) / 2, (w - cw) / 2, ch, cw};
  }

  std::vector<Sample> samples_;
  int size_;
  uint64_t seed_;
  // Draws so far, shared by the workers: a fresh crop each time a sample is drawn.
  std::shared_ptr<std::atomic<uint64_t>> draws_ = std::make_shared<std::atomic<uint64_t>>(0);
};

// ---- Runs ----

struct EpochFigures {
  int64_t images = 0;
  double seconds = 0;
  double step_seconds = 0;  // in the model step (the rest: waiting for data)
  double loss = 0;
};

void PrintEpoch(const std::string& loader, int epoch, const EpochFigures& f) {
  std::printf(
      "%-9s epoch %d: %lld images in %.2f s, %.0f images/s; the step took %.0f%% of it; loss "
      "%.3f\n",
      loader.c_str(), epoch, static_cast<long long>(f.images), f.seconds, f.images / f.seconds,
      100 * f.step_seconds / f.seconds, f.loss);
  std::fflush(stdout);
}

// What a run read and learned, for --report.
struct Trace {
  int64_t batches = 0;
  std::vector<std::vector<uint64_t>> indices;  // per epoch, in the order trained on
};

void WriteReport(const std::string& path, const Trace& trace, Net& net) {
  std::ofstream out(path);
  out << "batches " << trace.batches << '\n';
  for (size_t epoch = 0; epoch < trace.indices.size(); ++epoch) {
    out << "epoch " << epoch;
    for (uint64_t i : trace.indices[epoch]) out << ' ' << i;
    out << '\n';
  }
  out << "parameters";
  out.precision(9);
  for (const torch::Tensor& p : net->parameters()) {
    const torch::Tensor flat = p.detach().flatten().contiguous();
    const float* values = flat.data_ptr<float>();
    for (int64_t i = 0; i < flat.numel(); ++i) out << ' ' << values[i];
  }
  out << '\n';
  if (!out) {
    std::fprintf(stderr, "libtorch_train: --report: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

[[noreturn]] void Fail(const stoke::Status& s) {
  std::fprintf(stderr, "libtorch_train: %s\n", s.ToString().c_str());
  std::exit(1);
}

template <typename T>
T Take(stoke::StatusOr<T> v) {
  if (!v.ok()) Fail(v.status());
  return std::move(*v);
}

std::shared_ptr<stoke::Dataset> OpenStokeDataset(const Args& a) {
  stoke::ImageOptions image;
  image.height = image.width = a.size;
  image.crop = stoke::CropMode::kRandomResized;
  image.flip = true;
  bool shards = false;
  for (const auto& e : fs::directory_iterator(a.root)) shards |= e.path().extension() == ".stk";
  if (shards) return Take(stoke::OpenShards({.path = a.root, .image = image}));
  return Take(stoke::OpenImageFolder({.root = a.root, .image = image}));
}

std::unique_ptr<stoke::Loader> OpenLoader(const Args& a, std::shared_ptr<stoke::Dataset> data,
                                          int rank, int world, stoke::Position start = {}) {
  stoke::LoaderOptions o;
  o.start = std::move(start);
  o.batch_size = a.batch;
  o.order = stoke::Order::kFullShuffle;
  o.seed = a.seed;
  o.rank = rank;
  o.world_size = world;
  o.decode_threads = a.threads;
  return Take(stoke::Loader::Open(std::move(data), o));
}

#ifdef STOKE_EXAMPLE_MPI
// Every rank starts from rank 0's parameters.
void BroadcastParameters(Net& net) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : net->parameters()) {
    MPI_Bcast(p.data_ptr<float>(), static_cast<int>(p.numel()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  }
}

// The gradients' average over the ranks, in place: one MPI_Allreduce of them
// all, flattened.
void AverageGradients(Net& net, int world) {
  std::vector<torch::Tensor> grads;
  for (const torch::Tensor& p : net->parameters()) grads.push_back(p.grad().flatten());
  torch::Tensor flat = torch::cat(grads);
  MPI_Allreduce(MPI_IN_PLACE, flat.data_ptr<float>(), static_cast<int>(flat.numel()), MPI_FLOAT,
                MPI_SUM, MPI_COMM_WORLD);
  flat.div_(world);
  int64_t at = 0;
  for (const torch::Tensor& p : net->parameters()) {
    p.grad().copy_(flat.slice(0, at, at + p.numel()).view_as(p));
    at += p.numel();
  }
}
#endif

// ---- Checkpoints: the loader's position (any rank's: they are equal) and the
// parameters (equal on every rank), as text. Plain SGD keeps no other state.

void WriteCheckpoint(const std::string& dir, const stoke::Position& at, Net& net) {
  fs::create_directories(dir);
  std::ofstream position(dir + "/position");
  position << stoke::PositionToText(at) << '\n';
  std::ofstream parameters(dir + "/parameters");
  parameters.precision(9);  // enough digits to read a float back exactly
  for (const torch::Tensor& p : net->parameters()) {
    const torch::Tensor flat = p.detach().flatten().contiguous();
    for (int64_t i = 0; i < flat.numel(); ++i) parameters << flat.data_ptr<float>()[i] << '\n';
  }
  if (!position || !parameters) {
    std::fprintf(stderr, "libtorch_train: --checkpoint: cannot write %s\n", dir.c_str());
    std::exit(1);
  }
}

stoke::Position ReadCheckpoint(const std::string& dir, Net& net) {
  std::ifstream position(dir + "/position");
  std::string line;
  if (!std::getline(position, line)) {
    std::fprintf(stderr, "libtorch_train: --resume: cannot read %s/position\n", dir.c_str());
    std::exit(1);
  }
  stoke::Position at = Take(stoke::ParsePosition(line));
  std::ifstream parameters(dir + "/parameters");
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : net->parameters()) {
    torch::Tensor flat = torch::empty({p.numel()}, torch::kFloat32);
    for (int64_t i = 0; i < flat.numel(); ++i) {
      if (!(parameters >> flat.data_ptr<float>()[i])) {
        std::fprintf(stderr, "libtorch_train: --resume: %s/parameters is short\n", dir.c_str());
        std::exit(1);
      }
    }
    p.copy_(flat.view_as(p));
  }
  return at;
}

// Trains from stoke: one loader (this rank's), or --union-of-ranks loaders
// whose batches are joined at each step.
void TrainFromStoke(const Args& a, int rank, int world, Trace* trace, Net& net) {
  std::shared_ptr<stoke::Dataset> data = OpenStokeDataset(a);
  std::vector<std::unique_ptr<stoke::Loader>> loaders;
  if (a.union_of_ranks > 0) {
    for (int r = 0; r < a.union_of_ranks; ++r)
      loaders.push_back(OpenLoader(a, data, r, a.union_of_ranks));
  } else if (!a.resume.empty()) {
    // The saved position, on this run's ranks and batch size: the same ones
    // resume exactly; others continue the epoch with what was not delivered.
    loaders.push_back(OpenLoader(a, data, rank, world, ReadCheckpoint(a.resume, net)));
  } else {
    loaders.push_back(OpenLoader(a, data, rank, world));
  }
  const int64_t first_epoch = loaders[0]->position().epoch;
  int64_t steps_run = 0;
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(a.lr));
  auto reduce = [&](Net& n) {
#ifdef STOKE_EXAMPLE_MPI
    if (a.mpi) AverageGradients(n, world);
#endif
    (void)n;
  };
  for (int64_t epoch = first_epoch; epoch < a.epochs; ++epoch) {
    for (auto& l : loaders) {
      // After a whole epoch the loader is at the next one's start already;
      // after --steps, mid-way: then it seeks (dropping what it read ahead).
      // A resumed epoch goes on from where it was.
      if (l->position() == stoke::Position{epoch, 0}) continue;
      if (!a.resume.empty() && epoch == first_epoch) continue;
      if (stoke::Status s = l->Seek({epoch, 0}); !s.ok()) Fail(s);
    }
    EpochFigures f;
    trace->indices.emplace_back();
    const auto start = Clock::now();
    for (int64_t step = 0; a.steps < 0 || step < a.steps; ++step) {
      std::vector<torch::Tensor> images, labels;
      for (auto& l : loaders) {
        stoke::Batch batch = Take(l->Next());
        if (!batch) break;
        for (uint64_t i : batch.indices()) trace->indices.back().push_back(i);
        auto [x, y] = stoke::torch::ToTensors(std::move(batch));
        images.push_back(std::move(x));
        labels.push_back(std::move(y));
      }
      if (images.size() < loaders.size()) break;  // the epoch's end (equal for every rank)
      const auto t0 = Clock::now();
      torch::Tensor x = images.size() == 1 ? images[0] : torch::cat(images);
      torch::Tensor y = labels.size() == 1 ? labels[0] : torch::cat(labels);
      f.loss = Step(net, sgd, x, y, reduce);
      f.step_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
      f.images += x.size(0);
      ++trace->batches;
      if (++steps_run == a.stop_after) {
        if (rank == 0) WriteCheckpoint(a.checkpoint, loaders[0]->position(), net);
        return;
      }
    }
    f.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (rank == 0) PrintEpoch("stoke", static_cast<int>(epoch), f);
  }
}

void TrainFromTorchData(const Args& a, Net& net) {
  JpegFolder folder(a.root, a.size, a.seed);
  if (folder.size().value_or(0) == 0) {
    // Shards, a tar or an empty folder: the torch::data baseline reads class
    // folders of JPEGs only, and an epoch of nothing would look like success.
    Usage("--loader torchdata: " + a.root +
          " holds no class folders of .jpg/.jpeg files (the torch::data baseline reads an "
          "ImageFolder only; packed shards and tars are for --loader stoke)");
  }
  auto data = std::move(folder).map(torch::data::transforms::Stack<>());
  auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      std::move(data), torch::data::DataLoaderOptions().batch_size(a.batch).workers(a.threads));
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(a.lr));
  for (int epoch = 0; epoch < a.epochs; ++epoch) {
    EpochFigures f;
    const auto start = Clock::now();
    int64_t step = 0;
    for (auto& batch : *loader) {
      if (a.steps >= 0 && step++ >= a.steps) break;
      const auto t0 = Clock::now();
      f.loss = Step(net, sgd, batch.data, batch.target, [](Net&) {});
      f.step_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
      f.images += batch.data.size(0);
    }
    f.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    PrintEpoch("torchdata", epoch, f);
  }
}

int64_t CountClasses(const std::string& root) {
  // The class folders of an ImageFolder; for shards, the labels they hold.
  int64_t folders = 0;
  for (const auto& e : fs::directory_iterator(root)) folders += e.is_directory() ? 1 : 0;
  if (folders > 0) return folders;
  auto data = Take(stoke::OpenShards({.path = root}));
  int64_t classes = 0;
  for (uint64_t i = 0; i < data->size(); ++i) {
    classes = std::max(classes, data->StoredLabel(i).value_or(0) + 1);
  }
  return classes;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  int rank = 0, world = 1;
  if (a.mpi) {
#ifdef STOKE_EXAMPLE_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
#else
    Usage("--mpi: this build found no MPI");
#endif
  }
  // The step on one core by default: the loaders' threads have the others (and
  // libtorch's idle OpenMP threads would spin on the cores the decoders need).
  torch::set_num_threads(a.torch_threads);
  torch::manual_seed(a.seed);
  Net net(a.size, std::max<int64_t>(CountClasses(a.root), 2));
#ifdef STOKE_EXAMPLE_MPI
  if (a.mpi) BroadcastParameters(net);
#endif
  Trace trace;
  if (a.loader == "stoke") {
    TrainFromStoke(a, rank, world, &trace, net);
  } else {
    TrainFromTorchData(a, net);
  }
  if (!a.report.empty()) {
    WriteReport(a.mpi ? a.report + "." + std::to_string(rank) : a.report, trace, net);
  }
#ifdef STOKE_EXAMPLE_MPI
  if (a.mpi) MPI_Finalize();
#endif
  return 0;
}

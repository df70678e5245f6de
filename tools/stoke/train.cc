#include "train.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>

#include "json.h"
#include "pipeline_flags.h"
#include "stoke/train.h"

namespace stoke::cli {
namespace {

// printf format: %s is the shared pipeline flags.
const char kTrainUsage[] =
    "usage: stoke train PATH [options]\n"
    "\n"
    "Trains a model on the dataset at PATH through a stoke loader. Per epoch it prints the\n"
    "time, loss, accuracy, validation loss and validation accuracy; at the end the test\n"
    "accuracy when the dataset has a test split (IDX, CIFAR).\n"
    "\n"
    "model:\n"
    "  --model SPEC                   mlp:IN-HIDDEN...-CLASSES or cnn:C1-C2-HIDDEN-CLASSES\n"
    "                                 (default mlp:784-300-100-10)\n"
    "  --epochs N                     epochs (default 1)\n"
    "  --optimizer sgd|adam           (default sgd)\n"
    "  --lr X                         learning rate (default 0.01)\n"
    "  --momentum X                   SGD momentum (default 0)\n"
    "  --weight-decay X               (default 0)\n"
    "  --val-split F                  a fraction F of the training data validates (default\n"
    "                                 0): the same fraction of every class, chosen by\n"
    "                                 --val-seed, the same every epoch and on resume\n"
    "  --val-select stratified|last   stratified (default), or Keras's last fraction of the\n"
    "                                 data in its order (from a class-sorted ImageFolder: the\n"
    "                                 last classes, which training never sees)\n"
    "  --val-seed N                   which samples a stratified split takes (default 0)\n"
    "  --model-seed N                 initial weights (default: --seed)\n"
    "  --train-threads N              oneDNN threads (default: the cores the decode threads\n"
    "                                 leave, at least 1)\n"
    "  --json FILE                    write the epochs and the test accuracy as JSON\n"
    "%s"
    "  (train shuffles fully by default: --shuffle full)\n"
    "\n"
    "exit status: 0 success, 1 data or I/O error, 2 usage error\n";

constexpr int kExitData = 1;
constexpr int kExitUsage = 2;

int Fail(int code, const Status& status) {
  std::fprintf(stderr, "stoke train: %s\n", status.ToString().c_str());
  return code;
}

StatusOr<double> Real(const Flags& flags, const std::string& name, double fallback, double lo,
                      double hi) {
  if (!flags.Has(name)) return fallback;
  const std::string text = flags.String(name, "");
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= lo && v <= hi)) {
    return InvalidArgumentError("--" + name + ": '" + text + "' is not a number in [" +
                                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

struct EpochRecord {
  int64_t epoch = 0;
  double seconds = 0;
  train::StepResult train, val;
};

// One pass of `loader` through epoch `epoch`, stepping or only evaluating; the
// totals are collected once at the end (on a GPU the one wait of the pass).
Status RunEpoch(Loader& loader, int64_t epoch, train::Trainer& trainer, bool step,
                train::StepResult* result) {
  for (int64_t b = 0;; ++b) {
    auto batch = loader.Next();
    if (!batch.ok()) {
      return batch.status().WithContext("epoch " + std::to_string(epoch) + ", batch " +
                                        std::to_string(b));
    }
    if (!*batch) return trainer.Collect(result);
    STOKE_RETURN_IF_ERROR(step ? trainer.Step(*batch, nullptr) : trainer.Evaluate(*batch, nullptr));
  }
}

// The training and validation sides of `dataset` (validation null for a
// fraction of 0): stratified, or the last fraction in dataset order.
StatusOr<DatasetSplit> SplitForValidation(std::shared_ptr<Dataset> dataset, double fraction,
                                          bool last, uint64_t seed) {
  if (fraction == 0) return DatasetSplit{dataset, nullptr};
  if (!last) {
    auto split = StratifiedSplit(dataset, fraction, seed);
    if (!split.ok() && split.status().code() == StatusCode::kInvalidArgument) {
      return InvalidArgumentError("--val-split " + std::to_string(fraction) + ": " +
                                  split.status().message());
    }
    return split;
  }
  const uint64_t n = dataset->size();
  const auto n_val = static_cast<uint64_t>(std::llround(fraction * static_cast<double>(n)));
  if (n_val >= n) return InvalidArgumentError("--val-split leaves no training data");
  if (n_val == 0) return InvalidArgumentError("--val-split selects no validation sample");
  DatasetSplit split;
  STOKE_ASSIGN_OR_RETURN(split.train, Slice(dataset, 0, n - n_val));
  STOKE_ASSIGN_OR_RETURN(split.validation, Slice(dataset, n - n_val, n));
  return split;
}

}  // namespace

void PrintTrainUsage(FILE* out) { std::fprintf(out, kTrainUsage, kPipelineUsage); }

int TrainCommand(const std::vector<std::string>& args) {
  std::set<std::string> valued = PipelineValuedFlags();
  valued.insert({"model", "epochs", "optimizer", "lr", "momentum", "weight-decay", "val-split",
                 "val-select", "val-seed", "model-seed", "json", "train-threads"});
  auto parsed = Flags::Parse(args, valued, PipelineSwitches());
  if (!parsed.ok()) return Fail(kExitUsage, parsed.status());
  const Flags& flags = *parsed;
  if (flags.positional().size() != 1) {
    PrintTrainUsage(stderr);
    return Fail(kExitUsage, InvalidArgumentError("expected exactly one dataset PATH"));
  }
  const std::string path = flags.positional()[0];

  // 1. Options.
  Pipeline pipeline;
  if (Status s = ParsePipelineFlags(flags, 32, "full", &pipeline); !s.ok()) {
    return Fail(kExitUsage, s);
  }
  train::TrainOptions t;
  t.model = flags.String("model", t.model);
  auto epochs = flags.Int("epochs", 1, 1, 100000);
  auto optimizer = flags.Choice("optimizer", "sgd", {"sgd", "adam"});
  auto lr = Real(flags, "lr", 0.01, 1e-12, 1e3);
  auto momentum = Real(flags, "momentum", 0, 0, 0.999999);
  auto weight_decay = Real(flags, "weight-decay", 0, 0, 0.999999);
  auto val_split = Real(flags, "val-split", 0, 0, 0.99);
  auto val_select = flags.Choice("val-select", "stratified", {"stratified", "last"});
  auto val_seed = flags.Int("val-seed", 0, 0, INT64_MAX);
  auto model_seed =
      flags.Int("model-seed", static_cast<int64_t>(pipeline.options.seed), 0, INT64_MAX);
  auto train_threads = flags.Int("train-threads", 0, 0, 4096);
  for (const Status& s : {epochs.status(), optimizer.status(), lr.status(), momentum.status(),
                          weight_decay.status(), val_split.status(), val_select.status(),
                          val_seed.status(), model_seed.status(), train_threads.status()}) {
    if (!s.ok()) return Fail(kExitUsage, s);
  }
  t.optimizer = *optimizer == "adam" ? train::Optimizer::kAdam : train::Optimizer::kSgd;
  t.learning_rate = static_cast<float>(*lr);
  t.momentum = static_cast<float>(*momentum);
  t.weight_decay = static_cast<float>(*weight_decay);
  t.seed = static_cast<uint64_t>(*model_seed);
  t.device = pipeline.options.device;

  // 2. Data: the training split, cut into training and validation.
  auto dataset = OpenDataset(path, "train", &pipeline);
  if (!dataset.ok()) return Fail(kExitData, dataset.status());
  auto split = SplitForValidation(*dataset, *val_split, *val_select == "last",
                                  static_cast<uint64_t>(*val_seed));
  if (!split.ok()) {
    return Fail(split.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitData,
                split.status());
  }
  const uint64_t n_train = split->train->size();
  const uint64_t n_val = split->validation ? split->validation->size() : 0;
  LoaderOptions eval_options = pipeline.options;
  eval_options.order = Order::kSequential;
  eval_options.drop_last = false;
  auto open = [&](std::shared_ptr<Dataset> d,
                  const LoaderOptions& o) -> StatusOr<std::unique_ptr<Loader>> {
    auto l = Loader::Open(std::move(d), o);
    if (!l.ok()) return Status(l.status().code(), CommandSpelling(l.status().message()));
    return l;
  };
  auto train_loader = open(split->train, pipeline.options);
  if (!train_loader.ok()) return Fail(LoaderOpenExit(train_loader.status()), train_loader.status());
  std::unique_ptr<Loader> val_loader;
  if (split->validation) {
    auto l = open(split->validation, eval_options);
    if (!l.ok()) return Fail(LoaderOpenExit(l.status()), l.status());
    val_loader = std::move(l).value();
  }
  std::unique_ptr<Loader> test_loader;
  if (pipeline.format == "idx" || pipeline.format == "cifar") {
    auto test_set = OpenDataset(path, "test", &pipeline);  // the format is known now
    if (test_set.ok()) {
      auto l = open(*test_set, eval_options);
      if (!l.ok()) return Fail(LoaderOpenExit(l.status()), l.status());
      test_loader = std::move(l).value();
    } else if (test_set.status().code() != StatusCode::kNotFound) {
      return Fail(kExitData, test_set.status());
    }
  }

  // 3. The model, on the cores the decode threads leave.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int decoders = (*train_loader)->options().decode_threads;
  t.threads = *train_threads > 0 ? static_cast<int>(*train_threads) : std::max(1, cores - decoders);
  auto trainer = train::Trainer::Open(t, (*train_loader)->sample_spec());
  if (!trainer.ok()) {
    std::string message = trainer.status().message();
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"TrainOptions.model", "--model"},
          {"TrainOptions.device", "--device"},
          {"TrainOptions.learning_rate", "--lr"}}) {
      if (size_t at = message.find(from); at != std::string::npos)
        message.replace(at, from.size(), to);
    }
    const StatusCode code = trainer.status().code();
    return Fail(code == StatusCode::kInvalidArgument ? kExitUsage : kExitData,
                Status(code, message));
  }
  std::fprintf(stderr, "stoke train: %s; %llu training, %llu validation samples%s of %s; %s\n",
               (*trainer)->Describe().c_str(), static_cast<unsigned long long>(n_train),
               static_cast<unsigned long long>(n_val),
               n_val == 0              ? ""
               : *val_select == "last" ? " (the last fraction)"
                                       : " (stratified: every class)",
               (*dataset)->Describe().c_str(), DeviceName(pipeline.options.device).c_str());

  // 4. Epochs.
  std::vector<EpochRecord> records;
  for (int64_t e = 0; e < *epochs; ++e) {
    EpochRecord r;
    r.epoch = e + 1;
    const auto t0 = std::chrono::steady_clock::now();
    if (Status s = RunEpoch(**train_loader, e, **trainer, true, &r.train); !s.ok()) {
      return Fail(kExitData, s);
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (val_loader) {
      if (Status s = RunEpoch(*val_loader, e, **trainer, false, &r.val); !s.ok()) {
        return Fail(kExitData, s);
      }
    }
    std::printf("epoch %lld/%lld  %.2fs  loss %.4f  accuracy %.4f", static_cast<long long>(r.epoch),
                static_cast<long long>(*epochs), r.seconds, r.train.loss(), r.train.accuracy());
    if (val_loader) {
      std::printf("  val_loss %.4f  val_accuracy %.4f", r.val.loss(), r.val.accuracy());
    }
    std::printf("\n");
    std::fflush(stdout);
    records.push_back(r);
  }
  train::StepResult test;
  if (test_loader) {
    if (Status s = RunEpoch(*test_loader, 0, **trainer, false, &test); !s.ok()) {
      return Fail(kExitData, s);
    }
    std::printf("test_loss %.4f  test_accuracy %.4f\n", test.loss(), test.accuracy());
  }

  if (flags.Has("json")) {
    JsonWriter j;
    j.BeginObject();
    j.Key("model").String(t.model);
    j.Key("device").String(DeviceName(pipeline.options.device));
    j.Key("epochs").BeginArray();
    for (const EpochRecord& r : records) {
      j.BeginObject();
      j.Key("epoch").Uint(static_cast<uint64_t>(r.epoch));
      j.Key("seconds").Number(r.seconds);
      j.Key("loss").Number(r.train.loss());
      j.Key("accuracy").Number(r.train.accuracy());
      if (val_loader) {
        j.Key("val_loss").Number(r.val.loss());
        j.Key("val_accuracy").Number(r.val.accuracy());
      } else {
        j.Key("val_loss").Null();
        j.Key("val_accuracy").Null();
      }
      j.EndObject();
    }
    j.EndArray();
    if (test_loader) {
      j.Key("test_accuracy").Number(test.accuracy());
    } else {
      j.Key("test_accuracy").Null();
    }
    j.EndObject();
    const std::string json_path = flags.String("json", "");
    std::ofstream out(json_path);
    out << j.str() << "\n";
    if (!out) {
      return Fail(kExitData, ErrnoToStatus(errno, "--json " + json_path + ": cannot write"));
    }
  }
  return 0;
}

}  // namespace stoke::cli

#include "train.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "command.h"
#include "flags.h"
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

// What the command line asked for.
struct TrainRequest {
  std::string path;
  Pipeline pipeline;
  train::TrainOptions train;  // threads: 0 until the loader's decode threads are known
  int64_t epochs = 1;
  double val_split = 0;
  bool val_last = false;  // --val-select last
  uint64_t val_seed = 0;
  int64_t train_threads = 0;
  std::string json_path;
};

// Every error here is a usage error naming its flag.
StatusOr<TrainRequest> ParseTrain(const std::vector<std::string>& args) {
  std::set<std::string> valued = PipelineValuedFlags();
  valued.insert({"model", "epochs", "optimizer", "lr", "momentum", "weight-decay", "val-split",
                 "val-select", "val-seed", "model-seed", "json", "train-threads"});
  STOKE_ASSIGN_OR_RETURN(const Flags flags, Flags::Parse(args, valued, PipelineSwitches()));
  if (flags.positional().size() != 1) {
    PrintTrainUsage(stderr);
    return InvalidArgumentError("expected exactly one dataset PATH");
  }
  TrainRequest r;
  r.path = flags.positional()[0];
  STOKE_RETURN_IF_ERROR(ParsePipelineFlags(flags, 32, "full", &r.pipeline));
  train::TrainOptions& t = r.train;
  t.model = flags.String("model", t.model);
  STOKE_ASSIGN_OR_RETURN(r.epochs, flags.Int("epochs", 1, 1, 100000));
  STOKE_ASSIGN_OR_RETURN(const std::string optimizer,
                         flags.Choice("optimizer", "sgd", {"sgd", "adam"}));
  STOKE_ASSIGN_OR_RETURN(const double lr, Real(flags, "lr", 0.01, 1e-12, 1e3));
  STOKE_ASSIGN_OR_RETURN(const double momentum, Real(flags, "momentum", 0, 0, 0.999999));
  STOKE_ASSIGN_OR_RETURN(const double weight_decay, Real(flags, "weight-decay", 0, 0, 0.999999));
  STOKE_ASSIGN_OR_RETURN(r.val_split, Real(flags, "val-split", 0, 0, 0.99));
  STOKE_ASSIGN_OR_RETURN(const std::string val_select,
                         flags.Choice("val-select", "stratified", {"stratified", "last"}));
  STOKE_ASSIGN_OR_RETURN(const int64_t val_seed, flags.Int("val-seed", 0, 0, INT64_MAX));
  STOKE_ASSIGN_OR_RETURN(
      const int64_t model_seed,
      flags.Int("model-seed", static_cast<int64_t>(r.pipeline.options.seed), 0, INT64_MAX));
  STOKE_ASSIGN_OR_RETURN(r.train_threads, flags.Int("train-threads", 0, 0, 4096));
  t.optimizer = optimizer == "adam" ? train::Optimizer::kAdam : train::Optimizer::kSgd;
  t.learning_rate = static_cast<float>(lr);
  t.momentum = static_cast<float>(momentum);
  t.weight_decay = static_cast<float>(weight_decay);
  t.seed = static_cast<uint64_t>(model_seed);
  t.device = r.pipeline.options.device;
  r.val_last = val_select == "last";
  r.val_seed = static_cast<uint64_t>(val_seed);
  r.json_path = flags.String("json", "");
  return r;
}

// The dataset's training split cut into training and validation, and its test
// split where the format has one, each behind a loader.
struct Loaders {
  std::shared_ptr<Dataset> dataset;
  std::unique_ptr<Loader> train, validation, test;  // validation, test: maybe null
  uint64_t n_train = 0, n_val = 0;
};

std::optional<Failure> OpenLoaders(TrainRequest& request, Loaders* out) {
  Pipeline& pipeline = request.pipeline;
  auto dataset = OpenDataset(request.path, "train", &pipeline);
  if (!dataset.ok()) return Failure::Data(dataset.status());
  out->dataset = *dataset;
  auto split = SplitForValidation(*dataset, request.val_split, request.val_last, request.val_seed);
  if (!split.ok()) {
    const bool usage = split.status().code() == StatusCode::kInvalidArgument;
    return Failure{usage ? kExitUsage : kExitData, split.status()};
  }
  out->n_train = split->train->size();
  out->n_val = split->validation ? split->validation->size() : 0;
  LoaderOptions eval_options = pipeline.options;
  eval_options.order = Order::kSequential;
  eval_options.drop_last = false;
  auto open = [&](std::shared_ptr<Dataset> d, const LoaderOptions& o,
                  std::unique_ptr<Loader>* loader) -> std::optional<Failure> {
    auto l = Loader::Open(std::move(d), o);
    if (!l.ok()) {
      return Failure{LoaderOpenExit(l.status()),
                     Status(l.status().code(), CommandSpelling(l.status().message()))};
    }
    *loader = std::move(l).value();
    return std::nullopt;
  };
  if (auto failed = open(split->train, pipeline.options, &out->train)) return failed;
  if (split->validation) {
    if (auto failed = open(split->validation, eval_options, &out->validation)) return failed;
  }
  if (pipeline.format != "idx" && pipeline.format != "cifar") return std::nullopt;
  auto test_set = OpenDataset(request.path, "test", &pipeline);  // the format is known now
  if (test_set.ok()) return open(*test_set, eval_options, &out->test);
  if (test_set.status().code() != StatusCode::kNotFound) return Failure::Data(test_set.status());
  return std::nullopt;
}

// The model, on the cores the decode threads leave; errors in flag spelling.
std::optional<Failure> OpenTrainer(TrainRequest& request, const Loaders& loaders,
                                   std::unique_ptr<train::Trainer>* out) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int decoders = loaders.train->options().decode_threads;
  train::TrainOptions& t = request.train;
  t.threads = request.train_threads > 0 ? static_cast<int>(request.train_threads)
                                        : std::max(1, cores - decoders);
  auto trainer = train::Trainer::Open(t, loaders.train->sample_spec());
  if (!trainer.ok()) {
    std::string message = trainer.status().message();
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"TrainOptions.model", "--model"},
          {"TrainOptions.device", "--device"},
          {"TrainOptions.learning_rate", "--lr"}}) {
      if (size_t at = message.find(from); at != std::string::npos) {
        message.replace(at, from.size(), to);
      }
    }
    const StatusCode code = trainer.status().code();
    return Failure{code == StatusCode::kInvalidArgument ? kExitUsage : kExitData,
                   Status(code, message)};
  }
  *out = std::move(trainer).value();
  return std::nullopt;
}

struct TrainResult {
  std::vector<EpochRecord> epochs;
  bool has_validation = false;
  bool has_test = false;
  train::StepResult test;
};

// Trains every epoch (validating after each) and tests at the end; calls
// `on_epoch` as each epoch ends.
template <typename OnEpoch>
std::optional<Failure> RunTraining(const TrainRequest& request, Loaders& loaders,
                                   train::Trainer& trainer, TrainResult* result, OnEpoch on_epoch) {
  result->has_validation = loaders.validation != nullptr;
  result->has_test = loaders.test != nullptr;
  for (int64_t e = 0; e < request.epochs; ++e) {
    EpochRecord r;
    r.epoch = e + 1;
    const auto t0 = std::chrono::steady_clock::now();
    if (Status s = RunEpoch(*loaders.train, e, trainer, true, &r.train); !s.ok()) {
      return Failure::Data(s);
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (loaders.validation) {
      if (Status s = RunEpoch(*loaders.validation, e, trainer, false, &r.val); !s.ok()) {
        return Failure::Data(s);
      }
    }
    result->epochs.push_back(r);
    on_epoch(r);
  }
  if (loaders.test) {
    if (Status s = RunEpoch(*loaders.test, 0, trainer, false, &result->test); !s.ok()) {
      return Failure::Data(s);
    }
  }
  return std::nullopt;
}

void PrintEpoch(const EpochRecord& r, int64_t epochs, bool has_validation) {
  std::printf("epoch %lld/%lld  %.2fs  loss %.4f  accuracy %.4f", static_cast<long long>(r.epoch),
              static_cast<long long>(epochs), r.seconds, r.train.loss(), r.train.accuracy());
  if (has_validation) {
    std::printf("  val_loss %.4f  val_accuracy %.4f", r.val.loss(), r.val.accuracy());
  }
  std::printf("\n");
  std::fflush(stdout);
}

Status WriteTrainJson(const TrainRequest& request, const TrainResult& result) {
  JsonWriter j;
  j.BeginObject();
  j.Key("model").String(request.train.model);
  j.Key("device").String(DeviceName(request.pipeline.options.device));
  j.Key("epochs").BeginArray();
  for (const EpochRecord& r : result.epochs) {
    j.BeginObject();
    j.Key("epoch").Uint(static_cast<uint64_t>(r.epoch));
    j.Key("seconds").Number(r.seconds);
    j.Key("loss").Number(r.train.loss());
    j.Key("accuracy").Number(r.train.accuracy());
    if (result.has_validation) {
      j.Key("val_loss").Number(r.val.loss());
      j.Key("val_accuracy").Number(r.val.accuracy());
    } else {
      j.Key("val_loss").Null();
      j.Key("val_accuracy").Null();
    }
    j.EndObject();
  }
  j.EndArray();
  if (result.has_test) {
    j.Key("test_accuracy").Number(result.test.accuracy());
  } else {
    j.Key("test_accuracy").Null();
  }
  j.EndObject();
  std::ofstream out(request.json_path);
  out << j.str() << "\n";
  if (!out) return ErrnoToStatus(errno, "--json " + request.json_path + ": cannot write");
  return Status::Ok();
}

}  // namespace

void PrintTrainUsage(FILE* out) { std::fprintf(out, kTrainUsage, kPipelineUsage); }

int TrainCommand(const std::vector<std::string>& args) {
  auto request = ParseTrain(args);
  if (!request.ok()) return Fail("train", Failure::Usage(request.status()));
  Loaders loaders;
  if (auto failed = OpenLoaders(*request, &loaders)) return Fail("train", *failed);
  std::unique_ptr<train::Trainer> trainer;
  if (auto failed = OpenTrainer(*request, loaders, &trainer)) return Fail("train", *failed);
  std::fprintf(stderr, "stoke train: %s; %llu training, %llu validation samples%s of %s; %s\n",
               trainer->Describe().c_str(), static_cast<unsigned long long>(loaders.n_train),
               static_cast<unsigned long long>(loaders.n_val),
               loaders.n_val == 0  ? ""
               : request->val_last ? " (the last fraction)"
                                   : " (stratified: every class)",
               loaders.dataset->Describe().c_str(),
               DeviceName(request->pipeline.options.device).c_str());
  TrainResult result;
  const bool has_validation = loaders.validation != nullptr;
  auto failed = RunTraining(*request, loaders, *trainer, &result, [&](const EpochRecord& r) {
    PrintEpoch(r, request->epochs, has_validation);
  });
  if (failed) return Fail("train", *failed);
  if (result.has_test) {
    std::printf("test_loss %.4f  test_accuracy %.4f\n", result.test.loss(), result.test.accuracy());
  }
  if (!request->json_path.empty()) {
    if (Status s = WriteTrainJson(*request, result); !s.ok()) {
      return Fail("train", Failure::Data(s));
    }
  }
  return 0;
}

}  // namespace stoke::cli

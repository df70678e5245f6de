// Training through the loader: the MLP 784-300-100-10 on Fashion-MNIST with SGD
// (lr 0.01), batches of 32 and the last 15% of the training set for validation,
// on the CPU (oneDNN) or a GPU (cuDNN + cuBLAS; the loader then delivers the
// batches to that GPU). Usage: train_mlp [IDX_DIR] [EPOCHS] [DEVICE]
// (default /usr/share/datasets/fashion-mnist 20 cpu; DEVICE cpu or cuda[:N])
#include <cstdio>
#include <cstdlib>

#include "stoke/stoke.h"
#include "stoke/train.h"

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 20;
  auto fail = [](const stoke::Status& s) {
    return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
  };
  auto device = stoke::ParseDevice(argc > 3 ? argv[3] : "cpu");
  if (!device.ok()) return fail(device.status());
  auto all = stoke::OpenIdxSplit(dir, "train");
  if (!all.ok()) return fail(all.status());
  const uint64_t n_val = (*all)->size() * 15 / 100;
  auto train = stoke::Slice(*all, 0, (*all)->size() - n_val);
  auto val = stoke::Slice(*all, (*all)->size() - n_val, (*all)->size());
  if (!train.ok() || !val.ok()) return fail(train.ok() ? val.status() : train.status());

  stoke::LoaderOptions options;
  options.batch_size = 32;
  options.order = stoke::Order::kFullShuffle;
  options.device = *device;
  auto train_loader = stoke::Loader::Open(*train, options);
  options.order = stoke::Order::kSequential;
  auto val_loader = stoke::Loader::Open(*val, options);
  if (!train_loader.ok() || !val_loader.ok()) {
    return fail(train_loader.ok() ? val_loader.status() : train_loader.status());
  }
  stoke::train::TrainOptions model;  // mlp:784-300-100-10, SGD, lr 0.01
  model.device = *device;
  auto trainer = stoke::train::Trainer::Open(model, (*train_loader)->sample_spec());
  if (!trainer.ok()) return fail(trainer.status());

  for (int epoch = 0; epoch < epochs; ++epoch) {
    // No result per step: the totals are collected once (on a GPU, the
    // epoch's one wait).
    stoke::train::StepResult fit, check;
    for (stoke::Batch& batch : (*train_loader)->Epoch(epoch)) {
      if (stoke::Status s = (*trainer)->Step(batch, nullptr); !s.ok()) return fail(s);
    }
    if (stoke::Status s = (*trainer)->Collect(&fit); !s.ok()) return fail(s);
    for (stoke::Batch& batch : (*val_loader)->Epoch(epoch)) {
      if (stoke::Status s = (*trainer)->Evaluate(batch, nullptr); !s.ok()) return fail(s);
    }
    if (stoke::Status s = (*trainer)->Collect(&check); !s.ok()) return fail(s);
    std::printf("epoch %d: loss %.4f accuracy %.4f val_loss %.4f val_accuracy %.4f\n", epoch + 1,
                fit.loss(), fit.accuracy(), check.loss(), check.accuracy());
  }
  return 0;
}

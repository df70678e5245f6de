// A small CNN on images: an ImageFolder of JPEGs decoded to 32x32, delivered as
// float32 CHW normalised to mean 0.5 and std 0.25, and trained with Adam on the
// CPU or a GPU. Usage: train_cnn IMAGE_FOLDER [EPOCHS] [DEVICE]
// (default 5 epochs, cpu; DEVICE cpu or cuda[:N])
// (`stoke synth DIR --count 2000 --classes 4` makes one.)
#include <cstdio>
#include <cstdlib>
#include <string>

#include "stoke/stoke.h"
#include "stoke/train.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    return std::fprintf(stderr, "usage: train_cnn IMAGE_FOLDER [EPOCHS] [DEVICE]\n"), 2;
  }
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 5;
  auto fail = [](const stoke::Status& s) {
    return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
  };
  auto device = stoke::ParseDevice(argc > 3 ? argv[3] : "cpu");
  if (!device.ok()) return fail(device.status());
  stoke::ImageFolderOptions folder;
  folder.root = argv[1];
  folder.image.height = folder.image.width = 32;
  folder.image.crop = stoke::CropMode::kRandomResized;
  folder.image.flip = true;
  auto images = stoke::OpenImageFolder(folder);
  if (!images.ok()) return fail(images.status());

  stoke::LoaderOptions options;
  options.batch_size = 32;
  options.order = stoke::Order::kFullShuffle;
  options.output_dtype = stoke::DType::kFloat32;  // HWC uint8 becomes CHW float32
  options.normalize_mean = {0.5f};
  options.normalize_std = {0.25f};
  options.device = *device;
  auto loader = stoke::Loader::Open(*images, options);
  if (!loader.ok()) return fail(loader.status());

  int64_t classes = 0;  // the class folders
  while (true) {
    auto b = (*loader)->Next();
    if (!b.ok()) return fail(b.status());
    if (!*b) break;
    for (int64_t label : b->labels()) classes = std::max(classes, label + 1);
  }
  stoke::train::TrainOptions model;
  model.model = "cnn:16-32-64-" + std::to_string(std::max<int64_t>(classes, 2));
  model.optimizer = stoke::train::Optimizer::kAdam;
  model.learning_rate = 0.001f;
  model.threads = 1;  // the decode threads have the other cores
  model.device = *device;
  auto trainer = stoke::train::Trainer::Open(model, (*loader)->sample_spec());
  if (!trainer.ok()) return fail(trainer.status());
  std::printf("%s\n", (*trainer)->Describe().c_str());
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    stoke::train::StepResult fit;
    for (stoke::Batch& batch : (*loader)->Epoch(epoch)) {
      if (stoke::Status s = (*trainer)->Step(batch, nullptr); !s.ok()) return fail(s);
    }
    if (stoke::Status s = (*trainer)->Collect(&fit); !s.ok()) return fail(s);
    std::printf("epoch %d: loss %.4f accuracy %.4f\n", epoch, fit.loss(), fit.accuracy());
  }
  return 0;
}

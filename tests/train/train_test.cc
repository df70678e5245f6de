// The trainer on the CPU: model specs checked naming the field, every layer's
// gradient against central differences, loss going down on a learnable
// problem, the same seed giving the same run, and a CNN taking the batches a
// loader delivers: uint8 HWC, float16 and float32 CHW.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "stoke/loader.h"
#include "stoke/train.h"
#include "testing/image_data.h"
#include "testing/test_data.h"
#include "train/cpu_net.h"
#include "train/model_spec.h"

namespace stoke {
namespace {

SampleSpec Spec(std::vector<int64_t> shape) {
  SampleSpec s;
  s.shape = std::move(shape);
  return s;
}

TEST(ModelSpecTest, ParsesAnMlpAndACnnAndNamesWhatIsWrong) {
  auto mlp = internal::ParseModel("mlp:784-300-100-10", Spec({28, 28}));
  ASSERT_TRUE(mlp.ok()) << mlp.status();
  EXPECT_EQ(mlp->parameters, 784 * 300 + 300 + 300 * 100 + 100 + 100 * 10 + 10);
  EXPECT_EQ(mlp->classes, 10);
  auto cnn = internal::ParseModel("cnn:32-64-128-10", Spec({3, 32, 32}));
  ASSERT_TRUE(cnn.ok()) << cnn.status();
  EXPECT_EQ(cnn->layers.size(), 9u);
  EXPECT_EQ(cnn->layers[6].in, 64 * 8 * 8);

  for (const char* bad : {"mlp:100-10", "rnn:1-2", "mlp:784", "mlp:784-x-10", "cnn:1-2-3",
                          "mlp:784-0-10", "784-10"}) {
    auto m = internal::ParseModel(bad, Spec({28, 28}));
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(m.status().message().find("TrainOptions.model"), std::string::npos) << m.status();
  }
  SampleSpec hwc = Spec({32, 16, 3});  // HWC images: the step transposes them
  hwc.channels_last = true;
  auto m = internal::ParseModel("cnn:8-8-8-10", hwc);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->input, (std::vector<int64_t>{3, 32, 16}));
  m = internal::ParseModel("cnn:8-8-8-10", Spec({2, 3, 32, 32}));
  EXPECT_NE(m.status().message().find("a CNN takes images (CxHxW, HxWxC or HxW)"),
            std::string::npos)
      << m.status();
}

// Central differences of the mean loss against the backward pass, for every
// parameter of a small model. oneDNN computes in float32; the loss is summed in
// double, the step is 1e-3, and the tolerance 2e-3 + 3% of the gradient.
void CheckGradients(const std::string& model, const std::vector<int64_t>& input) {
  SCOPED_TRACE(model);
  auto spec = internal::ParseModel(model, Spec(input));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto net = internal::CpuNet::Create(*spec, 5);
  ASSERT_TRUE(net.ok()) << net.status();
  const int64_t n = 3;
  std::mt19937 random(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * spec->input_elements()));
  for (float& v : x) v = uniform(random);
  std::vector<int64_t> labels = {0, 2, 1};
  auto load = [&] {
    float* in = *(*net)->Input(n);
    std::copy(x.begin(), x.end(), in);
  };
  auto loss = [&] {
    load();
    train::StepResult r;
    EXPECT_TRUE((*net)->Run(n, labels.data(), false, &r).ok());
    return r.loss_sum / n;
  };
  load();
  train::StepResult r;
  ASSERT_TRUE((*net)->Run(n, labels.data(), true, &r).ok());
  std::vector<std::vector<float>> analytic;
  for (const auto& p : (*net)->params()) analytic.push_back(p.grad);
  const float eps = 1e-3f;
  int checked = 0;
  for (size_t k = 0; k < (*net)->params().size(); ++k) {
    std::vector<float>& w = (*net)->params()[k].value;
    for (size_t i = 0; i < w.size(); i += std::max<size_t>(1, w.size() / 40)) {
      const float saved = w[i];
      w[i] = saved + eps;
      const double plus = loss();
      w[i] = saved - eps;
      const double minus = loss();
      w[i] = saved;
      const double numeric = (plus - minus) / (2.0 * eps);
      EXPECT_NEAR(analytic[k][i], numeric, 2e-3 + 0.03 * std::abs(numeric))
          << "parameter " << k << " element " << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(GradientTest, LinearReluAndCrossEntropyMatchCentralDifferences) {
  CheckGradients("mlp:12-9-7-3", {12});
}

TEST(GradientTest, ConvolutionPoolingAndFlattenMatchCentralDifferences) {
  CheckGradients("cnn:3-4-6-3", {2, 8, 8});
}

// Four classes of 8x8 images: class k has a bright 4x4 quadrant k, over noise.
std::string WriteQuadrants(const testing::TempDir& dir, int n) {
  std::vector<uint8_t> images = {0, 0, 8, 3};
  std::vector<uint8_t> labels = {0, 0, 8, 1};
  auto be32 = [](std::vector<uint8_t>& v, uint32_t x) {
    for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<uint8_t>(x >> s));
  };
  be32(images, static_cast<uint32_t>(n));
  be32(images, 8);
  be32(images, 8);
  be32(labels, static_cast<uint32_t>(n));
  std::mt19937 random(3);
  for (int i = 0; i < n; ++i) {
    const int k = static_cast<int>(random() % 4);
    labels.push_back(static_cast<uint8_t>(k));
    for (int y = 0; y < 8; ++y) {
      for (int x = 0; x < 8; ++x) {
        const bool lit = (y / 4) * 2 + (x / 4) == k;
        images.push_back(static_cast<uint8_t>((lit ? 150 : 0) + random() % 100));
      }
    }
  }
  testing::WriteFile(dir.Join("train-images-idx3-ubyte"), images);
  testing::WriteFile(dir.Join("train-labels-idx1-ubyte"), labels);
  return dir.path();
}

struct TrainingRun {
  std::vector<double> epoch_loss;
  std::vector<std::vector<float>> params;
};

TrainingRun Train(const std::string& model, train::Optimizer optimizer, int epochs) {
  testing::TempDir dir;
  auto d = OpenIdxSplit(WriteQuadrants(dir, 512), "train");
  EXPECT_TRUE(d.ok()) << d.status();
  train::TrainOptions o;
  o.model = model;
  o.optimizer = optimizer;
  o.learning_rate = optimizer == train::Optimizer::kSgd ? 0.05f : 0.002f;
  o.momentum = optimizer == train::Optimizer::kSgd ? 0.9f : 0.0f;
  o.seed = 9;
  auto trainer = train::Trainer::Open(o, (*d)->spec());
  EXPECT_TRUE(trainer.ok()) << trainer.status();
  auto loader = Loader::Open(*d, {.batch_size = 32, .order = Order::kFullShuffle, .seed = 4});
  EXPECT_TRUE(loader.ok()) << loader.status();
  TrainingRun run;
  for (int e = 0; e < epochs; ++e) {
    train::StepResult r;
    for (Batch& b : (*loader)->Epoch(e)) EXPECT_TRUE((*trainer)->Step(b, &r).ok());
    run.epoch_loss.push_back(r.loss());
  }
  run.params = (*trainer)->Parameters();
  return run;
}

TEST(TrainTest, LossFallsOnALearnableProblemWithSgdAndAdam) {
  for (auto optimizer : {train::Optimizer::kSgd, train::Optimizer::kAdam}) {
    for (const char* model : {"mlp:64-32-4", "cnn:4-8-16-4"}) {
      SCOPED_TRACE(std::string(model) + " " + std::string(train::OptimizerName(optimizer)));
      TrainingRun run = Train(model, optimizer, 6);
      EXPECT_LT(run.epoch_loss.back(), 0.5 * run.epoch_loss.front());
      EXPECT_LT(run.epoch_loss.back(), 0.3);
    }
  }
}

TEST(TrainTest, TheSameSeedGivesTheSameRun) {
  TrainingRun a = Train("mlp:64-32-4", train::Optimizer::kSgd, 2);
  TrainingRun b = Train("mlp:64-32-4", train::Optimizer::kSgd, 2);
  EXPECT_EQ(a.epoch_loss, b.epoch_loss);
  EXPECT_EQ(a.params, b.params);
}

TEST(TrainTest, CollectReturnsTheTotalsOfStepsGivenNoResult) {
  testing::TempDir dir;
  auto d = OpenIdxSplit(WriteQuadrants(dir, 200), "train");
  ASSERT_TRUE(d.ok()) << d.status();
  train::StepResult with, collected, nothing;
  for (const bool per_step : {true, false}) {
    auto trainer = train::Trainer::Open({.model = "mlp:64-16-4", .seed = 2}, (*d)->spec());
    ASSERT_TRUE(trainer.ok()) << trainer.status();
    auto loader = Loader::Open(*d, {.batch_size = 32});
    ASSERT_TRUE(loader.ok());
    for (Batch& b : (*loader)->Epoch(0)) {
      ASSERT_TRUE((*trainer)->Step(b, per_step ? &with : nullptr).ok());
    }
    ASSERT_TRUE((*trainer)->Collect(per_step ? &nothing : &collected).ok());
  }
  EXPECT_EQ(nothing.samples, 0);  // steps given a result leave nothing to collect
  EXPECT_EQ(collected.samples, 200);
  EXPECT_EQ(collected.samples, with.samples);
  EXPECT_EQ(collected.correct, with.correct);
  EXPECT_DOUBLE_EQ(collected.loss_sum, with.loss_sum);
}

TEST(TrainTest, BadOptionsAndBatchesNameTheCause) {
  train::TrainOptions o;
  o.learning_rate = -1;
  auto t = train::Trainer::Open(o, Spec({28, 28}));
  EXPECT_NE(t.status().message().find("TrainOptions.learning_rate"), std::string::npos);
  o = {};
  o.device = {DeviceKind::kCuda, 0};
  t = train::Trainer::Open(o, Spec({28, 28}));
  EXPECT_EQ(t.status().code(), StatusCode::kUnavailable);

  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 64, 28, 28);  // labels 0 to 9: too many for 5 classes
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok());
  t = train::Trainer::Open({.model = "mlp:784-30-5"}, (*d)->spec());
  ASSERT_TRUE(t.ok()) << t.status();
  auto loader = Loader::Open(*d, {.batch_size = 64});
  ASSERT_TRUE(loader.ok());
  auto batch = (*loader)->Next();
  ASSERT_TRUE(batch.ok());
  train::StepResult r;
  Status s = (*t)->Step(*batch, &r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("outside [0, 5)"), std::string::npos) << s;
}

// Two epochs of cnn:4-8-16-4 on ColourQuadrants delivered as `dtype`.
TrainingRun TrainOnImages(bool channels_last, DType dtype) {
  auto data = testing::ColourQuadrants(256, channels_last);
  LoaderOptions lo{.batch_size = 32, .order = Order::kFullShuffle, .seed = 4};
  lo.output_dtype = dtype;
  auto loader = Loader::Open(data, lo);
  EXPECT_TRUE(loader.ok()) << loader.status();
  auto trainer = train::Trainer::Open(
      {.model = "cnn:4-8-16-4", .learning_rate = 0.05f, .momentum = 0.9f, .seed = 9},
      (*loader)->sample_spec());
  EXPECT_TRUE(trainer.ok()) << trainer.status();
  TrainingRun run;
  if (!loader.ok() || !trainer.ok()) return run;
  for (int e = 0; e < 3; ++e) {
    train::StepResult r;
    for (Batch& b : (*loader)->Epoch(e)) {
      EXPECT_EQ(b.channels_last(), channels_last && dtype == DType::kUint8);
      const Status s = (*trainer)->Step(b, &r);
      EXPECT_TRUE(s.ok()) << s;
    }
    run.epoch_loss.push_back(r.loss());
  }
  run.params = (*trainer)->Parameters();
  return run;
}

TEST(TrainInputTest, ACnnTakesHwcUint8AsTheSameImagesChannelsFirst) {
  // The transposition is exact, so the runs are identical: the same images
  // as CHW uint8, and as float32 (x * (1/255), as the step scales uint8).
  const TrainingRun hwc = TrainOnImages(true, DType::kUint8);
  const TrainingRun chw = TrainOnImages(false, DType::kUint8);
  const TrainingRun f32 = TrainOnImages(true, DType::kFloat32);
  ASSERT_EQ(hwc.epoch_loss.size(), 3u);
  EXPECT_EQ(hwc.epoch_loss, chw.epoch_loss);
  EXPECT_EQ(hwc.params, chw.params);
  EXPECT_EQ(hwc.epoch_loss, f32.epoch_loss);
  EXPECT_EQ(hwc.params, f32.params);
  EXPECT_LT(hwc.epoch_loss.back(), 0.5 * hwc.epoch_loss.front());  // it learns
}

TEST(TrainInputTest, ACnnTakesFloat16BatchesAsTheLoaderDeliversThem) {
  // float16 rounds x / 255 to 11 bits: the first epoch follows the float32
  // run closely (later ones drift apart, as any two runs do), and it learns.
  const TrainingRun f16 = TrainOnImages(true, DType::kFloat16);
  const TrainingRun f32 = TrainOnImages(true, DType::kFloat32);
  ASSERT_EQ(f16.epoch_loss.size(), 3u);
  EXPECT_NE(f16.params, f32.params);  // the input was rounded, not widened back
  EXPECT_NEAR(f16.epoch_loss[0], f32.epoch_loss[0], 0.01 * f32.epoch_loss[0]);
  EXPECT_LT(f16.epoch_loss.back(), 0.5 * f16.epoch_loss.front());
}

TEST(TrainInputTest, ABatchOfAnotherShapeIsNamed) {
  // A CNN opened for 3x8x8 images given a one-channel 8x24 batch of as many
  // elements.
  auto trainer = train::Trainer::Open({.model = "cnn:4-8-16-4"}, Spec({3, 8, 8}));
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 64, 8, 24);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok());
  auto loader = Loader::Open(*d, {.batch_size = 16});
  ASSERT_TRUE(loader.ok());
  auto batch = (*loader)->Next();
  ASSERT_TRUE(batch.ok());
  const Status s = (*trainer)->Step(*batch, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("takes 3x8x8 (CHW) or 8x8x3 (HWC) samples; the batch has 8x24"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace stoke

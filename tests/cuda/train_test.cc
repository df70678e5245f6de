// The GPU trainer (ctest label gpu; skips when no CUDA device is visible)
// against the CPU trainer, which has its own gradient and learning tests: the
// same seed and batches give the same losses and parameters within stated
// tolerances, with graphs and without, from device batches and host batches,
// for every input a loader delivers (uint8 HWC or CHW, float16, float32); bad
// labels are named.
//
// Tolerances: cuDNN and cuBLAS sum in other orders than oneDNN (and the loss
// comes from cuDNN's float log-softmax, the CPU's in double), so per-step
// losses agree to 1e-4 relative, and parameters after 8 steps to 1e-4 + 1e-3
// relative. Graph replays run the same kernels on the same buffers: 1e-6.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <vector>

#include "stoke/loader.h"
#include "stoke/train.h"
#include "testing/image_data.h"
#include "testing/test_data.h"
#include "train/cuda_libs.h"

namespace stoke {
namespace {

constexpr int kSide = 8;

class CudaTrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
    testing::WriteIdxSplit(dir_, 300, kSide, kSide);  // labels 0..9
    auto d = OpenIdxSplit(dir_.path(), "train");
    ASSERT_TRUE(d.ok()) << d.status();
    dataset_ = *d;
  }

  std::unique_ptr<Loader> OpenLoader(DeviceSpec device) {
    LoaderOptions o;
    o.batch_size = 32;
    o.order = Order::kSequential;
    o.device = device;
    auto loader = Loader::Open(dataset_, o);
    EXPECT_TRUE(loader.ok()) << loader.status();
    return loader.ok() ? std::move(loader).value() : nullptr;
  }

  std::unique_ptr<train::Trainer> OpenTrainer(train::TrainOptions o) {
    auto t = train::Trainer::Open(o, dataset_->spec());
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::move(t).value() : nullptr;
  }

  testing::TempDir dir_;
  std::shared_ptr<Dataset> dataset_;
};

void ExpectNear(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                double absolute, double relative) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t p = 0; p < a.size(); ++p) {
    ASSERT_EQ(a[p].size(), b[p].size()) << "parameter " << p;
    for (size_t i = 0; i < a[p].size(); ++i) {
      ASSERT_NEAR(a[p][i], b[p][i], absolute + relative * std::abs(a[p][i]))
          << "parameter " << p << " element " << i;
    }
  }
}

TEST_F(CudaTrainTest, StepsMatchTheCpu) {
  const DeviceSpec gpu{DeviceKind::kCuda, 0};
  for (const char* model : {"mlp:64-32-10", "cnn:4-8-16-10"}) {
    for (auto optimizer : {train::Optimizer::kSgd, train::Optimizer::kAdam}) {
      SCOPED_TRACE(std::string(model) + " " + std::string(train::OptimizerName(optimizer)));
      train::TrainOptions o;
      o.model = model;
      o.optimizer = optimizer;
      o.learning_rate = optimizer == train::Optimizer::kSgd ? 0.05f : 0.002f;
      o.momentum = optimizer == train::Optimizer::kSgd ? 0.9f : 0.0f;
      o.weight_decay = 1e-4f;
      o.seed = 3;
      auto cpu = OpenTrainer(o);
      o.device = gpu;
      auto cuda = OpenTrainer(o);
      ASSERT_TRUE(cpu && cuda);
      ExpectNear(cpu->Parameters(), cuda->Parameters(), 0, 0);  // the same initial draw
      auto host_loader = OpenLoader({});
      auto device_loader = OpenLoader(gpu);
      ASSERT_TRUE(host_loader && device_loader);
      for (int b = 0; b < 8; ++b) {
        auto hb = host_loader->Next();
        auto db = device_loader->Next();
        ASSERT_TRUE(hb.ok() && db.ok());
        train::StepResult rc, rg;
        ASSERT_TRUE(cpu->Step(*hb, &rc).ok());
        const Status s = cuda->Step(*db, &rg);
        ASSERT_TRUE(s.ok()) << s;
        EXPECT_EQ(rg.samples, rc.samples);
        EXPECT_NEAR(rg.correct, rc.correct, 1) << "batch " << b;  // a near tie may flip
        EXPECT_NEAR(rg.loss_sum, rc.loss_sum, 1e-4 * std::abs(rc.loss_sum)) << "batch " << b;
      }
      ExpectNear(cpu->Parameters(), cuda->Parameters(), 1e-4, 1e-3);
      // Evaluation, from a host batch on the GPU trainer too.
      auto hb = host_loader->Next();
      ASSERT_TRUE(hb.ok());
      train::StepResult ec, eg;
      ASSERT_TRUE(cpu->Evaluate(*hb, &ec).ok());
      const Status s = cuda->Evaluate(*hb, &eg);
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_NEAR(eg.loss_sum, ec.loss_sum, 1e-4 * std::abs(ec.loss_sum));
    }
  }
}

// Whether this process has `library` mapped.
bool Mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find(library) != std::string::npos) return true;
  }
  return false;
}

TEST(CudaLibsTest, CudnnAndCublasAreLoadedWhenAGpuTrainerOpensNotAtStart) {
  // Needs no GPU: the libraries load without one. ctest runs each test in a
  // process of its own, so nothing has loaded them before.
  EXPECT_FALSE(Mapped("libcublasLt")) << "libcublasLt is mapped before any trainer opened";
  EXPECT_FALSE(Mapped("libcudnn"));
  auto libs = internal::LoadCudaLibs();
  ASSERT_TRUE(libs.ok()) << libs.status();
  EXPECT_TRUE(Mapped("libcublas"));
  EXPECT_TRUE(Mapped("libcudnn"));
  EXPECT_GE((*libs)->cudnnGetVersion(), size_t{90000});  // cuDNN 9
  EXPECT_EQ(internal::LoadCudaLibs().value(), *libs);    // loaded once
}

TEST(CudaTrainInputTest, ACnnTakesEveryImageBatchTheLoaderDeliversAsTheCpuDoes) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  const DeviceSpec gpu{DeviceKind::kCuda, 0};
  for (const DType dtype : {DType::kUint8, DType::kFloat16, DType::kFloat32}) {
    for (const bool channels_last : {true, false}) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + (channels_last ? " from HWC" : " from CHW"));
      auto data = testing::ColourQuadrants(256, channels_last);
      LoaderOptions lo{.batch_size = 32, .order = Order::kFullShuffle, .seed = 4};
      lo.output_dtype = dtype;
      auto host_loader = Loader::Open(data, lo);
      lo.device = gpu;
      auto device_loader = Loader::Open(data, lo);
      ASSERT_TRUE(host_loader.ok() && device_loader.ok()) << device_loader.status();
      train::TrainOptions o{.model = "cnn:4-8-16-4", .learning_rate = 0.05f, .seed = 5};
      auto cpu = train::Trainer::Open(o, (*host_loader)->sample_spec());
      o.device = gpu;
      auto cuda = train::Trainer::Open(o, (*device_loader)->sample_spec());
      ASSERT_TRUE(cpu.ok() && cuda.ok()) << cuda.status();
      for (int b = 0; b < 8; ++b) {
        auto hb = (*host_loader)->Next();
        auto db = (*device_loader)->Next();
        ASSERT_TRUE(hb.ok() && db.ok());
        ASSERT_EQ(db->channels_last(), channels_last && dtype == DType::kUint8);
        train::StepResult rc, rg;
        ASSERT_TRUE((*cpu)->Step(*hb, &rc).ok());
        const Status s = (*cuda)->Step(*db, &rg);
        ASSERT_TRUE(s.ok()) << s;
        EXPECT_NEAR(rg.loss_sum, rc.loss_sum, 1e-4 * std::abs(rc.loss_sum)) << "batch " << b;
      }
      ExpectNear((*cpu)->Parameters(), (*cuda)->Parameters(), 1e-4, 1e-3);
    }
  }
}

TEST_F(CudaTrainTest, GraphsReplayTheSameSteps) {
  const DeviceSpec gpu{DeviceKind::kCuda, 0};
  for (const char* model : {"mlp:64-32-10", "cnn:4-8-16-10"}) {
    SCOPED_TRACE(model);
    std::vector<std::vector<float>> params[2];
    train::StepResult totals[2];
    for (const bool graphs : {true, false}) {
      train::TrainOptions o;
      o.model = model;
      o.device = gpu;
      o.momentum = 0.9f;
      o.cuda_graphs = graphs;
      auto trainer = OpenTrainer(o);
      auto loader = OpenLoader(gpu);
      ASSERT_TRUE(trainer && loader);
      // Three epochs of 300 samples: batches of 32 and a last one of 12, each
      // size run once uncaptured, then captured, then replayed.
      for (int e = 0; e < 3; ++e) {
        for (Batch& b : loader->Epoch(e)) ASSERT_TRUE(trainer->Step(b, nullptr).ok());
      }
      ASSERT_TRUE(trainer->Collect(&totals[graphs]).ok());
      params[graphs] = trainer->Parameters();
      EXPECT_NE(trainer->Describe().find(graphs ? "CUDA graphs" : "cuBLAS)"), std::string::npos)
          << trainer->Describe();
    }
    EXPECT_EQ(totals[0].samples, 900);
    EXPECT_EQ(totals[1].samples, 900);
    EXPECT_NEAR(totals[1].loss_sum, totals[0].loss_sum, 1e-6 * std::abs(totals[0].loss_sum));
    ExpectNear(params[0], params[1], 1e-6, 1e-6);
  }
}

TEST_F(CudaTrainTest, ABadLabelIsNamedWhenTheHostWaits) {
  train::TrainOptions o;
  o.model = "mlp:64-16-5";  // the data's labels go to 9
  o.device = {DeviceKind::kCuda, 0};
  auto trainer = OpenTrainer(o);
  auto loader = OpenLoader(o.device);
  ASSERT_TRUE(trainer && loader);
  auto batch = loader->Next();
  ASSERT_TRUE(batch.ok());
  train::StepResult r;
  Status s = trainer->Step(*batch, &r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("outside [0, 5)"), std::string::npos) << s;
  batch = loader->Next();
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(trainer->Step(*batch, nullptr).ok());  // queued: nothing waited for yet
  s = trainer->Collect(&r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  // A device that is not there.
  o.device.index = 64;
  auto missing = train::Trainer::Open(o, dataset_->spec());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable) << missing.status();
}

}  // namespace
}  // namespace stoke

// GPU tests of the CUDA device (ctest label gpu): skip when no CUDA device is
// visible. Device batches are the host batches (bit-exact for uint8, and for
// the conversion too, since both sides compute x * scale + bias in float32
// without a fused multiply-add and round to half to nearest even); a slow
// consumer stream never sees a buffer refilled under it; stopping with copies
// in flight returns.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cuda/test_kernels.h"
#include "stoke/loader.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

bool HaveGpu() { return CudaDeviceCount() > 0; }

constexpr int kRows = 16;
constexpr int kCols = 16;
constexpr size_t kSampleBytes = kRows * kCols;

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "no CUDA device visible";
    testing::WriteIdxSplit(dir_, 1000, kRows, kCols);
    auto d = OpenIdxSplit(dir_.path(), "train");
    ASSERT_TRUE(d.ok()) << d.status();
    dataset_ = *d;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::unique_ptr<Loader> Open(LoaderOptions o) {
    auto l = Loader::Open(dataset_, o);
    EXPECT_TRUE(l.ok()) << l.status();
    return l.ok() ? std::move(l).value() : nullptr;
  }

  testing::TempDir dir_;
  std::shared_ptr<Dataset> dataset_;
  cudaStream_t stream_ = nullptr;
};

TEST_F(CudaDeviceTest, DeviceBatchesEqualHostBatchesForTheSameSeed) {
  for (DType dtype : {DType::kUint8, DType::kFloat32, DType::kFloat16}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    LoaderOptions o{.batch_size = 64, .order = Order::kFullShuffle, .seed = 11};
    o.output_dtype = dtype;
    if (dtype != DType::kUint8) {
      o.normalize_mean = {0.3f};
      o.normalize_std = {0.2f};
    }
    auto host = Open(o);
    o.device = {DeviceKind::kCuda, 0};
    o.device_buffers = 3;
    auto device = Open(o);
    ASSERT_TRUE(host && device);
    std::vector<std::byte> copied;
    for (int epoch = 0; epoch < 2; ++epoch) {
      for (Batch& d : device->Epoch(epoch)) {
        auto h = host->Next();
        ASSERT_TRUE(h.ok()) << h.status();
        ASSERT_EQ(d.device(), (DeviceSpec{DeviceKind::kCuda, 0}));
        ASSERT_EQ(d.bytes(), h->bytes());
        ASSERT_EQ(d.dtype(), dtype);
        copied.resize(d.bytes());
        ASSERT_TRUE(d.CopyToHost(copied).ok());
        ASSERT_EQ(std::memcmp(copied.data(), h->data(), d.bytes()), 0) << "batch " << d.index();
        std::vector<int64_t> labels(d.size());
        ASSERT_EQ(cudaMemcpy(labels.data(), d.device_labels(), d.size() * sizeof(int64_t),
                             cudaMemcpyDeviceToHost),
                  cudaSuccess);
        for (int64_t s = 0; s < d.size(); ++s) {
          ASSERT_EQ(labels[s], h->labels()[s]);
          ASSERT_EQ(d.labels()[s], h->labels()[s]);
        }
      }
      ASSERT_FALSE(*host->Next());  // end of the host's epoch too
    }
    const LoaderStats stats = device->stats();
    EXPECT_EQ(stats.device, "cuda:0");
    EXPECT_EQ(stats.stages.back().name, "copy");
    EXPECT_GT(stats.stages.back().Total().busy_seconds, 0.0);
  }
}

TEST_F(CudaDeviceTest, ASlowConsumerStreamNeverSeesItsBufferRefilled) {
  // Each step sleeps on the GPU, then checksums its batch there; the batch is
  // released as soon as the step is queued. Were a buffer refilled before its
  // step ran, the checksum would be of a later batch.
  LoaderOptions o{.batch_size = 32, .order = Order::kFullShuffle, .ring_slots = 3};
  o.device = {DeviceKind::kCuda, 0};
  o.device_buffers = 2;
  auto loader = Open(o);
  ASSERT_NE(loader, nullptr);
  const int64_t batches = loader->batches_per_epoch();
  unsigned long long* sums = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&sums), batches * sizeof(unsigned long long)),
            cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(sums, 0, batches * sizeof(unsigned long long), stream_), cudaSuccess);
  std::vector<std::vector<uint64_t>> indices;
  for (Batch& b : loader->Epoch(0)) {
    ASSERT_TRUE(b.MakeStreamWait(stream_).ok());
    ASSERT_EQ(testing::LaunchSleep(stream_, 2'000'000), cudaSuccess);
    ASSERT_EQ(testing::LaunchChecksum(b.data<uint8_t>(), b.bytes(), sums + b.index(), stream_),
              cudaSuccess);
    indices.emplace_back(b.indices().begin(), b.indices().end());
  }  // each batch released here, with its step still queued
  std::vector<unsigned long long> got(batches);
  ASSERT_EQ(cudaMemcpyAsync(got.data(), sums, batches * sizeof(unsigned long long),
                            cudaMemcpyDeviceToHost, stream_),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  for (int64_t k = 0; k < batches; ++k) {
    uint64_t want = 0;
    for (size_t s = 0; s < indices[k].size(); ++s) {
      for (size_t j = 0; j < kSampleBytes; ++j) {
        want += uint64_t{testing::SampleByte(indices[k][s], j)} *
                testing::WeightOf(s * kSampleBytes + j);
      }
    }
    EXPECT_EQ(got[k], want) << "batch " << k;
  }
  cudaFree(sums);
}

TEST_F(CudaDeviceTest, StoppingMidEpochWithCopiesInFlightReturns) {
  for (int round = 0; round < 3; ++round) {
    LoaderOptions o{.batch_size = 128, .ring_slots = 4, .device_buffers = 3};
    o.device = {DeviceKind::kCuda, 0};
    o.output_dtype = DType::kFloat32;
    auto loader = Open(o);
    ASSERT_NE(loader, nullptr);
    auto b = loader->Next();
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_TRUE(b->MakeStreamWait(stream_).ok());
    ASSERT_EQ(testing::LaunchSleep(stream_, 5'000'000), cudaSuccess);
    b->Release();
    if (round == 1) {
      ASSERT_TRUE(loader->Seek({2, 3}).ok());
    }
    // Destroyed with the step queued and copies waiting for it.
    loader.reset();
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  }
}

TEST_F(CudaDeviceTest, ABadDeviceIndexFailsAtOpen) {
  LoaderOptions o;
  o.device = {DeviceKind::kCuda, CudaDeviceCount()};
  auto l = Loader::Open(dataset_, o);
  EXPECT_EQ(l.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(l.status().message().find("does not exist"), std::string::npos) << l.status();
}

}  // namespace
}  // namespace stoke

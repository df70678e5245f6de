// stoke/torch.h on a GPU (label gpu; built against a libtorch with CUDA, which
// PyTorch's bundled one is): device batches become CUDA tensors over the
// loader's device buffers, and a consumer whose stream is slow never sees its
// buffer refilled under it, though the host runs ahead and frees the tensors.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <vector>

#include "stoke/loader.h"
#include "stoke/torch.h"
#include "testing/image_data.h"

namespace stoke {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (!::torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible to libtorch"

LoaderOptions Options(bool cuda) {
  LoaderOptions o;
  o.batch_size = 16;
  o.order = Order::kFullShuffle;
  o.seed = 7;
  o.device_buffers = 2;
  if (cuda) o.device = DeviceSpec{DeviceKind::kCuda, 0};
  return o;
}

// The per-batch sums of the same batches delivered to the CPU.
std::vector<int64_t> HostSums(int batches) {
  auto loader = Loader::Open(testing::ColourQuadrants(256, true), Options(false));
  EXPECT_TRUE(loader.ok()) << loader.status();
  std::vector<int64_t> sums;
  for (int i = 0; i < batches; ++i) {
    auto b = (*loader)->Next();
    EXPECT_TRUE(b.ok() && *b);
    int64_t sum = 0;
    for (size_t j = 0; j < b->bytes(); ++j) sum += b->data<uint8_t>()[j];
    sums.push_back(sum);
  }
  return sums;
}

TEST(TorchGpuTest, DeviceBatchesAreCudaTensorsOverTheDeviceBuffers) {
  SKIP_WITHOUT_GPU();
  auto loader = Loader::Open(testing::ColourQuadrants(256, true), Options(true));
  ASSERT_TRUE(loader.ok()) << loader.status();
  auto b = (*loader)->Next();
  ASSERT_TRUE(b.ok() && *b) << b.status();
  const void* data = b->data();
  const int64_t* labels = b->device_labels();
  torch::Tensors t = torch::ToTensors(std::move(*b));
  EXPECT_TRUE(t.images.is_cuda());
  EXPECT_TRUE(t.labels.is_cuda());
  EXPECT_EQ(t.images.data_ptr(), data);
  EXPECT_EQ(t.labels.data_ptr(), labels);
  EXPECT_EQ(t.images.sum().item<int64_t>(), HostSums(1)[0]);
}

TEST(TorchGpuTest, ASlowConsumerStreamNeverSeesItsBufferRefilled) {
  // Each batch's sum is queued on a side stream behind ~50 ms of matrix
  // products; the host frees the tensors at once and asks for the next batch.
  // With 2 device buffers, the copy engine would overwrite a buffer before the
  // sum read it if the release did not wait for the stream's work.
  SKIP_WITHOUT_GPU();
  constexpr int kBatches = 8;
  const std::vector<int64_t> expected = HostSums(kBatches);
  c10::cuda::CUDAStream slow = c10::cuda::getStreamFromPool(false, 0);
  c10::cuda::CUDAStreamGuard on_slow(slow);
  auto loader = Loader::Open(testing::ColourQuadrants(256, true), Options(true));
  ASSERT_TRUE(loader.ok()) << loader.status();
  at::Tensor m = ::torch::rand({2048, 2048}, ::torch::device(::torch::kCUDA));
  std::vector<at::Tensor> sums;
  for (int i = 0; i < kBatches; ++i) {
    auto b = (*loader)->Next();
    ASSERT_TRUE(b.ok() && *b) << b.status();
    torch::Tensors t = torch::ToTensors(std::move(*b));
    for (int k = 0; k < 20; ++k) m = ::torch::mm(m, m).clamp_(-1, 1);  // the slow step
    sums.push_back(t.images.sum());  // queued on `slow`, after the products
  }                                  // each batch's tensors freed here, long before its sum ran
  for (int i = 0; i < kBatches; ++i)
    EXPECT_EQ(sums[i].item<int64_t>(), expected[i]) << "batch " << i;
}

}  // namespace
}  // namespace stoke

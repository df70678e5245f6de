// GPU tests (ctest label gpu): skip when no CUDA device is visible.
// Pinned ring slots are page-locked, and a batch copies to the device and back
// asynchronously, bit-exact.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "cuda/pinned_memory.h"
#include "stoke/loader.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

bool HaveGpu() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();
  return ok;
}

TEST(PinnedRingGpuTest, SlotsArePinnedAndCopyToTheDeviceExactly) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device visible";
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 512, 16, 16);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok()) << d.status();
  auto loader =
      Loader::Open(*d, {.batch_size = 64, .order = Order::kFullShuffle, .pin_memory = true});
  ASSERT_TRUE(loader.ok()) << loader.status();
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 64 * 256), cudaSuccess);
  std::vector<uint8_t> back(64 * 256);
  for (Batch& b : (*loader)->Epoch(0)) {
    ASSERT_TRUE(internal::IsPinned(b.data<uint8_t>()));
    ASSERT_EQ(cudaMemcpyAsync(device, b.data<uint8_t>(), b.bytes(), cudaMemcpyHostToDevice, stream),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(back.data(), device, b.bytes(), cudaMemcpyDeviceToHost, stream),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    for (int64_t s = 0; s < b.size(); ++s) {
      for (int j = 0; j < 256; ++j) {
        ASSERT_EQ(back[s * 256 + j], testing::SampleByte(b.indices()[s], j));
      }
    }
  }
  cudaFree(device);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace stoke

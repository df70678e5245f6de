// GPU tests of the conversion kernels (ctest label gpu; skip without a GPU):
// on fresh random bytes, for every kernel (planar, interleaved with 2, 3 and 4
// channels, and the scalar one for shapes the vector kernels refuse), the GPU's
// float32 and float16 output is bit-identical to ConvertOnCpu's, and every
// output element is written (the output is poisoned with NaN first).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "copy/convert.h"
#include "copy/convert_kernel.h"
#include "stoke/device.h"

namespace stoke::internal {
namespace {

struct Shape {
  int channels;
  int64_t pixels;
  bool channels_last;
  bool vector;  // whether the vector kernels should take it
};

class ConvertKernelTest : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  }
};

TEST_P(ConvertKernelTest, MatchesTheCpuBitForBitAndWritesEveryElement) {
  const Shape shape = GetParam();
  std::mt19937_64 rng(::testing::UnitTest::GetInstance()->random_seed() + shape.pixels);
  for (const DType dtype : {DType::kFloat32, DType::kFloat16}) {
    for (const int64_t samples : {int64_t{1}, int64_t{5}}) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + ", " + std::to_string(samples) + " samples");
      ConvertPlan plan;
      plan.dtype = dtype;
      plan.channels = shape.channels;
      plan.pixels = shape.pixels;
      plan.channels_last = shape.channels_last;
      plan.in_sample_bytes = static_cast<size_t>(shape.channels * shape.pixels);
      plan.out_sample_bytes = plan.in_sample_bytes * (dtype == DType::kFloat16 ? 2 : 4);
      std::uniform_real_distribution<float> mean(0.2f, 0.8f);
      std::uniform_real_distribution<float> std_dev(0.1f, 0.4f);
      KernelConvertArgs args;
      args.channels = shape.channels;
      args.pixels = shape.pixels;
      args.channels_last = shape.channels_last;
      args.half = dtype == DType::kFloat16;
      args.in_sample_bytes = plan.in_sample_bytes;
      for (int c = 0; c < shape.channels; ++c) {
        const float s = std_dev(rng);
        plan.scale[c] = args.scale[c] = 1.0f / (255.0f * s);
        plan.bias[c] = args.bias[c] = -mean(rng) / s;
      }
      std::vector<uint8_t> in(plan.in_sample_bytes * samples);
      for (uint8_t& x : in) x = static_cast<uint8_t>(rng());
      std::vector<std::byte> want(plan.out_sample_bytes * samples);
      ConvertOnCpu(plan, in.data(), samples, want.data());

      uint8_t* d_in = nullptr;
      void* d_out = nullptr;
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_in), in.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&d_out, want.size()), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(d_in, in.data(), in.size(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemset(d_out, 0xff, want.size()), cudaSuccess);  // NaN in both dtypes
      EXPECT_EQ(VectorConvertApplies(args, d_in, d_out), shape.vector);
      ASSERT_EQ(LaunchConvert(args, d_in, samples, d_out, nullptr), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<std::byte> got(want.size());
      ASSERT_EQ(cudaMemcpy(got.data(), d_out, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      cudaFree(d_in);
      cudaFree(d_out);
      const size_t element = dtype == DType::kFloat16 ? 2 : 4;
      for (size_t i = 0; i < got.size(); i += element) {
        ASSERT_EQ(std::memcmp(&got[i], &want[i], element), 0) << "element " << i / element;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvertKernelTest,
    ::testing::Values(Shape{3, 224 * 224, true, true},  // ImageNet HWC: interleaved, 3
                      Shape{3, 32 * 32, false, true},   // CHW: planar
                      Shape{1, 28 * 28, true, true},    // one channel: planar
                      Shape{4, 64, true, true},         // interleaved, 4
                      Shape{2, 40, true, true},         // interleaved, 2
                      Shape{3, 7 * 7, true, false},     // pixels not a multiple of 8
                      Shape{5, 16, true, false},        // 5 interleaved channels
                      Shape{1, 13, false, false}));     // odd, one channel

TEST(ConvertKernelArgs, UnalignedBuffersTakeTheScalarKernel) {
  KernelConvertArgs args;
  args.channels = 3;
  args.pixels = 64;
  args.channels_last = true;
  args.in_sample_bytes = 192;
  alignas(16) static std::byte buffer[64];
  EXPECT_TRUE(VectorConvertApplies(args, buffer, buffer));
  EXPECT_FALSE(VectorConvertApplies(args, buffer + 4, buffer));
  EXPECT_FALSE(VectorConvertApplies(args, buffer, buffer + 8));
  args.in_sample_bytes = 200;  // samples not packed back to back
  EXPECT_FALSE(VectorConvertApplies(args, buffer, buffer));
}

}  // namespace
}  // namespace stoke::internal

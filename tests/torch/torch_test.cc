// stoke/torch.h: tensors over the batch's own memory, sharing its lease; the
// slot returns when the last tensor dies; a consumer holding every slot gets
// the loader's error, not a hang.
#include "stoke/torch.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "stoke/loader.h"
#include "testing/image_data.h"

namespace stoke {
namespace {

std::unique_ptr<Loader> OpenLoader(std::shared_ptr<Dataset> data, LoaderOptions o) {
  auto loader = Loader::Open(std::move(data), o);
  EXPECT_TRUE(loader.ok()) << loader.status();
  return loader.ok() ? std::move(*loader) : nullptr;
}

Batch NextBatch(Loader& loader) {
  StatusOr<Batch> b = loader.Next();
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? std::move(*b) : Batch();
}

TEST(TorchTest, ImagesAndLabelsAliasTheBatchAsChannelsLastNchw) {
  auto loader = OpenLoader(testing::ColourQuadrants(40, /*channels_last=*/true),
                           {.batch_size = 8, .ring_slots = 2});
  ASSERT_TRUE(loader);
  Batch batch = NextBatch(*loader);
  ASSERT_TRUE(batch);
  const void* data = batch.data();
  const int64_t* labels = batch.labels().data();
  const std::vector<uint8_t> pixels(batch.data<uint8_t>(), batch.data<uint8_t>() + batch.bytes());
  const std::vector<int64_t> label_values(batch.labels().begin(), batch.labels().end());

  torch::Tensors t = torch::ToTensors(std::move(batch));
  EXPECT_FALSE(batch);  // taken
  EXPECT_EQ(t.images.data_ptr(), data);
  EXPECT_EQ(t.labels.data_ptr(), labels);
  EXPECT_EQ(t.images.scalar_type(), at::kByte);
  EXPECT_EQ(t.images.sizes(), (std::vector<int64_t>{8, 3, 8, 8}));
  EXPECT_TRUE(t.images.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_EQ(t.labels.scalar_type(), at::kLong);
  EXPECT_EQ(t.labels.sizes(), (std::vector<int64_t>{8}));
  EXPECT_TRUE(t.images.device().is_cpu());
  // Element (n, c, y, x) is byte ((n*8 + y)*8 + x)*3 + c of the HWC batch.
  for (int64_t n : {0, 7}) {
    for (int64_t c = 0; c < 3; ++c) {
      for (int64_t y : {0, 5}) {
        for (int64_t x : {0, 3, 7}) {
          EXPECT_EQ(t.images[n][c][y][x].item<uint8_t>(), pixels[((n * 8 + y) * 8 + x) * 3 + c]);
        }
      }
    }
    EXPECT_EQ(t.labels[n].item<int64_t>(), label_values[static_cast<size_t>(n)]);
  }
  // Back to HWC without a copy.
  EXPECT_TRUE(t.images.permute({0, 2, 3, 1}).is_contiguous());
}

TEST(TorchTest, ConvertedBatchesAreContiguousNchwOfTheirDtype) {
  auto loader = OpenLoader(testing::ColourQuadrants(16, /*channels_last=*/true),
                           {.batch_size = 4, .output_dtype = DType::kFloat32});
  ASSERT_TRUE(loader);
  Batch batch = NextBatch(*loader);
  ASSERT_TRUE(batch);
  const void* data = batch.data();
  torch::Tensors t = torch::ToTensors(std::move(batch));
  EXPECT_EQ(t.images.data_ptr(), data);
  EXPECT_EQ(t.images.scalar_type(), at::kFloat);
  EXPECT_EQ(t.images.sizes(), (std::vector<int64_t>{4, 3, 8, 8}));
  EXPECT_TRUE(t.images.is_contiguous());
}

TEST(TorchTest, TheSlotReturnsWhenTheLastTensorDiesAndHoldingAllIsAnError) {
  // Two slots. Holding both batches' tensors, Next is refused with the
  // loader's error naming ring_slots; a view keeps a lease as its tensor
  // does; the slot returns only when the last of them goes.
  auto loader = OpenLoader(testing::ColourQuadrants(64, true), {.batch_size = 4, .ring_slots = 2});
  ASSERT_TRUE(loader);
  torch::Tensors first = torch::ToTensors(NextBatch(*loader));
  torch::Tensors second = torch::ToTensors(NextBatch(*loader));
  StatusOr<Batch> refused = loader->Next();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("ring_slots"), std::string::npos) << refused.status();

  at::Tensor view = first.images.slice(0, 1, 3);  // shares the storage
  first.images = at::Tensor();
  first.labels = at::Tensor();
  refused = loader->Next();
  EXPECT_FALSE(refused.ok()) << "the view still holds the first slot";

  view = at::Tensor();
  StatusOr<Batch> third = loader->Next();
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(third->index(), 2);  // the refusals did not advance the loader
}

TEST(TorchTest, TensorsMayKeepTheirLoaderAlive) {
  std::shared_ptr<Loader> loader =
      OpenLoader(testing::ColourQuadrants(16, true), {.batch_size = 4, .ring_slots = 2});
  ASSERT_TRUE(loader);
  Batch batch = NextBatch(*loader);
  const std::vector<uint8_t> pixels(batch.data<uint8_t>(), batch.data<uint8_t>() + batch.bytes());
  torch::Tensors t = torch::ToTensors(std::move(batch), loader);
  std::weak_ptr<Loader> alive = loader;
  loader.reset();
  EXPECT_FALSE(alive.expired());  // the tensors hold it
  EXPECT_EQ(t.images.permute({0, 2, 3, 1}).flatten()[5].item<uint8_t>(), pixels[5]);
  t = {};
  EXPECT_TRUE(alive.expired());  // the batch released, then the loader closed
}

TEST(TorchTest, AnEmptyBatchIsRefused) {
  EXPECT_THROW(torch::ToTensors(Batch()), std::invalid_argument);
}

}  // namespace
}  // namespace stoke

// The steady state allocates nothing: a counting global operator new, read after
// warm-up epochs. Its own executable, since it replaces operator new.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include <cstdio>
#include <filesystem>
#include <string>

#include "decode/synth_image.h"
#include "stoke/image.h"
#include "stoke/loader.h"
#include "stoke/shards.h"
#include "testing/test_data.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, std::align_val_t a) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const size_t align = static_cast<size_t>(a);
  if (void* p = std::aligned_alloc(align, (n + align - 1) / align * align)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace stoke {
namespace {

// Allocations over 3 epochs after 2 warm-up epochs (thread-local caches, queue
// blocks); 2 epochs' worth of failures stop it early.
uint64_t SteadyStateAllocations(Loader& loader, int warm_up = 2) {
  auto run_epoch = [&] {
    while (true) {
      auto b = loader.Next();
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok() || !*b) break;
    }
  };
  for (int e = 0; e < warm_up; ++e) run_epoch();
  const uint64_t before = g_allocations.load();
  for (int e = 0; e < 3; ++e) run_epoch();
  return g_allocations.load() - before;
}

TEST(AllocationTest, SteadyStateAllocatesNothing) {
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 2000, 8, 8);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok());
  for (IoBackend io : {IoBackend::kPread, IoBackend::kUring, IoBackend::kMmap}) {
    for (bool direct : {false, true}) {
      if (io == IoBackend::kMmap && direct) continue;  // refused: a mapping reads the cache
      if (!testing::Usable(io)) continue;              // no io_uring here
      auto loader = Loader::Open(*d, {.batch_size = 32,
                                      .order = Order::kFullShuffle,
                                      .decode_threads = direct ? 2 : 0,
                                      .io = io,
                                      .direct_io = direct});
      if (!loader.ok() && direct) continue;  // no O_DIRECT on this file system
      ASSERT_TRUE(loader.ok()) << loader.status();
      const uint64_t during = SteadyStateAllocations(**loader);
      EXPECT_EQ(during, 0u) << IoBackendName(io) << (direct ? " direct" : "") << ": " << during
                            << " allocations in 3 epochs of 63 batches";
    }
  }
}

TEST(AllocationTest, QuasiOrderAllocatesNothingInTheSteadyState) {
  // Windows of 20 samples, 4 a group: each epoch reads 100 windows in 25
  // groups through the window cache, and draws every sample from memory.
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 2000, 8, 8);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok());
  for (int decode_threads : {0, 2}) {
    auto loader = Loader::Open(*d, {.batch_size = 32,
                                    .order = Order::kQuasiRandom,
                                    .window_bytes = 20 * 64,
                                    .group_windows = 4,
                                    .decode_threads = decode_threads});
    ASSERT_TRUE(loader.ok()) << loader.status();
    EXPECT_EQ(SteadyStateAllocations(**loader), 0u) << decode_threads << " decode threads";
  }
}

// dir/images/class_K/NNNN.jpg for n synthetic JPEGs in 3 classes, and
// dir/web.tar of dir/web/NNNN.jpg + NNNN.cls (GNU tar): the file-backed image
// datasets' inputs.
void WriteJpegs(const testing::TempDir& dir, int n) {
  for (int i = 0; i < n; ++i) {
    const int w = 48 + 7 * (i % 5), h = 40 + 3 * (i % 4);
    auto jpeg = internal::EncodeJpeg(internal::SynthPixels(w, h, i, i % 3, 3), w, h, {});
    ASSERT_TRUE(jpeg.ok());
    const auto* p = reinterpret_cast<const uint8_t*>(jpeg->data());
    const std::vector<uint8_t> bytes(p, p + jpeg->size());
    char name[64];
    std::snprintf(name, sizeof name, "images/class_%d/%04d.jpg", i % 3, i);
    std::filesystem::create_directories(std::filesystem::path(dir.Join(name)).parent_path());
    testing::WriteFile(dir.Join(name), bytes);
    std::snprintf(name, sizeof name, "web/%04d", i);
    std::filesystem::create_directories(dir.Join("web"));
    testing::WriteFile(dir.Join(std::string(name) + ".jpg"), bytes);
    const std::string label = std::to_string(i % 3);
    testing::WriteFile(dir.Join(std::string(name) + ".cls"),
                       std::vector<uint8_t>(label.begin(), label.end()));
  }
  const std::string command =
      "tar --sort=name -cf " + dir.Join("web.tar") + " -C " + dir.path() + " web";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

TEST(AllocationTest, ShardsTarsAndImageFoldersDecodeWithoutAllocating) {
  // The decode entry builds a sample's name only on failure, so packed shards
  // (raw and JPEG) and WebDataset tars allocate nothing in steady state, fully
  // shuffled or in quasi order (windows read whole), nor does an image folder,
  // whose per-sample files each read request opens in a file object of its own. One decode thread
  // with centre crops has met every image's scratch size after the first epoch; a decoder's buffers
  // only grow, so random-resized crops stop allocating once each thread has decoded its largest
  // crop (not bounded by an epoch count).
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 1000, 8, 8);
  WriteJpegs(dir, 120);
  auto idx = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(idx.ok());
  ASSERT_TRUE(Pack(**idx, dir.Join("raw"), {.shard_bytes = 16 << 10}).ok());
  ImageOptions image;
  image.height = image.width = 24;
  image.flip = true;
  auto folder = OpenImageFolder({.root = dir.Join("images"), .image = image});
  ASSERT_TRUE(folder.ok()) << folder.status();
  ASSERT_TRUE(Pack(**folder, dir.Join("jpeg"), {.shard_bytes = 64 << 10}).ok());
  struct Case {
    const char* name;
    StatusOr<std::shared_ptr<Dataset>> dataset;
  };
  Case cases[] = {
      {"raw shards", OpenShards({.path = dir.Join("raw")})},
      {"jpeg shards", OpenShards({.path = dir.Join("jpeg"), .image = image})},
      {"tar", OpenTar({.path = dir.Join("web.tar"), .image = image})},
      {"image folder", folder},  // a file a sample: opened without allocating
  };
  for (Case& c : cases) {
    ASSERT_TRUE(c.dataset.ok()) << c.name << ": " << c.dataset.status();
    for (Order order : {Order::kFullShuffle, Order::kQuasiRandom}) {
      if (order == Order::kQuasiRandom && std::string(c.name) == "image folder") continue;
      auto loader = Loader::Open(*c.dataset, {.batch_size = 16,
                                              .order = order,
                                              .window_bytes = 8 << 10,
                                              .group_windows = 3,
                                              .decode_threads = 1,
                                              .io = IoBackend::kPread});
      ASSERT_TRUE(loader.ok()) << c.name << ": " << loader.status();
      EXPECT_EQ(SteadyStateAllocations(**loader), 0u) << c.name << ", " << OrderName(order);
    }
  }
}

TEST(AllocationTest, TheCopyEngineAllocatesNothingInTheSteadyStateEither) {
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 2000, 8, 8);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok());
  LoaderOptions o{.batch_size = 32, .order = Order::kFullShuffle};
  o.output_dtype = DType::kFloat16;  // converted on the cpu by the copy engine
  o.normalize_mean = {0.5f};
  o.normalize_std = {0.25f};
  auto loader = Loader::Open(*d, o);
  ASSERT_TRUE(loader.ok()) << loader.status();
  EXPECT_EQ(SteadyStateAllocations(**loader), 0u);
}

}  // namespace
}  // namespace stoke

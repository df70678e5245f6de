// The soak (issue 17), run with STOKE_SLOW=1 (skipped otherwise): a loader over
// a folder of JPEGs with bad files mixed in, under ErrorPolicy::kSkip, for many
// epochs with a seek in every epoch, and every third epoch cut short: the
// loader destroyed mid-epoch and a new one resumed from its position. The
// process's resident memory is sampled after every epoch; it must stay within
// the loader's ring and read buffers plus a stated constant, and be flat from
// the second epoch on. The samples are printed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "stoke/stoke.h"
#include "testing/jpeg_testing.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

constexpr int kEpochs = 60;
constexpr uint64_t kConstantBytes = uint64_t{64} << 20;  // beyond ring + read buffers
constexpr uint64_t kFlatBytes = uint64_t{4} << 20;       // growth allowed after epoch 2

uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// 600 JPEGs of 64 to 160 pixels in 6 classes, one in 30 damaged (truncated,
// garbage, or empty).
std::string WriteFolder(const testing::TempDir& dir) {
  const std::string root = dir.Join("images");
  for (int i = 0; i < 600; ++i) {
    const std::string cls = root + "/c" + std::to_string(i % 6);
    std::filesystem::create_directories(cls);
    testing::JpegBytes jpeg = testing::EncodeSynthJpeg(64 + i % 97, 64 + (i * 7) % 97, i);
    if (i % 30 == 7) jpeg.resize(jpeg.size() / 3);
    if (i % 30 == 17) std::fill(jpeg.begin() + 2, jpeg.end(), std::byte{0x5a});
    if (i % 30 == 27) jpeg.clear();
    std::ofstream(cls + "/" + std::to_string(i) + ".jpg", std::ios::binary)
        .write(reinterpret_cast<const char*>(jpeg.data()),
               static_cast<std::streamsize>(jpeg.size()));
  }
  return root;
}

TEST(SoakTest, SkipSeekResumeAndEarlyDestructionKeepMemoryBoundedAndFlat) {
  if (std::getenv("STOKE_SLOW") == nullptr || std::string(std::getenv("STOKE_SLOW")) != "1") {
    GTEST_SKIP() << "the soak runs with STOKE_SLOW=1";
  }
  testing::TempDir dir;
  auto folder = OpenImageFolder({.root = WriteFolder(dir), .image = {.height = 96, .width = 96}});
  ASSERT_TRUE(folder.ok()) << folder.status();
  LoaderOptions o;
  o.batch_size = 16;
  o.order = Order::kFullShuffle;
  o.decode_threads = 2;
  o.on_error = ErrorPolicy::kSkip;
  o.drop_last = true;
  const uint64_t before = ResidentBytes();
  std::vector<uint64_t> rss;
  uint64_t bound = 0;
  uint64_t skipped = 0;
  Position resume{0, 0};
  std::unique_ptr<Loader> loader;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    if (!loader) {
      o.start = resume;
      auto l = Loader::Open(*folder, o);
      ASSERT_TRUE(l.ok()) << l.status();
      loader = std::move(l).value();
      // The rest of the epoch the last loader was cut out of.
      while (resume.epoch < epoch) {
        auto batch = loader->Next();
        ASSERT_TRUE(batch.ok()) << batch.status();
        if (!*batch) break;
        ASSERT_EQ(batch->size(), o.batch_size);
      }
    }
    const int64_t n = loader->batches_per_epoch();
    // A seek back into this epoch, as a resumed or restarted consumer makes.
    ASSERT_TRUE(loader->Seek({epoch, n / 3}).ok());
    for (int64_t b = n / 3; b < n; ++b) {
      auto batch = loader->Next();
      ASSERT_TRUE(batch.ok()) << batch.status();
      ASSERT_EQ(batch->size(), o.batch_size);  // skip keeps the batch full
      if (epoch % 3 == 2 && b == 2 * n / 3) {
        // Cut short: the loader goes mid-epoch, with batches read ahead; the
        // next one resumes from where this stopped.
        resume = loader->position();
        break;
      }
    }
    const LoaderStats stats = loader->stats();
    bound = std::max(bound, stats.ring_bytes + stats.arena_bytes + kConstantBytes);
    skipped = std::max(skipped, stats.skipped);
    if (epoch % 3 == 2) {
      loader.reset();
    } else {
      auto end = loader->Next();  // the end of the epoch
      ASSERT_TRUE(end.ok()) << end.status();
      ASSERT_FALSE(*end);
      resume = {epoch + 1, 0};
    }
    rss.push_back(ResidentBytes());
  }
  std::printf("soak: RSS before the first loader %.1f MiB; after each epoch:", before / 1048576.0);
  for (uint64_t r : rss) std::printf(" %.1f", r / 1048576.0);
  std::printf(
      " MiB; bound (before + ring + read buffers + 64 MiB) %.1f MiB; %llu samples skipped\n",
      (before + bound) / 1048576.0, static_cast<unsigned long long>(skipped));
  EXPECT_GT(skipped, 0u);
  for (int e = 0; e < kEpochs; ++e) {
    EXPECT_LE(rss[e], before + bound) << "epoch " << e;
    if (e >= 1) {
      EXPECT_LE(rss[e], rss[1] + kFlatBytes) << "grew by epoch " << e;
    }
  }
}

}  // namespace
}  // namespace stoke

// The storage model: service times on a clock that only advances, so nothing
// here sleeps. Sequential reads pay no seek, random ones do; the bandwidth is
// shared; parallel requests overlap their latency; contents are unchanged.
#include "stoke/storage_model.h"

#include <gtest/gtest.h>

#include <mutex>

#include "testing/test_data.h"

namespace stoke {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Time moves only when a reader sleeps until a later point; or, frozen, not at
// all (as if every reader asked at the same instant), remembering the latest
// wake-up asked for.
class FakeClock final : public StorageClock {
 public:
  explicit FakeClock(bool frozen = false) : frozen_(frozen) {}
  Clock::time_point Now() override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void SleepUntil(Clock::time_point t) override {
    std::lock_guard<std::mutex> lock(mu_);
    latest_ = std::max(latest_, t);
    if (!frozen_) now_ = std::max(now_, t);
  }
  std::chrono::nanoseconds latest() {
    std::lock_guard<std::mutex> lock(mu_);
    return latest_ - Clock::time_point{};
  }
  std::chrono::nanoseconds elapsed() {
    std::lock_guard<std::mutex> lock(mu_);
    return now_ - Clock::time_point{};
  }

 private:
  const bool frozen_;
  std::mutex mu_;
  Clock::time_point now_{};
  Clock::time_point latest_{};
};

class StorageModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<uint8_t> bytes(1 << 20);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
    testing::WriteFile(dir_.Join("data"), bytes);
  }
  testing::TempDir dir_;
  FakeClock clock_;
};

TEST_F(StorageModelTest, PresetsAndCustomModelsParseAndBadOnesNameTheText) {
  auto hdd = ParseStorageModel("hdd");
  ASSERT_TRUE(hdd.ok());
  EXPECT_EQ(hdd->seek, 8ms);
  EXPECT_EQ(hdd->parallel_requests, 1);
  auto custom = ParseStorageModel("100,0.5,12,4");
  ASSERT_TRUE(custom.ok()) << custom.status();
  EXPECT_EQ(custom->bytes_per_second, 100e6);
  EXPECT_EQ(custom->latency, 500us);
  EXPECT_EQ(custom->seek, 12ms);
  EXPECT_EQ(custom->parallel_requests, 4);
  for (const char* bad : {"floppy", "100,1", "100,x,1", "100,1,1,0", "-5,1,1"}) {
    auto m = ParseStorageModel(bad);
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(m.status().message().find(bad), std::string::npos) << m.status();
  }
}

TEST_F(StorageModelTest, SequentialReadsPayOnlyBandwidthAndLatencyRandomOnesSeekToo) {
  StorageModel m{"test", 100e6, 1ms, 10ms, 1};  // 100 MB/s: 64 KiB in 0.655 ms
  auto fs = NewModelledFileSystem(DefaultFileSystem(), m, &clock_);
  auto file = fs->Open(dir_.Join("data"), {});
  ASSERT_TRUE(file.ok()) << file.status();
  std::vector<std::byte> buf(65536);
  for (uint64_t i = 0; i < 4; ++i) ASSERT_EQ(*(*file)->ReadAt(i * 65536, buf), 65536u);
  // First read seeks (nothing read before); the next three continue it.
  const auto transfer = std::chrono::nanoseconds(655360);
  EXPECT_EQ(clock_.elapsed(), 10ms + 4 * (1ms + transfer));
  const auto before = clock_.elapsed();
  ASSERT_EQ(*(*file)->ReadAt(0, buf), 65536u);  // back to the start: a seek
  EXPECT_EQ(clock_.elapsed() - before, 10ms + 1ms + transfer);
  // The bytes are the file's.
  EXPECT_EQ(static_cast<uint8_t>(buf[1000]), static_cast<uint8_t>(1000 * 7));
}

TEST_F(StorageModelTest, ParallelRequestsOverlapTheirLatencyButShareTheBandwidth) {
  // Four 1 MB requests at the same instant (5 ms latency, 1 ms transfer each):
  // one slot serves them one after another; four overlap their latency and
  // queue only for the bandwidth.
  for (int parallel : {1, 4}) {
    FakeClock clock(/*frozen=*/true);
    StorageModel m{"test", 1e9, 5ms, 0ns, parallel};
    auto fs = NewModelledFileSystem(DefaultFileSystem(), m, &clock);
    std::vector<std::byte> buf(1000000);
    for (int i = 0; i < 4; ++i) {
      auto f = fs->Open(dir_.Join("data"), {});
      ASSERT_TRUE(f.ok());
      ASSERT_TRUE((*f)->ReadAt(0, buf).ok());
    }
    EXPECT_EQ(clock.latest(), parallel == 1 ? 4 * (5ms + 1ms) : 5ms + 4 * 1ms) << parallel;
  }
}

TEST_F(StorageModelTest, ErrorsOfTheWrappedFileSystemPassThrough) {
  auto fs = NewModelledFileSystem(DefaultFileSystem(), *ParseStorageModel("nvme"), &clock_);
  auto missing = fs->Open(dir_.Join("missing"), {});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing"), std::string::npos);
  EXPECT_EQ(clock_.elapsed(), 0ns);
}

}  // namespace
}  // namespace stoke

// The read stage on its own (io/read_request.h, io/read_engine.h), without a
// loader: which reads coalesce, and both engines against real files, files of
// their own per sample, short reads, truncation, injected EIO (a failed merged
// read is read again sample by sample) and cancellation.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/read_engine.h"
#include "io/read_request.h"
#include "stoke/options.h"
#include "testing/fake_file_systems.h"
#include "testing/test_data.h"

namespace stoke::internal {
namespace {

constexpr size_t kRecord = 100;  // bytes a sample

// A file of n records; record i's byte j is testing::SampleByte(i, j).
std::vector<uint8_t> Records(int n) {
  std::vector<uint8_t> bytes;
  for (int i = 0; i < n; ++i) {
    for (size_t j = 0; j < kRecord; ++j) bytes.push_back(testing::SampleByte(i, j));
  }
  return bytes;
}

bool IsRecord(std::span<const std::byte> stored, int i) {
  if (stored.size() != kRecord) return false;
  for (size_t j = 0; j < kRecord; ++j) {
    if (std::to_integer<uint8_t>(stored[j]) != testing::SampleByte(i, j)) return false;
  }
  return true;
}

// Groups of reads of records, laid out back to back in one buffer (so that
// neighbouring records coalesce), and a sink that waits for them.
class Reads final : public ReadSink {
 public:
  // Record `records[k]` of `path` (opened per read unless `file` is given).
  Reads(FileSystem* fs, RandomAccessFile* file, const std::string& path,
        const std::vector<int>& records)
      : path_(path), requests_(records.size()), pointers_(records.size()) {
    buffer_.resize(records.size() * kRecord);
    for (size_t k = 0; k < records.size(); ++k) {
      ReadRequest& r = requests_[k];
      r.file_system = fs;
      r.file = file;
      r.path = &path_;
      r.offset = static_cast<uint64_t>(records[k]) * kRecord;
      r.length = kRecord;
      r.buffer = std::span(buffer_).subspan(k * kRecord, kRecord);
      r.cancelled = &cancelled_;
      PrepareRead(&r);
      pointers_[k] = &r;
    }
    group_.requests = pointers_.data();
    group_.count = pointers_.size();
  }

  void OnReadsDone(ReadGroup*) override {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  void RunOn(ReadEngine& engine) {
    engine.Submit(&group_);
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(30), [&] { return done_; }));
  }
  ReadRequest& operator[](size_t k) { return requests_[k]; }
  void Cancel() { cancelled_ = true; }

 private:
  const std::string path_;
  std::vector<std::byte> buffer_;
  std::vector<ReadRequest> requests_;
  std::vector<ReadRequest*> pointers_;
  ReadGroup group_;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// A file of `size` bytes that, like Linux, returns at most MAX_RW_COUNT bytes
// from one read and says a short read is the end of the file. It writes only
// the first byte of each read (the read's offset in GiB), so that a test can
// read gigabytes into untouched (uncommitted) memory.
class CappedFile final : public RandomAccessFile {
 public:
  explicit CappedFile(uint64_t size) : size_(size) {}
  StatusOr<size_t> ReadAt(uint64_t offset, Span<std::byte> dst) override {
    if (offset >= size_) return size_t{0};
    const uint64_t n = std::min<uint64_t>({dst.size(), size_ - offset, kMaxRwCount});
    if (n > 0) dst[0] = static_cast<std::byte>(offset >> 30);
    ++reads;
    return static_cast<size_t>(n);
  }
  StatusOr<uint64_t> Size() override { return size_; }
  const std::string& name() const override { return name_; }
  bool short_read_means_eof() const override { return true; }

  static constexpr uint64_t kMaxRwCount = 0x7ffff000;
  int reads = 0;

 private:
  const uint64_t size_;
  const std::string name_ = "capped";
};

TEST(ReadRequestTest, ReadsLongerThanMaxRwCountLoop) {
  // A 2.5 GiB range (a quasi-order window of a big shard, a coalesced run of
  // large records). Before the fix the first read came back with MAX_RW_COUNT
  // bytes and was taken for the end of the file: DataLoss "truncated".
  const uint64_t length = (uint64_t{5} << 30) / 2;
  CappedFile file(length + 100);
  std::unique_ptr<std::byte[]> memory(new std::byte[length]);  // left untouched
  ReadRequest r;
  r.file = &file;
  r.path = &file.name();
  r.offset = 100;
  r.length = length;
  r.buffer = std::span(memory.get(), length);
  PrepareRead(&r);
  ReadBlocking(&r);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.bytes_read, length);
  EXPECT_EQ(r.stored.size(), length);
  EXPECT_EQ(file.reads, 3);                        // 1 GiB, 1 GiB, 0.5 GiB
  EXPECT_EQ(memory[kMaxReadChunk], std::byte{1});  // the second read started at 1 GiB + 100
}

TEST(CoalesceTest, NeighboursInTheFileAndInMemoryReadAsOne) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("f"), Records(10));
  auto file = DefaultFileSystem()->Open(dir.Join("f"), {});
  ASSERT_TRUE(file.ok());
  Reads contiguous(DefaultFileSystem(), file->get(), dir.Join("f"), {2, 3, 4, 7, 8});
  ReadRequest* r[] = {&contiguous[0], &contiguous[1], &contiguous[2], &contiguous[3],
                      &contiguous[4]};
  EXPECT_EQ(CoalescibleCount(r, 5), 3u);  // 4 -> 7 skips records in the file
  EXPECT_EQ(CoalescedLength(r, 3), 3 * kRecord);
  EXPECT_EQ(CoalescibleCount(r + 3, 2), 2u);
  // A read of one record (a merged read's short tail) truncates the last.
  FinishCoalesced(r, 3, 2 * kRecord + 10);
  EXPECT_TRUE(r[0]->status.ok() && r[1]->status.ok());
  EXPECT_EQ(r[2]->status.code(), StatusCode::kDataLoss);
  EXPECT_NE(r[2]->status.message().find("the file ends after 10"), std::string::npos)
      << r[2]->status;
  // Per-sample files (no shared open file) never merge.
  Reads own(DefaultFileSystem(), nullptr, dir.Join("f"), {0, 1});
  ReadRequest* o[] = {&own[0], &own[1]};
  EXPECT_EQ(CoalescibleCount(o, 2), 1u);
}

struct EngineCase {
  const char* name;
  IoBackend io;
};

class ReadEngineTest : public ::testing::TestWithParam<EngineCase> {
 protected:
  void SetUp() override {
    if (!testing::Usable(GetParam().io)) GTEST_SKIP() << "io_uring is not usable here";
    testing::WriteFile(dir_.Join("f"), Records(20));
  }
  std::unique_ptr<ReadEngine> Make(ReadSink* sink) {
    if (GetParam().io == IoBackend::kPread) return MakePreadEngine(2, sink);
    auto engine = MakeUringEngine(2, sink);
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? std::move(engine).value() : nullptr;
  }
  testing::TempDir dir_;
};

TEST_P(ReadEngineTest, ReadsSharedAndPerSampleFilesAlike) {
  auto file = DefaultFileSystem()->Open(dir_.Join("f"), {});
  ASSERT_TRUE(file.ok());
  const std::vector<int> records = {5, 6, 7, 0, 19, 3};
  for (RandomAccessFile* shared : {file->get(), static_cast<RandomAccessFile*>(nullptr)}) {
    Reads reads(DefaultFileSystem(), shared, dir_.Join("f"), records);
    auto engine = Make(&reads);
    ASSERT_NE(engine, nullptr);
    reads.RunOn(*engine);
    for (size_t k = 0; k < records.size(); ++k) {
      ASSERT_TRUE(reads[k].status.ok()) << reads[k].status;
      EXPECT_TRUE(IsRecord(reads[k].stored, records[k])) << "record " << records[k];
    }
  }
}

TEST_P(ReadEngineTest, ShortReadsAreLoopedAndTheFilesEndIsNamed) {
  testing::FaultFileSystem faults(DefaultFileSystem(), {.max_bytes_per_read = 7});
  Reads reads(&faults, nullptr, dir_.Join("f"), {1, 2, 19});
  auto engine = Make(&reads);
  ASSERT_NE(engine, nullptr);
  reads.RunOn(*engine);
  for (size_t k = 0; k < 3; ++k) ASSERT_TRUE(reads[k].status.ok()) << reads[k].status;
  EXPECT_TRUE(IsRecord(reads[0].stored, 1));
  EXPECT_TRUE(IsRecord(reads[2].stored, 19));

  Reads past(DefaultFileSystem(), nullptr, dir_.Join("f"), {19, 20});  // 20 is past the end
  engine = Make(&past);
  past.RunOn(*engine);
  EXPECT_TRUE(past[0].status.ok());
  EXPECT_EQ(past[1].status.code(), StatusCode::kDataLoss);
  EXPECT_NE(past[1].status.message().find(dir_.Join("f") + ": truncated"), std::string::npos)
      << past[1].status;
}

TEST_P(ReadEngineTest, AFailedMergedReadIsReadAgainSampleBySample) {
  // The shared file merges records 3..6 into one read; that call fails (EIO),
  // so each record is read again on its own (four more calls), and all four
  // arrive: one failed call fails at most the reads it served alone.
  testing::FaultFileSystem faults(DefaultFileSystem(), {.eio_on_call = 1});
  auto file = faults.Open(dir_.Join("f"), {});
  ASSERT_TRUE(file.ok());
  Reads reads(&faults, file->get(), dir_.Join("f"), {3, 4, 5, 6});
  auto engine = Make(&reads);
  ASSERT_NE(engine, nullptr);
  reads.RunOn(*engine);
  for (size_t k = 0; k < 4; ++k) {
    ASSERT_TRUE(reads[k].status.ok()) << reads[k].status;
    EXPECT_TRUE(IsRecord(reads[k].stored, static_cast<int>(3 + k)));
  }
  EXPECT_EQ(faults.read_calls(), 5u);
}

TEST_P(ReadEngineTest, AnEioOnAPerSampleFileIsNamedForThatFile) {
  testing::FaultFileSystem faults(DefaultFileSystem(), {.eio_path_substring = "/f"});
  Reads reads(&faults, nullptr, dir_.Join("f"), {1, 2});
  auto engine = Make(&reads);
  ASSERT_NE(engine, nullptr);
  reads.RunOn(*engine);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_FALSE(reads[k].status.ok());
    EXPECT_NE(reads[k].status.message().find(dir_.Join("f")), std::string::npos) << reads[k].status;
  }
}

TEST_P(ReadEngineTest, CancelledReadsCompleteWithoutIo) {
  testing::FaultFileSystem faults(DefaultFileSystem(), {});
  Reads reads(&faults, nullptr, dir_.Join("f"), {1, 2});
  reads.Cancel();
  auto engine = Make(&reads);
  ASSERT_NE(engine, nullptr);
  reads.RunOn(*engine);
  EXPECT_EQ(reads[0].status.code(), StatusCode::kCancelled);
  EXPECT_EQ(reads[1].status.code(), StatusCode::kCancelled);
  EXPECT_EQ(faults.read_calls(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Engines, ReadEngineTest,
                         ::testing::Values(EngineCase{"pread", IoBackend::kPread},
                                           EngineCase{"uring", IoBackend::kUring}),
                         [](const auto& test) { return std::string(test.param.name); });

}  // namespace
}  // namespace stoke::internal

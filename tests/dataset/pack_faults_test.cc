// stoke pack under I/O faults (issue 17): ENOSPC and EIO on a write, a failed
// open, fsync, close or rename, at the first shard and at a later one. Each
// fails the pack naming the file and the cause, leaves no shard (nor a .tmp)
// behind that could read as a valid dataset, and leaves the source as it was.
// Short writes are not a fault: the shards come out byte for byte the same.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "dataset/shard_io.h"
#include "stoke/stoke.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

class PackFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteIdx(dir_.Join("images"), dir_.Join("labels"), 300, 8, 8);
    source_ = testing::ReadFileBytes(dir_.Join("images"));
    auto d = OpenIdx({.images_path = dir_.Join("images"), .labels_path = dir_.Join("labels")});
    ASSERT_TRUE(d.ok()) << d.status();
    dataset_ = *d;
  }

  // Packs into `name` through `io`: about 5 shards of 4 KiB.
  StatusOr<PackResult> PackThrough(const internal::ShardIo& io, const std::string& name) {
    return internal::PackWith(io, *dataset_, dir_.Join(name), {.shard_bytes = 4096});
  }

  // What a failed pack must leave: no file in the folder, the source intact.
  void ExpectNothingLeft(const std::string& name) {
    std::vector<std::string> left;
    for (const auto& e : std::filesystem::directory_iterator(dir_.Join(name))) {
      left.push_back(e.path().filename().string());
    }
    EXPECT_TRUE(left.empty()) << left.size() << " files left, e.g. " << left[0];
    EXPECT_EQ(OpenShards({.path = dir_.Join(name)}).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(testing::ReadFileBytes(dir_.Join("images")), source_);
  }

  testing::TempDir dir_;
  std::vector<uint8_t> source_;
  std::shared_ptr<Dataset> dataset_;
};

// The system's calls, with `fail` deciding per call (its count so far) whether
// to fail it with `err` instead.
internal::ShardIo Failing(const std::string& call, int after, int err) {
  internal::ShardIo io = internal::SystemShardIo();
  auto count = std::make_shared<int>(0);
  auto fails = [=] { return (*count)++ >= after; };
  if (call == "write") {
    io.write = [=](int fd, const void* p, size_t n) -> ssize_t {
      if (fails()) {
        errno = err;
        return -1;
      }
      return ::write(fd, p, n);
    };
  } else if (call == "open") {
    io.open = [=](const char* path, int flags, mode_t mode) {
      if (fails()) {
        errno = err;
        return -1;
      }
      return ::open(path, flags, mode);
    };
  } else if (call == "fsync") {
    io.fsync = [=](int fd) {
      if (fails()) {
        errno = err;
        return -1;
      }
      return ::fsync(fd);
    };
  } else if (call == "close") {
    io.close = [=](int fd) {
      if (fails()) {
        ::close(fd);  // closed all the same, as close(2) does on EIO
        errno = err;
        return -1;
      }
      return ::close(fd);
    };
  } else if (call == "rename") {
    io.rename = [=](const char* from, const char* to) {
      if (fails()) {
        errno = err;
        return -1;
      }
      return ::rename(from, to);
    };
  }
  return io;
}

struct Fault {
  std::string call;
  int after;  // calls that succeed first: 0 fails the first shard, more a later one
  int err;
  std::string names;  // in the message: the file
};

TEST_F(PackFaultsTest, EveryFaultFailsThePackNamingTheFileAndLeavesNothing) {
  const std::vector<Fault> faults = {
      {"write", 0, ENOSPC, "shard-000000.stk.tmp: write at offset 0"},
      {"write", 200, ENOSPC, ".stk.tmp: write at offset"},
      {"write", 120, EIO, ".stk.tmp: write at offset"},
      {"open", 0, EACCES, "shard-000000.stk.tmp: create"},
      {"open", 2, EMFILE, "shard-000002.stk.tmp: create"},
      {"fsync", 0, EIO, "shard-000000.stk.tmp: fsync"},
      {"fsync", 3, ENOSPC, "shard-000003.stk.tmp: fsync"},
      {"close", 1, EIO, "shard-000001.stk.tmp: close"},
      {"rename", 0, EXDEV, "shard-000000.stk: rename"},
      {"rename", 2, EACCES, "shard-000002.stk: rename"},
  };
  int n = 0;
  for (const Fault& f : faults) {
    SCOPED_TRACE(f.call + " fails after " + std::to_string(f.after) + " with " +
                 std::strerror(f.err));
    const std::string name = "out" + std::to_string(n++);
    auto packed = PackThrough(Failing(f.call, f.after, f.err), name);
    ASSERT_FALSE(packed.ok());
    const std::string& m = packed.status().message();
    EXPECT_NE(m.find(f.names), std::string::npos) << m;
    EXPECT_NE(m.find(std::strerror(f.err)), std::string::npos) << m;
    ExpectNothingLeft(name);
  }
}

TEST_F(PackFaultsTest, ShortWritesGiveTheSameShards) {
  auto normal = PackThrough(internal::SystemShardIo(), "normal");
  ASSERT_TRUE(normal.ok()) << normal.status();
  ASSERT_GE(normal->shards, 4u);
  internal::ShardIo io = internal::SystemShardIo();
  io.write = [](int fd, const void* p, size_t n) { return ::write(fd, p, std::min<size_t>(n, 7)); };
  auto short_writes = PackThrough(io, "short");
  ASSERT_TRUE(short_writes.ok()) << short_writes.status();
  EXPECT_EQ(short_writes->shards, normal->shards);
  for (uint64_t s = 0; s < normal->shards; ++s) {
    char shard[32];
    std::snprintf(shard, sizeof shard, "/shard-%06llu.stk", static_cast<unsigned long long>(s));
    EXPECT_EQ(testing::ReadFileBytes(dir_.Join("short") + shard),
              testing::ReadFileBytes(dir_.Join("normal") + shard));
  }
}

}  // namespace
}  // namespace stoke

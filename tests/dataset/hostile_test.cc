// Hand-made hostile files (issue 17): an IDX header whose sizes overflow 64
// bits, a gzipped IDX that inflates far beyond what its header declares (a
// decompression bomb: refused without inflating it, the peak memory measured),
// a gzipped IDX cut short, and tar headers whose checksums are wrong.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "dataset/npy.h"
#include "stoke/stoke.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

std::vector<uint8_t> IdxHeader(uint8_t type, std::vector<uint32_t> dims) {
  std::vector<uint8_t> h = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) h.push_back(static_cast<uint8_t>(d >> shift));
  }
  return h;
}

void Append(std::vector<uint8_t>* a, const std::vector<uint8_t>& b) {
  a->insert(a->end(), b.begin(), b.end());
}

class HostileIdxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteFile(dir_.Join("labels"), [] {
      std::vector<uint8_t> l = IdxHeader(0x08, {1});
      l.push_back(3);
      return l;
    }());
  }
  StatusOr<std::shared_ptr<Dataset>> Open(const std::vector<uint8_t>& images) {
    testing::WriteFile(dir_.Join("images"), images);
    return OpenIdx({.images_path = dir_.Join("images"), .labels_path = dir_.Join("labels")});
  }
  testing::TempDir dir_;
};

TEST_F(HostileIdxTest, AHeaderWhoseSizesOverflowNamesItsDimensionsNotAWrappedProduct) {
  std::vector<uint8_t> file = IdxHeader(0x08, {2147483647, 2147483647, 2147483647});
  file.resize(file.size() + 64);
  auto d = Open(file);
  ASSERT_EQ(d.status().code(), StatusCode::kDataLoss) << d.status();
  const std::string& m = d.status().message();
  EXPECT_NE(m.find("images: IDX header declares 2147483647x2147483647x2147483647 uint8"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("more bytes than 64 bits can count"), std::string::npos) << m;
  EXPECT_EQ(m.find("bytes with the header"), std::string::npos) << m;  // no wrapped total
  // Gzipped, the same header is refused before anything is inflated.
  auto gz = Open(testing::Gzip(file));
  ASSERT_EQ(gz.status().code(), StatusCode::kDataLoss) << gz.status();
  EXPECT_NE(gz.status().message().find("2147483647x2147483647x2147483647"), std::string::npos);
  // And a header that fits 64 bits but not the memory budget: ResourceExhausted.
  auto big = Open(testing::Gzip(IdxHeader(0x0D, {1000000, 1000, 1000})));
  ASSERT_EQ(big.status().code(), StatusCode::kResourceExhausted) << big.status();
  EXPECT_NE(big.status().message().find("1000000x1000x1000 float32"), std::string::npos);
  EXPECT_NE(big.status().message().find("max_decompressed_bytes"), std::string::npos);
}

// The peak resident memory (KiB) a child process adds while opening `path`;
// its exit status says whether the open failed with DataLoss naming the cause.
long OpenInChildPeakKiB(const std::string& images, const std::string& labels, bool* refused) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    rusage before{};
    getrusage(RUSAGE_SELF, &before);
    auto d = OpenIdx({.images_path = images, .labels_path = labels});
    rusage after{};
    getrusage(RUSAGE_SELF, &after);
    const long grown = after.ru_maxrss - before.ru_maxrss;
    const bool ok = !d.ok() && d.status().code() == StatusCode::kDataLoss &&
                    d.status().message().find(
                        "decompresses to more than the 800 bytes its IDX "
                        "header declares (1x28x28 uint8)") != std::string::npos;
    if (!ok) std::fprintf(stderr, "%s\n", d.status().ToString().c_str());
    (void)!write(fds[1], &grown, sizeof grown);
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  long grown = -1;
  EXPECT_EQ(read(fds[0], &grown, sizeof grown), static_cast<ssize_t>(sizeof grown));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  *refused = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return grown;
}

TEST_F(HostileIdxTest, AGzipBombStopsAtWhatTheHeaderDeclaresAndCostsNoMoreMemory) {
  // 1 sample of 28x28 declared; 200 MiB of zeros follow (200 members of 1 MiB,
  // about 200 KB compressed).
  std::vector<uint8_t> file = testing::Gzip([] {
    std::vector<uint8_t> first = IdxHeader(0x08, {1, 28, 28});
    first.resize(first.size() + 28 * 28);
    return first;
  }());
  const std::vector<uint8_t> mib = testing::Gzip(std::vector<uint8_t>(1 << 20));
  for (int i = 0; i < 200; ++i) Append(&file, mib);
  testing::WriteFile(dir_.Join("bomb.gz"), file);
  bool refused = false;
  const long grown_kib = OpenInChildPeakKiB(dir_.Join("bomb.gz"), dir_.Join("labels"), &refused);
  EXPECT_TRUE(refused);
  // The compressed file (about 200 KB) and the declared 800 bytes; before this,
  // the whole 200 MiB was inflated. 8 MiB leaves room for the allocator.
  std::printf("peak RSS grew by %ld KiB opening a %zu-byte gzip bomb of 200 MiB\n", grown_kib,
              file.size());
  EXPECT_LT(grown_kib, 8 * 1024);
}

TEST_F(HostileIdxTest, AGzipStreamShorterThanItsHeaderSaysNamesBothSizes) {
  std::vector<uint8_t> data = IdxHeader(0x08, {1, 28, 28});
  data.resize(data.size() + 100);  // 684 bytes short
  auto d = Open(testing::Gzip(data));
  ASSERT_EQ(d.status().code(), StatusCode::kDataLoss) << d.status();
  EXPECT_NE(d.status().message().find("(800 bytes with the header) but the file decompresses to "
                                      "116"),
            std::string::npos)
      << d.status();
}

TEST(HostileNpyTest, AShapeWhoseProductOverflowsIsRefusedNamingIt) {
  const std::vector<uint8_t> npy =
      testing::NpyBytes({int64_t{1} << 39, int64_t{1} << 39, 4}, std::vector<uint8_t>(16), "<f4");
  const auto* p = reinterpret_cast<const std::byte*>(npy.data());
  auto h = internal::ParseNpyHeader({p, npy.size()}, "a.npy");
  ASSERT_EQ(h.status().code(), StatusCode::kDataLoss) << h.status();
  EXPECT_NE(
      h.status().message().find("a.npy: .npy header declares shape 549755813888x549755813888x4 "
                                "float32, more than 1 TiB"),
      std::string::npos)
      << h.status();
}

TEST(HostileTarTest, AHeaderWithAWrongChecksumIsRefusedNamingTheTarAndOffset) {
  testing::TempDir dir;
  ASSERT_EQ(std::system(("mkdir -p " + dir.Join("w") + " && printf 1 > " + dir.Join("w/a.cls") +
                         " && printf x > " + dir.Join("w/a.jpg") + " && printf 2 > " +
                         dir.Join("w/b.cls") + " && printf y > " + dir.Join("w/b.jpg") +
                         " && tar --format=ustar --sort=name -cf " + dir.Join("t.tar") + " -C " +
                         dir.Join("w") + " a.cls a.jpg b.cls b.jpg")
                            .c_str()),
            0);
  std::vector<uint8_t> tar = testing::ReadFileBytes(dir.Join("t.tar"));
  ASSERT_TRUE(OpenTar({.path = dir.Join("t.tar")}).ok());  // GNU tar's checksums pass
  // The third member's header (a.cls, a.jpg, then b.cls at 2048): one bit of
  // its name flipped, as a damaged disk or a non-tar file would.
  tar[2048] ^= 0x01;
  testing::WriteFile(dir.Join("bad.tar"), tar);
  auto bad = OpenTar({.path = dir.Join("bad.tar")});
  ASSERT_EQ(bad.status().code(), StatusCode::kDataLoss) << bad.status();
  EXPECT_NE(
      bad.status().message().find("bad.tar: the tar header at offset 2048 fails its checksum"),
      std::string::npos)
      << bad.status();
  // GNU tar refuses it too.
  EXPECT_NE(std::system(("tar -tf " + dir.Join("bad.tar") + " >/dev/null 2>&1").c_str()), 0);
}

}  // namespace
}  // namespace stoke

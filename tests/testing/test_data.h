// Datasets written by tests: IDX, CIFAR and .npy/raw list files whose sample i
// has bytes that encode i, so that every batch's contents can be checked.
#ifndef STOKE_TESTS_TESTING_TEST_DATA_H_
#define STOKE_TESTS_TESTING_TEST_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

namespace stoke {
enum class IoBackend;
}

namespace stoke::testing {

// Whether this kernel lets the process use io_uring (containers may forbid it);
// tests of IoBackend::kUring skip it where not.
bool UringAvailable();
// kUring only where available; every other backend always.
bool Usable(IoBackend io);

// A fresh empty directory under the test temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Byte j of sample i: a pattern no two samples share in practice.
uint8_t SampleByte(uint64_t i, uint64_t j);
// Label of sample i.
int64_t SampleLabel(uint64_t i);

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes);
std::vector<uint8_t> ReadFileBytes(const std::string& path);

// One gzip member of `in`.
std::vector<uint8_t> Gzip(const std::vector<uint8_t>& in);

// IDX images (n x rows x cols uint8) and labels, optionally gzipped.
void WriteIdx(const std::string& images, const std::string& labels, uint64_t n, int rows, int cols,
              bool gzip = false);
// The train split of an IDX dataset in `dir` (train-images-idx3-ubyte and
// train-labels-idx1-ubyte), for OpenIdxSplit(dir.path(), "train").
void WriteIdxSplit(const TempDir& dir, uint64_t n, int rows, int cols);
// A CIFAR-10 (or -100) batch file of n records.
void WriteCifar(const std::string& path, uint64_t n, bool cifar100, uint64_t first_index = 0);
// n .npy files of shape {rows, cols} uint8 and a list file naming them; returns its path.
std::string WriteNpyList(const TempDir& dir, uint64_t n, int rows, int cols);
// The bytes of a .npy file holding a uint8 array of `shape` with `payload`.
std::vector<uint8_t> NpyBytes(const std::vector<int64_t>& shape,
                              const std::vector<uint8_t>& payload,
                              const std::string& descr = "|u1");

}  // namespace stoke::testing

#endif  // STOKE_TESTS_TESTING_TEST_DATA_H_

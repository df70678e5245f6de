#include "testing/test_data.h"

#include <linux/io_uring.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "stoke/options.h"

namespace stoke::testing {

bool UringAvailable() {
  static const bool available = [] {
    io_uring_params params{};
    const long fd = ::syscall(__NR_io_uring_setup, 1, &params);
    if (fd < 0) return false;
    ::close(static_cast<int>(fd));
    return true;
  }();
  return available;
}

bool Usable(IoBackend io) { return io != IoBackend::kUring || UringAvailable(); }

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/stoke_test_XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

uint8_t SampleByte(uint64_t i, uint64_t j) {
  uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ (j * 0xbf58476d1ce4e5b9ull);
  x ^= x >> 31;
  return static_cast<uint8_t>(x);
}

int64_t SampleLabel(uint64_t i) { return static_cast<int64_t>(i % 10); }

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<uint8_t> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

namespace {

void PutBigEndian32(std::vector<uint8_t>* out, uint32_t v) {
  out->push_back(static_cast<uint8_t>(v >> 24));
  out->push_back(static_cast<uint8_t>(v >> 16));
  out->push_back(static_cast<uint8_t>(v >> 8));
  out->push_back(static_cast<uint8_t>(v));
}

}  // namespace

std::vector<uint8_t> Gzip(const std::vector<uint8_t>& in) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::vector<uint8_t> out(deflateBound(&zs, in.size()) + 64);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

void WriteIdx(const std::string& images, const std::string& labels, uint64_t n, int rows, int cols,
              bool gzip) {
  std::vector<uint8_t> img = {0, 0, 0x08, 3};
  PutBigEndian32(&img, static_cast<uint32_t>(n));
  PutBigEndian32(&img, static_cast<uint32_t>(rows));
  PutBigEndian32(&img, static_cast<uint32_t>(cols));
  const uint64_t sample = static_cast<uint64_t>(rows) * cols;
  for (uint64_t i = 0; i < n; ++i) {
    for (uint64_t j = 0; j < sample; ++j) img.push_back(SampleByte(i, j));
  }
  std::vector<uint8_t> lab = {0, 0, 0x08, 1};
  PutBigEndian32(&lab, static_cast<uint32_t>(n));
  for (uint64_t i = 0; i < n; ++i) lab.push_back(static_cast<uint8_t>(SampleLabel(i)));
  WriteFile(images, gzip ? Gzip(img) : img);
  WriteFile(labels, gzip ? Gzip(lab) : lab);
}

void WriteIdxSplit(const TempDir& dir, uint64_t n, int rows, int cols) {
  WriteIdx(dir.Join("train-images-idx3-ubyte"), dir.Join("train-labels-idx1-ubyte"), n, rows, cols);
}

void WriteCifar(const std::string& path, uint64_t n, bool cifar100, uint64_t first_index) {
  std::vector<uint8_t> out;
  for (uint64_t i = first_index; i < first_index + n; ++i) {
    if (cifar100) out.push_back(static_cast<uint8_t>(SampleLabel(i) / 2));  // coarse
    out.push_back(static_cast<uint8_t>(SampleLabel(i)));
    for (uint64_t j = 0; j < 3 * 32 * 32; ++j) out.push_back(SampleByte(i, j));
  }
  WriteFile(path, out);
}

std::vector<uint8_t> NpyBytes(const std::vector<int64_t>& shape,
                              const std::vector<uint8_t>& payload, const std::string& descr) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.push_back(static_cast<uint8_t>(header.size() & 0xff));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::string WriteNpyList(const TempDir& dir, uint64_t n, int rows, int cols) {
  std::string list;
  const uint64_t sample = static_cast<uint64_t>(rows) * cols;
  for (uint64_t i = 0; i < n; ++i) {
    std::vector<uint8_t> payload(sample);
    for (uint64_t j = 0; j < sample; ++j) payload[j] = SampleByte(i, j);
    const std::string name = "s" + std::to_string(i) + ".npy";
    WriteFile(dir.Join(name), NpyBytes({rows, cols}, payload));
    list += name + " " + std::to_string(SampleLabel(i)) + "\n";
  }
  const std::string path = dir.Join("list.txt");
  WriteFile(path, std::vector<uint8_t>(list.begin(), list.end()));
  return path;
}

}  // namespace stoke::testing

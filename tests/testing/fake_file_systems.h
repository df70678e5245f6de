// File systems for tests: one in memory, and one that fails on demand.
#ifndef STOKE_TESTS_TESTING_FAKE_FILE_SYSTEMS_H_
#define STOKE_TESTS_TESTING_FAKE_FILE_SYSTEMS_H_

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "stoke/file_system.h"

namespace stoke::testing {

// Files held in memory. Thread-safe.
class MemoryFileSystem final : public FileSystem {
 public:
  void Write(const std::string& path, std::vector<std::byte> data);
  StatusOr<std::unique_ptr<RandomAccessFile>> Open(const std::string& path,
                                                   const FileOptions& options) override;

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const std::vector<std::byte>>> files_;  // guarded by mu_
};

// Wraps another file system and injects faults into ReadAt. Its files have no
// native handle, so every engine reads them through ReadAt and sees the faults.
class FaultFileSystem final : public FileSystem {
 public:
  struct Faults {
    // ReadAt calls on files whose path contains this fail with EIO (empty: none).
    std::string eio_path_substring{};
    // The Nth ReadAt call overall (1-based) fails with EIO (0: never).
    uint64_t eio_on_call = 0;
    // Each ReadAt returns at most this many bytes (0: no limit): short reads.
    size_t max_bytes_per_read = 0;
    // Each ReadAt sleeps this long first: a slow disk.
    std::chrono::microseconds delay{0};
  };
  FaultFileSystem(FileSystem* base, Faults faults) : base_(base), faults_(faults) {}

  StatusOr<std::unique_ptr<RandomAccessFile>> Open(const std::string& path,
                                                   const FileOptions& options) override;
  uint64_t read_calls() const { return calls_.load(); }

 private:
  friend class FaultFile;
  FileSystem* const base_;
  const Faults faults_;
  std::atomic<uint64_t> calls_{0};
};

}  // namespace stoke::testing

#endif  // STOKE_TESTS_TESTING_FAKE_FILE_SYSTEMS_H_

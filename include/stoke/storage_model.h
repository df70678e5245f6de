// stoke/storage_model.h: what if the data lived on a slower disk?
//
// A StorageModel describes a device by its bandwidth, per-request latency,
// positioning (seek) time for a read that does not continue the previous one,
// and the requests it serves at once. NewModelledFileSystem wraps a file system
// so that every read takes the time that device would take, measured from when
// the device is free: reads queue behind each other as on the real device, and
// the page cache never helps (every read is "cold"). `stoke profile
// --storage-model hdd` uses it to show a slow disk without having one.
//
// Presets (typical figures, not a specific product):
//   hdd       7200 rpm: 160 MB/s, 0.1 ms, 8 ms seek, 1 request at a time
//   sata-ssd  530 MB/s, 0.1 ms, no seek, 32 at a time
//   nvme      3 GB/s, 0.08 ms, no seek, 64 at a time
//   s3        an object store in the instance's region: 30 ms to the first
//             byte, 256 requests at a time, 1.25 GB/s in all (a 10 Gb/s
//             NIC). The latency is an assumption to check against your own
//             store (stoke profile s3://... measures it); AWS documents the
//             request rate (5,500 GETs/s a prefix) and advises byte-range
//             GETs of 8 to 16 MB ("Optimizing Amazon S3 performance"), which
//             the quasi order's windows are. Reading through it takes as many
//             read threads as requests at a time (stoke profile raises
//             --read-threads to 256 for it).
//   ram       no delay (the wrapped file system's own speed)
//
// Thread safety: the file system and its files may be used from many threads.
//
//   auto model = stoke::ParseStorageModel("hdd");
//   auto slow = stoke::NewModelledFileSystem(stoke::DefaultFileSystem(), *model);
//   auto data = stoke::OpenIdxSplit(dir, "train", slow.get());  // slow outlives data
#ifndef STOKE_STORAGE_MODEL_H_
#define STOKE_STORAGE_MODEL_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "stoke/file_system.h"
#include "stoke/status.h"

namespace stoke {

struct StorageModel {
  std::string name = "ram";
  double bytes_per_second = 0;  // 0: unlimited
  std::chrono::nanoseconds latency{0};
  std::chrono::nanoseconds seek{0};  // when a read does not start where the last ended
  int parallel_requests = 1;         // requests in service at once
};

// "hdd", "sata-ssd", "nvme", "ram", or "BW,LATENCY,SEEK[,PARALLEL]" with BW in
// MB/s and the times in ms, e.g. "100,0.2,12". InvalidArgument naming `text`.
StatusOr<StorageModel> ParseStorageModel(std::string_view text);

// When a modelled read may complete; tests substitute a clock that only
// advances. The default sleeps on std::chrono::steady_clock.
class StorageClock {
 public:
  virtual ~StorageClock() = default;
  virtual std::chrono::steady_clock::time_point Now() = 0;
  virtual void SleepUntil(std::chrono::steady_clock::time_point t) = 0;
};

// `base` and `clock` (null: the real one) must outlive the result. Files keep
// base's errors and contents; they have no native handle, so every engine reads
// them through ReadAt (io_uring and mmap fall back to the pread pool).
std::unique_ptr<FileSystem> NewModelledFileSystem(FileSystem* base, const StorageModel& model,
                                                  StorageClock* clock = nullptr);

}  // namespace stoke

#endif  // STOKE_STORAGE_MODEL_H_

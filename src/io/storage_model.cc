// The modelled device: one timeline shared by all its files. A read waits for a
// free request slot, then positions (seek, unless it continues the previous
// read of the device), waits the latency, and transfers its bytes when the
// device's bandwidth is free; the caller sleeps until that completion time.
#include "stoke/storage_model.h"

#include <algorithm>
#include <charconv>
#include <mutex>
#include <thread>
#include <vector>

namespace stoke {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::nanoseconds;

class RealClock final : public StorageClock {
 public:
  Clock::time_point Now() override { return Clock::now(); }
  void SleepUntil(Clock::time_point t) override { std::this_thread::sleep_until(t); }
};

class Device {
 public:
  Device(const StorageModel& model, StorageClock* clock)
      : model_(model), clock_(clock), slots_(static_cast<size_t>(model.parallel_requests)) {}

  // When a read of `bytes` at `offset` of file `file` completes.
  Clock::time_point Schedule(const void* file, uint64_t offset, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point now = clock_->Now();
    auto slot = std::min_element(slots_.begin(), slots_.end());
    Clock::time_point t = std::max(now, *slot);
    if (model_.seek.count() > 0 && !(file == last_file_ && offset == last_end_)) t += model_.seek;
    t += model_.latency;
    if (model_.bytes_per_second > 0) {
      const auto transfer = nanoseconds(
          static_cast<int64_t>(static_cast<double>(bytes) / model_.bytes_per_second * 1e9));
      const Clock::time_point start = std::max(t, bus_free_);
      bus_free_ = start + transfer;
      t = bus_free_;
    }
    *slot = t;
    last_file_ = file;
    last_end_ = offset + bytes;
    return t;
  }

  StorageClock* clock() const { return clock_; }

 private:
  const StorageModel model_;
  StorageClock* const clock_;
  std::mutex mu_;
  std::vector<Clock::time_point> slots_;  // guarded by mu_: when each request slot frees
  Clock::time_point bus_free_{};          // guarded by mu_
  const void* last_file_ = nullptr;       // guarded by mu_
  uint64_t last_end_ = 0;                 // guarded by mu_
};

class ModelledFile final : public RandomAccessFile {
 public:
  ModelledFile(std::unique_ptr<RandomAccessFile> base, Device* device)
      : base_(std::move(base)), device_(device) {}

  StatusOr<size_t> ReadAt(uint64_t offset, Span<std::byte> dst) override {
    StatusOr<size_t> n = base_->ReadAt(offset, dst);
    if (n.ok() && *n > 0) device_->clock()->SleepUntil(device_->Schedule(this, offset, *n));
    return n;
  }
  StatusOr<uint64_t> Size() override { return base_->Size(); }
  const std::string& name() const override { return base_->name(); }
  bool short_read_means_eof() const override { return base_->short_read_means_eof(); }

 private:
  std::unique_ptr<RandomAccessFile> base_;
  Device* device_;
};

class ModelledFileSystem final : public FileSystem {
 public:
  ModelledFileSystem(FileSystem* base, const StorageModel& model, StorageClock* clock)
      : base_(base), device_(model, clock) {}

  StatusOr<std::unique_ptr<RandomAccessFile>> Open(const std::string& path,
                                                   const FileOptions& options) override {
    STOKE_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, base_->Open(path, options));
    return std::unique_ptr<RandomAccessFile>(new ModelledFile(std::move(file), &device_));
  }

 private:
  FileSystem* const base_;
  Device device_;
};

StorageClock* DefaultClock() {
  static RealClock clock;
  return &clock;
}

StatusOr<double> Number(std::string_view text, std::string_view whole) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(v >= 0) || v > 1e9) {
    return InvalidArgumentError("storage model '" + std::string(whole) + "': '" +
                                std::string(text) + "' is not a non-negative number");
  }
  return v;
}

}  // namespace

StatusOr<StorageModel> ParseStorageModel(std::string_view text) {
  using std::chrono::microseconds;
  using std::chrono::milliseconds;
  if (text == "ram") return StorageModel{};
  if (text == "hdd") return StorageModel{"hdd", 160e6, microseconds(100), milliseconds(8), 1};
  if (text == "sata-ssd") return StorageModel{"sata-ssd", 530e6, microseconds(100), {}, 32};
  if (text == "nvme") return StorageModel{"nvme", 3e9, microseconds(80), {}, 64};
  if (text == "s3") return StorageModel{"s3", 1.25e9, milliseconds(30), {}, 256};
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    parts.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  if (parts.size() < 3 || parts.size() > 4) {
    return InvalidArgumentError(
        "storage model '" + std::string(text) +
        "' is not hdd, sata-ssd, nvme, s3, ram or BW_MBPS,LATENCY_MS,SEEK_MS"
        "[,PARALLEL]");
  }
  StorageModel m;
  m.name = std::string(text);
  STOKE_ASSIGN_OR_RETURN(const double mbps, Number(parts[0], text));
  STOKE_ASSIGN_OR_RETURN(const double latency_ms, Number(parts[1], text));
  STOKE_ASSIGN_OR_RETURN(const double seek_ms, Number(parts[2], text));
  double parallel = 1;
  if (parts.size() == 4) {
    STOKE_ASSIGN_OR_RETURN(parallel, Number(parts[3], text));
  }
  if (parallel < 1 || parallel > 4096 || parallel != static_cast<int>(parallel)) {
    return InvalidArgumentError("storage model '" + std::string(text) +
                                "': PARALLEL must be a whole number in [1, 4096]");
  }
  m.bytes_per_second = mbps * 1e6;
  m.latency = nanoseconds(static_cast<int64_t>(latency_ms * 1e6));
  m.seek = nanoseconds(static_cast<int64_t>(seek_ms * 1e6));
  m.parallel_requests = static_cast<int>(parallel);
  return m;
}

std::unique_ptr<FileSystem> NewModelledFileSystem(FileSystem* base, const StorageModel& model,
                                                  StorageClock* clock) {
  return std::make_unique<ModelledFileSystem>(base, model, clock ? clock : DefaultClock());
}

}  // namespace stoke

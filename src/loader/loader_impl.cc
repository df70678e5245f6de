// LoaderImpl, part 1 of 4: Open, with the options resolved (resolve.h):
// the files, sizing, the ring, the engines and the threads (loader_impl.h). Dispatch, completion
// and delivery are in dispatch.cc, completion.cc and delivery.cc.
#include "loader/loader_impl.h"

#include <sys/resource.h>

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda/pinned_memory.h"
#include "dataset/in_memory.h"
#include "io/remote_file.h"
#include "loader/resolve.h"
#include "loader/sizing.h"
#include "util/thread_role.h"
#include "util/trace.h"

namespace stoke {
namespace {

// Datasets of byte ranges in at most this many files keep them open (and may
// map them): a quarter of the process's descriptor limit, from 64 to 4096.
// Beyond it each sample opens its file, and reads do not coalesce.
uint32_t MaxKeptOpenFiles() {
  rlimit limit{};
  uint64_t soft = 1024;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    soft = limit.rlim_cur;
  } else if (limit.rlim_cur == RLIM_INFINITY) {
    soft = uint64_t{1} << 20;
  }
  return static_cast<uint32_t>(std::clamp<uint64_t>(soft / 4, 64, 4096));
}
// io = auto maps kept-open files of which at least this fraction of pages is
// in RAM (the rest come in by page faults); else it reads them.
constexpr double kMinResidentToMap = 0.9;

}  // namespace

StatusOr<std::unique_ptr<Loader>> Loader::Open(std::shared_ptr<const Dataset> dataset,
                                               const LoaderOptions& options) {
  if (!dataset) return InvalidArgumentError("Loader::Open: dataset is null");
  if (options.preload) {
    // The options, and the dataset (a user's may be empty), are checked before
    // any sample is located; Create resolves them for the preloaded dataset.
    STOKE_RETURN_IF_ERROR(internal::ResolveOptions(options, *dataset, 1).status());
    if (!dataset->Locate(0).memory) {
      STOKE_ASSIGN_OR_RETURN(
          dataset, internal::PreloadStored(std::move(dataset), options.preload_max_bytes));
    }
  }
  return LoaderImpl::Create(std::move(dataset), options);
}

StatusOr<std::unique_ptr<Loader>> LoaderImpl::Create(std::shared_ptr<const Dataset> dataset,
                                                     const LoaderOptions& requested,
                                                     std::unique_ptr<internal::Device> device) {
  internal::InStokeCall call;  // opening starts dispatching
  STOKE_ASSIGN_OR_RETURN(
      internal::ResolvedOptions resolved,
      internal::ResolveOptions(requested, *dataset,
                               static_cast<int>(std::thread::hardware_concurrency())));
  // Its members allocate (the trace log, the queues): a failed allocation is
  // ResourceExhausted, not an exception out of a Status API.
  std::unique_ptr<LoaderImpl> loader;
  try {
    loader.reset(new LoaderImpl(std::move(dataset), std::move(resolved)));
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError(
        "Loader::Open: out of memory making the loader (LoaderOptions.trace_events " +
        std::to_string(requested.trace_events) + " x 48 bytes are allocated at open)");
  }
  STOKE_RETURN_IF_ERROR(loader->Init(std::move(device)));
  return std::unique_ptr<Loader>(std::move(loader));
}

LoaderImpl::LoaderImpl(std::shared_ptr<const Dataset> dataset, internal::ResolvedOptions resolved)
    : dataset_(std::move(dataset)),
      options_(std::move(resolved.options)),
      plan_(resolved.plan),
      sample_bytes_(dataset_->spec().bytes()),
      trace_(static_cast<size_t>(options_.trace_events)),
      window_layout_(std::move(resolved.windows)),
      convert_(std::move(resolved.convert)),
      decode_queue_(1024),
      decode_(static_cast<size_t>(options_.decode_threads)) {}

Status LoaderImpl::Init(std::unique_ptr<internal::Device> device) {
  const LoaderOptions& o = options_;
  const SampleLocation first = dataset_->Locate(0);

  // 0. Delivery: the device (a copy engine unless batches stay in their
  // slots: cpu, uint8); the conversion was resolved with the options.
  if (!device && (o.device.kind != DeviceKind::kCpu || convert_.converts())) {
    auto made = internal::MakeDevice(o.device);
    if (!made.ok())
      return made.status().WithContext("LoaderOptions.device = " + DeviceName(o.device));
    device = std::move(made).value();
  }
  FileOptions file_options;
  file_options.direct = o.direct_io;
  remote_ = dataset_->file_system() == internal::RemoteFileSystem();
  if (remote_ && o.direct_io) {
    return InvalidArgumentError("LoaderOptions.direct_io: " + dataset_->Describe() +
                                ": remote data has no page cache to bypass");
  }
  // Quasi order reads whole windows itself (auto does not map; mmap does, and
  // then the mapping serves the samples).
  const bool windowed = window_layout_.readable() && o.io != IoBackend::kMmap;
  STOKE_ASSIGN_OR_RETURN(const bool mapped, OpenFiles(first, file_options, windowed));
  const internal::Sizing sizing = SizeWork(first, mapped, windowed);
  STOKE_RETURN_IF_ERROR(AllocateMemory(sizing, windowed, device.get(), file_options));
  MakeRuns(sizing.tickets, file_options, first);
  return StartThreads(std::move(device), mapped, windowed);
}

StatusOr<bool> LoaderImpl::OpenFiles(const SampleLocation& first, const FileOptions& file_options,
                                     bool windowed) {
  // Whole-file samples are opened per sample, so that a missing one is that
  // sample's error.
  const LoaderOptions& o = options_;
  if (!first.whole_file && first.memory == nullptr &&
      dataset_->file_count() <= MaxKeptOpenFiles()) {
    for (uint32_t f = 0; f < dataset_->file_count(); ++f) {
      STOKE_ASSIGN_OR_RETURN(auto file,
                             dataset_->file_system()->Open(dataset_->file_path(f), file_options));
      files_.push_back(std::move(file));
    }
  }
  if (remote_) {
    if (o.io == IoBackend::kMmap) {
      return InvalidArgumentError("LoaderOptions.io = mmap: " + dataset_->Describe() +
                                  ": remote data cannot be mapped; leave io at auto");
    }
    return false;  // read by the http engine (or the quasi order's windows)
  }
  if (o.io == IoBackend::kMmap) return MapFiles(/*required=*/true);
  // auto: data already in RAM only (DESIGN.md); cold data is read with many
  // requests in flight, which page faults cannot keep.
  if (o.io == IoBackend::kAuto && !windowed) return MapFiles(/*required=*/false);
  return false;
}

internal::Sizing LoaderImpl::SizeWork(const SampleLocation& first, bool mapped, bool windowed) {
  const LoaderOptions& o = options_;
  // Samples are read (or copied from the mapping) into the arena unless their
  // stored bytes are the output, which go straight to the slot.
  direct_reads_ = o.direct_io || !dataset_->stored_as_output();
  // Byte ranges read into the arena are laid out back to back per run, so that
  // ranges adjacent in a file merge into one read (packed shards in sequential or
  // block order). Not under kSkip: a refill reads into its sample's own buffer,
  // which packing may have given to the run's later samples.
  pack_run_buffers_ = direct_reads_ && !mapped && !o.direct_io && !first.whole_file &&
                      first.memory == nullptr && o.on_error == ErrorPolicy::kFail && !windowed;
  internal::SizingInput in;
  in.options = o;
  in.sample_bytes = sample_bytes_;
  in.first_length = first.length;
  in.longest = std::max(first.length, dataset_->max_stored_bytes());
  in.typical = dataset_->typical_stored_bytes();
  in.whole_file = first.whole_file;
  in.direct_reads = direct_reads_;
  in.pack_run_buffers = pack_run_buffers_;
  in.uring = !mapped && !windowed && o.io != IoBackend::kPread && !remote_;
  in.remote = remote_ && !windowed;
  const internal::Sizing sizing = internal::ComputeSizing(in);
  samples_per_task_ = sizing.samples_per_task;
  internal::ResolveSizes(sizing, &options_);  // fixed from here on
  return sizing;
}

Status LoaderImpl::AllocateMemory(const internal::Sizing& sizing, bool windowed,
                                  internal::Device* device, const FileOptions& file_options) {
  const LoaderOptions& o = options_;
  const int in_flight = sizing.in_flight();
  const size_t capacity = sizing.read_buffer_capacity;
  const uint64_t ring_bytes = internal::Ring::BytesFor(o.ring_slots, o.batch_size, sample_bytes_);
  const uint64_t arena_bytes =
      (direct_reads_ ? internal::Arena::BytesFor(in_flight, capacity) : 0) +
      (sizing.overflow_capacity > 0 ? internal::Arena::BytesFor(1, sizing.overflow_capacity) : 0);
  const uint64_t window_bytes =
      windowed ? internal::WindowCache::BytesFor(window_layout_, o.group_windows) : 0;
  // Converted batches on the cpu are host memory too.
  const uint64_t delivery_bytes = device && device->spec().kind == DeviceKind::kCpu
                                      ? device->BytesFor(o.device_buffers, o.batch_size, convert_)
                                      : 0;
  if (ring_bytes + arena_bytes + window_bytes + delivery_bytes > o.memory_budget_bytes) {
    // The quasi order's windows are named only when the loader reads them.
    const std::string windows =
        windowed ? ", the quasi order's windows (" + std::to_string(internal::WindowCache::kSets) +
                       " x " +
                       std::to_string(
                           internal::WindowCache::SetWindows(window_layout_, o.group_windows)) +
                       " windows of up to " + std::to_string(window_layout_.capacity) +
                       " bytes = " + std::to_string(window_bytes) + " bytes)"
                 : "";
    return ResourceExhaustedError(
        "LoaderOptions.memory_budget_bytes: " + std::to_string(o.memory_budget_bytes) +
        " bytes cannot hold the ring (" + std::to_string(o.ring_slots) + " slots x " +
        std::to_string(o.batch_size) + " samples x " + std::to_string(sample_bytes_) +
        " bytes = " + std::to_string(ring_bytes) + " bytes), the read arena (" +
        std::to_string(in_flight) + " buffers x " + std::to_string(capacity) + " bytes" +
        (sizing.overflow_capacity > 0 ? " and one of " + std::to_string(sizing.overflow_capacity) +
                                            " for the largest samples"
                                      : std::string()) +
        " = " + std::to_string(arena_bytes) + " bytes)" + windows + " and the converted batches (" +
        std::to_string(delivery_bytes) +
        " bytes); raise the budget or lower ring_slots, batch_size, reads_in_flight, " +
        (windowed ? "window_bytes, group_windows " : "") + "or device_buffers");
  }
  internal::HostMemory* slot_memory = internal::AlignedHostMemory();
  if (device) slot_memory = device->slot_memory();  // pinned for CUDA
  if (o.pin_memory && !(device && device->spec().kind == DeviceKind::kCuda)) {
    auto pinned = internal::PinnedHostMemory();
    if (!pinned.ok()) return pinned.status().WithContext("LoaderOptions.pin_memory");
    slot_memory = *pinned;
  }
  STOKE_ASSIGN_OR_RETURN(
      ring_, internal::Ring::Create(o.ring_slots, o.batch_size, sample_bytes_, slot_memory));
  if (direct_reads_) {
    STOKE_ASSIGN_OR_RETURN(
        arena_, internal::Arena::Create(in_flight, capacity, internal::AlignedHostMemory()));
  }
  if (direct_reads_ && sizing.overflow_capacity > 0) {
    STOKE_ASSIGN_OR_RETURN(overflow_, internal::Arena::Create(1, sizing.overflow_capacity,
                                                              internal::AlignedHostMemory()));
  }
  if (windowed) {
    std::vector<RandomAccessFile*> files;
    for (const auto& f : files_) files.push_back(f.get());
    STOKE_ASSIGN_OR_RETURN(windows_, internal::WindowCache::Create(
                                         *dataset_, window_layout_, plan_, files, file_options,
                                         o.read_threads, internal::AlignedHostMemory(), this));
  }
  return Status::Ok();
}

void LoaderImpl::MakeRuns(int tickets, const FileOptions& file_options,
                          const SampleLocation& first) {
  const LoaderOptions& o = options_;
  // Samples in files opened per read (an image folder): each request keeps a
  // reusable file object between reads, made here by opening and closing the
  // first sample's file. Made on first use instead, a request that only a
  // later epoch uses (one past every short batch so far) would allocate then.
  const bool opens_per_read = files_.empty() && maps_.empty() && first.memory == nullptr;
  for (int i = 0; i < tickets; ++i) {
    auto run = std::make_unique<Run>();
    run->ticket = i;
    run->samples.resize(static_cast<size_t>(samples_per_task_));
    for (int j = 0; j < samples_per_task_; ++j) {
      SampleTask& t = run->samples[j];
      t.file_system = dataset_->file_system();
      t.file_options = file_options;
      t.cancelled = &stopping_;
      if (arena_) t.arena_buffer = arena_->buffer(i * samples_per_task_ + j);
      if (opens_per_read) {
        t.path = &dataset_->file_path(first.file);
        if (internal::OpenIfNeeded(&t)) internal::CloseOwnedFile(&t);
        t.status = Status::Ok();  // a file that fails to open fails its own reads
      }
      run->pointers.push_back(&t);
    }
    run->requests = run->pointers.data();
    runs_.push_back(std::move(run));
  }
  {
    // No thread runs yet; the lock is for the analysis, and costs nothing.
    internal::MutexLock lock(&dispatch_mu_);
    idle_tickets_.reserve(static_cast<size_t>(tickets));  // pushes never allocate
    for (int i = 0; i < tickets; ++i) idle_tickets_.push_back(i);
  }
  slots_ = std::make_unique<internal::RingProtocol>(o.ring_slots,
                                                    internal::RingProtocol::Reuse::kNewestFirst);
  skipped_samples_.reserve(kMaxListedSkips);
}

Status LoaderImpl::StartThreads(std::unique_ptr<internal::Device> device, bool mapped,
                                bool windowed) {
  const LoaderOptions& o = options_;
  // auto: kept-open files without a descriptor (a storage model, a fake) gain
  // nothing from io_uring, whose threads would read them synchronously anyway.
  const bool no_descriptor = !files_.empty() && files_[0]->native_handle() < 0;
  if (remote_ && !windowed) {
    engine_ = internal::MakeHttpEngine(o.read_threads, this);  // ranged GETs, many in flight
  } else if (mapped || windowed || o.io == IoBackend::kPread ||
             (o.io == IoBackend::kAuto && no_descriptor)) {
    // Mapped samples (and windowed ones) are in memory: the pread pool's
    // threads pass them on.
    engine_ = internal::MakePreadEngine(o.read_threads, this);
  } else {
    auto uring = internal::MakeUringEngine(o.read_threads, this);
    if (uring.ok()) {
      engine_ = std::move(uring).value();
    } else if (o.io == IoBackend::kUring) {
      return uring.status().WithContext("LoaderOptions.io = uring");
    } else {
      engine_ = internal::MakePreadEngine(o.read_threads, this);  // auto: fall back
    }
  }
  if (device) {
    STOKE_ASSIGN_OR_RETURN(
        copy_, internal::CopyEngine::Create(this, std::move(device), convert_, o.device_buffers,
                                            o.batch_size, o.ring_slots, &trace_));
  }
  for (int i = 0; i < o.decode_threads; ++i) {
    decoders_.emplace_back([this, i] {
      internal::MarkStokeThread();
      DecodeLoop(i);
    });
  }
  position_ = {o.start.epoch, o.start.batch};
  StartDispatch(o.start);
  if (copy_) copy_->Start();
  return Status::Ok();
}

StatusOr<bool> LoaderImpl::MapFiles(bool required) {
  if (files_.empty() || options_.direct_io) {
    if (!required) return false;
    std::string why;
    if (options_.direct_io) {
      why = "direct_io bypasses the page cache a mapping reads through";
    } else if (dataset_->Locate(0).memory != nullptr) {
      why =
          "its samples are already in memory (a gzipped file is decompressed at open), so "
          "there is nothing to map; leave io at auto";
    } else if (dataset_->file_count() > MaxKeptOpenFiles()) {
      why = "its samples lie in " + std::to_string(dataset_->file_count()) +
            " files, more than the " + std::to_string(MaxKeptOpenFiles()) +
            " the loader keeps open and maps; use pread or uring";
    } else {
      why =
          "each sample is a file of its own; only samples inside a few large files (IDX, "
          "CIFAR, shards, tars) can be mapped; use pread or uring";
    }
    return InvalidArgumentError("LoaderOptions.io = mmap: " + dataset_->Describe() + ": " + why);
  }
  for (const auto& file : files_) {
    auto map = internal::MappedFile::Map(*file);
    if (!map.ok()) {
      maps_.clear();
      if (required) return map.status().WithContext("LoaderOptions.io = mmap");
      return false;
    }
    // auto maps only what is (nearly all) in RAM now.
    if (!required && (*map)->ResidentFraction() < kMinResidentToMap) {
      maps_.clear();
      return false;
    }
    maps_.push_back(std::move(map).value());
  }
  return true;
}

LoaderImpl::~LoaderImpl() {
  // A Batch (or a tensor over one) that outlives its loader would release
  // into freed memory later: say so now, naming the cause, rather than
  // corrupt the heap. (The copy engine's own leases of ring slots are its
  // copies in flight, which Stop completes.)
  const int held = copy_ ? copy_->leased() : slots_ ? slots_->leased() : 0;
  if (held > 0) {
    std::fprintf(stderr,
                 "stoke: a Loader is being destroyed while %d Batch object%s (or tensors over "
                 "them) still hold its buffers; a Batch must not outlive its Loader: release "
                 "batches first (declare the Loader before the members that hold batches)\n",
                 held, held == 1 ? "" : "s");
    std::fflush(stderr);
    std::abort();
  }
  internal::InStokeCall call;  // the copy engine's last slots come back here
  // The copy engine first: its queued copies read slots, and complete (giving
  // the slots back) before dispatching stops.
  if (copy_) copy_->Stop();
  if (engine_) {
    StopDispatch();
    engine_->Stop();
  }
  for (size_t i = 0; i < decoders_.size(); ++i) decode_queue_.enqueue(nullptr);
  for (std::thread& t : decoders_) t.join();
  // Here, while slots_ (which its destructor's Stop cancels through
  // CancelTake) is alive: members declared after copy_ are destroyed before it.
  copy_.reset();
}

}  // namespace stoke

#include "loader/loader_impl.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "cuda/pinned_memory.h"
#include "dataset/in_memory.h"
#include "loader/sizing.h"
#include "util/trace.h"

namespace stoke {
namespace {

constexpr size_t kMaxListedSkips = 1000;
// Datasets of byte ranges in at most this many files keep them open.
constexpr uint32_t kMaxKeptOpenFiles = 64;

Status Invalid(const char* field, const std::string& why) {
  return InvalidArgumentError(std::string("LoaderOptions.") + field + ": " + why);
}

Status ValidateOptions(const LoaderOptions& o, const Dataset& d) {
  auto range = [](const char* field, int64_t v, int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi) {
      return Invalid(field, std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "]");
    }
    return Status::Ok();
  };
  STOKE_RETURN_IF_ERROR(range("batch_size", o.batch_size, 1, int64_t{1} << 24));
  if (o.ring_slots != 0) STOKE_RETURN_IF_ERROR(range("ring_slots", o.ring_slots, 2, 4096));
  STOKE_RETURN_IF_ERROR(range("read_threads", o.read_threads, 1, 1024));
  STOKE_RETURN_IF_ERROR(range("reads_in_flight", o.reads_in_flight, 0, 65536));
  STOKE_RETURN_IF_ERROR(range("decode_threads", o.decode_threads, -1, 1024));
  STOKE_RETURN_IF_ERROR(range("samples_per_task", o.samples_per_task, 0, 4096));
  STOKE_RETURN_IF_ERROR(range("block_samples", o.block_samples, 1, int64_t{1} << 40));
  STOKE_RETURN_IF_ERROR(range("window_bytes",
                              static_cast<int64_t>(std::min<uint64_t>(o.window_bytes, 1ull << 62)),
                              1, int64_t{1} << 36));
  STOKE_RETURN_IF_ERROR(range("group_windows", o.group_windows, 1, 4096));
  STOKE_RETURN_IF_ERROR(range("max_refill_attempts", o.max_refill_attempts, 0, 1 << 20));
  STOKE_RETURN_IF_ERROR(range("world_size", o.world_size, 1, 1 << 20));
  STOKE_RETURN_IF_ERROR(range("device_buffers", o.device_buffers, 2, 64));
  STOKE_RETURN_IF_ERROR(range("device.index", o.device.index, 0, 1 << 16));
  if (o.trace_events > (uint64_t{1} << 28)) {
    return Invalid("trace_events", std::to_string(o.trace_events) + " is above 2^28");
  }
  STOKE_RETURN_IF_ERROR(range("rank", o.rank, 0, o.world_size - 1));
  STOKE_RETURN_IF_ERROR(range("start.epoch", o.start.epoch, 0, int64_t{1} << 40));
  if (d.size() == 0) return InvalidArgumentError(d.Describe() + ": the dataset is empty");
  if (d.spec().shape.size() > 8) {
    return InvalidArgumentError(d.Describe() + ": samples of rank above 8 are not supported");
  }
  if (d.spec().bytes() == 0) return InvalidArgumentError(d.Describe() + ": samples of 0 bytes");
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Loader>> Loader::Open(std::shared_ptr<const Dataset> dataset,
                                               const LoaderOptions& options) {
  if (!dataset) return InvalidArgumentError("Loader::Open: dataset is null");
  if (options.preload && !dataset->Locate(0).memory) {
    STOKE_ASSIGN_OR_RETURN(dataset,
                           internal::PreloadStored(std::move(dataset), options.preload_max_bytes));
  }
  return LoaderImpl::Create(std::move(dataset), options);
}

StatusOr<std::unique_ptr<Loader>> LoaderImpl::Create(std::shared_ptr<const Dataset> dataset,
                                                     const LoaderOptions& requested,
                                                     std::unique_ptr<internal::Device> device) {
  STOKE_RETURN_IF_ERROR(ValidateOptions(requested, *dataset));
  LoaderOptions options = requested;  // with the automatic choices made
  if (options.decode_threads < 0) {
    options.decode_threads = internal::AutoDecodeThreads(
        dataset->decode_is_compute_bound(), static_cast<int>(std::thread::hardware_concurrency()),
        options.device.kind);
  }
  internal::PlanConfig config;
  config.dataset_size = dataset->size();
  config.order = options.order;
  config.seed = options.seed;
  config.block_samples = static_cast<uint64_t>(options.block_samples);
  config.batch_size = options.batch_size;
  config.drop_last = options.drop_last;
  config.rank = options.rank;
  config.world_size = options.world_size;
  internal::WindowLayout windows;
  if (options.order == Order::kQuasiRandom) {
    STOKE_ASSIGN_OR_RETURN(
        windows, internal::WindowLayout::Make(*dataset, options.window_bytes, options.direct_io));
    config.window_samples = windows.window_samples;
    config.group_windows = static_cast<uint64_t>(options.group_windows);
  }
  internal::Plan plan(config);
  if (plan.batches_per_epoch() == 0) {
    return Invalid("batch_size", "an epoch has no batches: " + std::to_string(dataset->size()) +
                                     " samples over world_size " +
                                     std::to_string(options.world_size) + " give " +
                                     std::to_string(plan.samples_per_epoch()) +
                                     " per rank, fewer than batch_size " +
                                     std::to_string(options.batch_size) + " with drop_last");
  }
  if (options.start.batch < 0 || options.start.batch > plan.batches_per_epoch()) {
    return Invalid("start.batch", std::to_string(options.start.batch) + " is outside [0, " +
                                      std::to_string(plan.batches_per_epoch()) + "]");
  }
  std::unique_ptr<LoaderImpl> loader(
      new LoaderImpl(std::move(dataset), options, plan, std::move(windows)));
  STOKE_RETURN_IF_ERROR(loader->Init(std::move(device)));
  return std::unique_ptr<Loader>(std::move(loader));
}

LoaderImpl::LoaderImpl(std::shared_ptr<const Dataset> dataset, const LoaderOptions& options,
                       internal::Plan plan, internal::WindowLayout windows)
    : dataset_(std::move(dataset)),
      options_(options),
      plan_(plan),
      sample_bytes_(dataset_->spec().bytes()),
      trace_(static_cast<size_t>(options.trace_events)),
      window_layout_(std::move(windows)),
      decode_queue_(1024),
      decode_(static_cast<size_t>(options.decode_threads)) {}

Status LoaderImpl::Init(std::unique_ptr<internal::Device> device) {
  const LoaderOptions& o = options_;
  const SampleLocation first = dataset_->Locate(0);

  // 0. Delivery: the conversion, and the device (a copy engine unless batches
  // stay in their slots: cpu, uint8).
  STOKE_ASSIGN_OR_RETURN(convert_, internal::MakeConvertPlan(o, dataset_->spec()));
  if (!device && (o.device.kind != DeviceKind::kCpu || convert_.converts())) {
    auto made = internal::MakeDevice(o.device);
    if (!made.ok())
      return made.status().WithContext("LoaderOptions.device = " + DeviceName(o.device));
    device = std::move(made).value();
  }

  // 1. Files: keep a few big ones open (and map them for io = mmap, or auto);
  // whole-file samples are opened per sample, so that a missing one is that
  // sample's error.
  FileOptions file_options;
  file_options.direct = o.direct_io;
  if (!first.whole_file && first.memory == nullptr && dataset_->file_count() <= kMaxKeptOpenFiles) {
    for (uint32_t f = 0; f < dataset_->file_count(); ++f) {
      STOKE_ASSIGN_OR_RETURN(auto file,
                             dataset_->file_system()->Open(dataset_->file_path(f), file_options));
      files_.push_back(std::move(file));
    }
  }
  bool mapped = false;
  // Quasi order reads whole windows itself (auto does not map; mmap does, and
  // then the mapping serves the samples).
  const bool windowed = window_layout_.readable() && o.io != IoBackend::kMmap;
  if (o.io == IoBackend::kMmap || (o.io == IoBackend::kAuto && !windowed)) {
    STOKE_ASSIGN_OR_RETURN(mapped, MapFiles(o.io == IoBackend::kMmap));
  }

  // 2. Runs: samples per task, and tickets (runs in flight). Mapped samples are
  // copied from the mapping: no read buffers.
  direct_reads_ = !mapped && (o.direct_io || !dataset_->stored_as_output());
  // Byte ranges read into the arena are laid out back to back per run, so that
  // ranges adjacent in a file merge into one read (packed shards in sequential or
  // block order). Not under kSkip: a refill reads into its sample's own buffer,
  // which packing may have given to the run's later samples.
  pack_run_buffers_ = direct_reads_ && !o.direct_io && !first.whole_file &&
                      first.memory == nullptr && o.on_error == ErrorPolicy::kFail && !windowed;
  internal::SizingInput sizing_input;
  sizing_input.options = o;
  sizing_input.sample_bytes = sample_bytes_;
  sizing_input.first_length = first.length;
  sizing_input.longest = std::max(first.length, dataset_->max_stored_bytes());
  sizing_input.whole_file = first.whole_file;
  sizing_input.direct_reads = direct_reads_;
  sizing_input.pack_run_buffers = pack_run_buffers_;
  sizing_input.uring = !mapped && !windowed && o.io != IoBackend::kPread;
  const internal::Sizing sizing = internal::ComputeSizing(sizing_input);
  samples_per_task_ = sizing.samples_per_task;
  const int tickets = sizing.tickets;
  const int in_flight = sizing.in_flight();
  const size_t capacity = sizing.read_buffer_capacity;
  options_.ring_slots = sizing.ring_slots;

  // 3. Memory: check the budget, then allocate the ring, the read arena and
  // the quasi order's windows.
  const uint64_t ring_bytes = internal::Ring::BytesFor(o.ring_slots, o.batch_size, sample_bytes_);
  const uint64_t arena_bytes = direct_reads_ ? internal::Arena::BytesFor(in_flight, capacity) : 0;
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
        std::to_string(o.batch_size) + " samples x " + std::to_string(sample_bytes_) + " bytes = " +
        std::to_string(ring_bytes) + " bytes), the read arena (" + std::to_string(in_flight) +
        " buffers x " + std::to_string(capacity) + " bytes = " + std::to_string(arena_bytes) +
        " bytes)" + windows + " and the converted batches (" + std::to_string(delivery_bytes) +
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
  if (windowed) {
    std::vector<RandomAccessFile*> files;
    for (const auto& f : files_) files.push_back(f.get());
    STOKE_ASSIGN_OR_RETURN(windows_, internal::WindowCache::Create(
                                         *dataset_, window_layout_, plan_, files, file_options,
                                         o.read_threads, internal::AlignedHostMemory(), this));
  }

  // 4. Tickets and their runs.
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
      run->pointers.push_back(&t);
    }
    run->requests = run->pointers.data();
    runs_.push_back(std::move(run));
    idle_tickets_.push_back(i);
  }
  scheduled_.assign(static_cast<size_t>(o.ring_slots), -1);
  ready_.assign(static_cast<size_t>(o.ring_slots), 0);
  leased_.assign(static_cast<size_t>(o.ring_slots), 0);
  for (int s = o.ring_slots - 1; s >= 0; --s) free_slots_.push_back(s);
  skipped_samples_.reserve(kMaxListedSkips);

  // 5. Threads: the read engine and the decoders; then dispatching starts.
  // auto: kept-open files without a descriptor (a storage model, a fake) gain
  // nothing from io_uring, whose threads would read them synchronously anyway.
  const bool no_descriptor = !files_.empty() && files_[0]->native_handle() < 0;
  if (mapped || windowed || o.io == IoBackend::kPread ||
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
    decoders_.emplace_back([this, i] { DecodeLoop(i); });
  }
  position_ = o.start;
  StartDispatch(o.start);
  if (copy_) copy_->Start();
  return Status::Ok();
}

StatusOr<bool> LoaderImpl::MapFiles(bool required) {
  if (files_.empty() || options_.direct_io) {
    if (!required) return false;
    return InvalidArgumentError(
        "LoaderOptions.io = mmap: " + dataset_->Describe() +
        (options_.direct_io ? ": direct_io bypasses the page cache a mapping reads through"
                            : ": only datasets of samples inside a few large files (IDX, CIFAR) "
                              "can be mapped; use pread or uring"));
  }
  for (const auto& file : files_) {
    auto map = internal::MappedFile::Map(*file);
    if (!map.ok()) {
      maps_.clear();
      if (required) return map.status().WithContext("LoaderOptions.io = mmap");
      return false;
    }
    maps_.push_back(std::move(map).value());
  }
  return true;
}

LoaderImpl::~LoaderImpl() {
  // The copy engine first: its queued copies read slots, and complete (giving
  // the slots back) before dispatching stops.
  if (copy_) copy_->Stop();
  if (engine_) {
    StopDispatch();
    engine_->Stop();
  }
  for (size_t i = 0; i < decoders_.size(); ++i) decode_queue_.enqueue(nullptr);
  for (std::thread& t : decoders_) t.join();
  // Here, while mu_ (which its destructor's Stop takes through CancelTake) is
  // alive: members declared after copy_ are destroyed before it.
  copy_.reset();
}

// ---- Dispatch ----

void LoaderImpl::StartDispatch(Position from) {
  {
    std::lock_guard<std::mutex> lock(dispatch_mu_);
    stopping_.store(false);
    ring_full_since_ns_ = 0;
    next_ = from;
    next_offset_ = 0;
    current_slot_ = -1;
    if (windows_) {
      const Position at =
          from.batch >= plan_.batches_per_epoch() ? Position{from.epoch + 1, 0} : from;
      windows_->Start(at.epoch, at.batch * options_.batch_size);
    }
  }
  Pump();
}

void LoaderImpl::StopDispatch() {
  if (windows_) {
    // No window read starts now; those in flight finish (and their Pump calls
    // see stopping_), without dispatch_mu_ held, which those calls take.
    {
      std::lock_guard<std::mutex> lock(dispatch_mu_);
      stopping_.store(true);
    }
    windows_->Stop();
  }
  std::unique_lock<std::mutex> lock(dispatch_mu_);
  stopping_.store(true);
  // Every ticket comes back once its run is finished; no new run starts now.
  dispatch_cv_.wait(lock, [&] { return idle_tickets_.size() == runs_.size(); });
  // Every slot not held by a Batch is free again; nothing is scheduled.
  std::lock_guard<std::mutex> consumer_lock(mu_);
  free_slots_.clear();
  for (int i = 0; i < ring_->size(); ++i) {
    ready_[i] = 0;
    if (!leased_[i]) free_slots_.push_back(i);
  }
  current_slot_ = -1;
  ring_full_since_ns_ = 0;
  scheduled_head_ = 0;
  scheduled_count_ = 0;
}

void LoaderImpl::Pump() {
  std::lock_guard<std::mutex> lock(dispatch_mu_);
  PumpLocked();
}

void LoaderImpl::PumpLocked() {
  try {
    while (!stopping_.load(std::memory_order_relaxed) && !idle_tickets_.empty()) {
      const int64_t t0 = internal::NowNanos();
      if (current_slot_ < 0) {
        if (free_slots_.empty()) {
          // Work could start but the ring is full: the consumer sets the pace.
          if (ring_full_since_ns_ == 0) ring_full_since_ns_ = t0;
          return;
        }
        if (ring_full_since_ns_ != 0) {
          dispatch_.AddBlocked(t0 - ring_full_since_ns_);
          ring_full_since_ns_ = 0;
        }
        ClaimSlot();
      }
      internal::Slot& slot = ring_->slot(current_slot_);
      int64_t count = std::min<int64_t>(samples_per_task_, slot.size - next_offset_);
      int window_set = -1;
      if (windows_) {
        count = AcquireWindows(count, &window_set);
        if (count == 0) return;  // its windows are being read; OnWindowsReady pumps
      }
      const int ticket = idle_tickets_.back();
      idle_tickets_.pop_back();
      Run& run = *runs_[ticket];
      run.slot = current_slot_;
      run.epoch = next_.epoch;
      run.batch = next_.batch;
      run.window_set = window_set;
      if (trace_.enabled()) run.submitted_ns = t0;
      run.count = static_cast<size_t>(count);
      const int64_t first = next_.batch * options_.batch_size + next_offset_;
      for (size_t j = 0; j < run.count; ++j) {
        SampleTask& t = run.samples[j];
        t.plan_position = first + static_cast<int64_t>(j);
        t.batch_position = next_offset_ + static_cast<int64_t>(j);
        t.attempts = 0;
        PrepareSample(run, &t, plan_.SampleAt(next_.epoch, t.plan_position));
      }
      if (pack_run_buffers_) PackRunBuffers(&run);
      next_offset_ += static_cast<int64_t>(run.count);
      if (next_offset_ >= slot.size) {  // the batch is all dispatched
        current_slot_ = -1;
        next_offset_ = 0;
        ++next_.batch;
        dispatch_.Add(dispatch_.items, 1);
      }
      engine_->Submit(&run);
      dispatch_.AddBusy(internal::NowNanos() - t0);
    }
  } catch (const std::exception& e) {
    SetBackgroundError(InternalError(std::string("dispatch: ") + e.what()));
  } catch (...) {
    SetBackgroundError(InternalError("dispatch: unknown exception"));
  }
}

void LoaderImpl::ClaimSlot() {
  if (next_.batch >= plan_.batches_per_epoch()) next_ = {next_.epoch + 1, 0};
  const int slot_id = free_slots_.back();
  free_slots_.pop_back();
  internal::Slot& slot = ring_->slot(slot_id);
  slot.epoch = next_.epoch;
  slot.batch = next_.batch;
  slot.size = plan_.batch_size(next_.batch);
  slot.remaining.store(slot.size, std::memory_order_relaxed);
  slot.ClearErrors();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_[slot_id] = 0;
    scheduled_[(scheduled_head_ + scheduled_count_) % scheduled_.size()] = slot_id;
    ++scheduled_count_;
  }
  current_slot_ = slot_id;
  next_offset_ = 0;
}

int64_t LoaderImpl::AcquireWindows(int64_t want, int* set) {
  const int64_t position = next_.batch * options_.batch_size + next_offset_;
  const internal::Segment segment = plan_.SegmentAt(position);
  *set = windows_->Acquire(next_.epoch, segment);
  if (*set < 0) return 0;
  // A run draws from one segment's windows.
  return std::min(want, segment.end - position);
}

void LoaderImpl::PrepareSample(const Run& run, SampleTask* t, uint64_t sample) {
  const int slot = run.slot;
  t->sample = sample;
  const SampleLocation loc = dataset_->Locate(sample);
  t->memory = loc.memory;
  t->path = &dataset_->file_path(loc.file);
  internal::CloseOwnedFile(t);
  t->file = files_.empty() ? nullptr : files_[loc.file].get();
  t->offset = loc.offset;
  t->length = loc.length;
  t->whole_file = loc.whole_file;
  if (direct_reads_) {
    t->buffer = t->arena_buffer;
  } else {
    t->buffer = {ring_->slot(slot).data + t->batch_position * sample_bytes_, sample_bytes_};
  }
  internal::PrepareRead(t);
  if (run.window_set >= 0) {
    // Quasi order: the bytes are in the run's window set, read whole. A refill
    // from beyond it (kSkip near a segment's end) is read on its own.
    Status window_status;
    t->memory = windows_->Find(run.window_set, sample, loc, &window_status);
    if (!window_status.ok()) t->status = std::move(window_status);
    if (t->memory || !t->status.ok()) return;
  }
  if (!maps_.empty()) {
    const std::span<const std::byte> map = maps_[loc.file]->bytes();
    if (loc.offset + loc.length > map.size()) {
      t->status = internal::TruncatedError(*t->path, loc.length, loc.offset,
                                           map.size() > loc.offset ? map.size() - loc.offset : 0);
    } else {
      t->memory = map.data() + loc.offset;
    }
    return;
  }
  if (t->buffer.size() <
      internal::ReadBufferCapacity(loc.length, loc.whole_file, t->file_options.direct)) {
    // Already failed: the engines complete it without reading.
    t->status = InternalError(*t->path + ": sample " + std::to_string(sample) + " needs " +
                              std::to_string(loc.length) +
                              " stored bytes, more than the read buffers sized from sample 0");
  }
}

void LoaderImpl::PackRunBuffers(Run* run) {
  // The run's arena buffers are one region; lay the samples' bytes out back to
  // back in it, so that records adjacent in their file are adjacent in memory
  // too and the engines read them with one read. Each record is at most a
  // buffer's capacity, so they always fit.
  //
  // The reads are issued in file order (the group's request pointers sorted by
  // file and offset), and laid out in that order: a run of a block-order epoch
  // whose positions cover neighbouring records, shuffled, reads them with one
  // read. The samples keep their slot positions; only the I/O order changes.
  std::span<std::byte> region = arena_->run_region(run->ticket, samples_per_task_);
  for (size_t j = 0; j < run->count; ++j) run->pointers[j] = &run->samples[j];
  std::sort(run->pointers.begin(), run->pointers.begin() + static_cast<ptrdiff_t>(run->count),
            [](const internal::ReadRequest* a, const internal::ReadRequest* b) {
              return a->file != b->file ? std::less<>()(a->file, b->file) : a->offset < b->offset;
            });
  size_t cursor = 0;
  for (size_t j = 0; j < run->count; ++j) {
    internal::ReadRequest& t = *run->pointers[j];
    if (!t.status.ok() || t.memory != nullptr) continue;
    t.buffer = region.subspan(cursor, static_cast<size_t>(t.length));
    cursor += static_cast<size_t>(t.length);
  }
}

// ---- Completion: read, decode, finish ----

void LoaderImpl::OnReadsDone(internal::ReadGroup* g) {
  Run* run = static_cast<Run*>(g);
  if (trace_.enabled()) {
    trace_.Span("read", run->submitted_ns, internal::NowNanos(), run->epoch, run->batch,
                static_cast<int64_t>(run->count));
  }
  for (size_t j = 0; j < run->count; ++j) {
    internal::CloseOwnedFile(&run->samples[j]);  // a per-sample file
    run->samples[j].file = nullptr;
  }
  if (stopping_.load(std::memory_order_relaxed)) return Finish(run);
  if (!decoders_.empty()) {
    decode_queue_.enqueue(run);
    return;
  }
  // Inline decoding is counted too (as one aggregate), except for a copy.
  DecodeAndFinish(run, dataset_->stored_as_output() ? nullptr : &decode_inline_);
}

void LoaderImpl::DecodeLoop(int index) {
  internal::ThreadCounters& counters = decode_[index];
  while (true) {
    int64_t t0 = internal::NowNanos();
    Run* run;
    decode_queue_.wait_dequeue(run);
    counters.AddBlocked(internal::NowNanos() - t0);
    if (!run) return;
    DecodeAndFinish(run, &counters);
  }
}

void LoaderImpl::DecodeAndFinish(Run* run, internal::ThreadCounters* counters) {
  const int64_t t0 = counters || trace_.enabled() ? internal::NowNanos() : 0;
  {
    internal::TraceRange trace("stoke decode");
    for (size_t j = 0; j < run->count; ++j) CompleteSample(run, &run->samples[j]);
  }
  if (trace_.enabled() && counters) {
    trace_.Span("decode", t0, internal::NowNanos(), run->epoch, run->batch,
                static_cast<int64_t>(run->count));
  }
  if (counters) {
    counters->AddBusy(internal::NowNanos() - t0);
    counters->Add(counters->items, run->count);
    counters->Add(counters->bytes, run->count * sample_bytes_);
  }
  Finish(run);
}

void LoaderImpl::CompleteSample(Run* run, SampleTask* t) {
  internal::Slot& slot = ring_->slot(run->slot);
  while (!stopping_.load(std::memory_order_relaxed)) {
    if (t->status.ok()) {
      std::span<std::byte> out(slot.data + t->batch_position * sample_bytes_, sample_bytes_);
      int64_t label = 0;
      try {
        t->status =
            dataset_->DecodeSample({t->sample, run->epoch, options_.seed}, t->stored, out, &label);
      } catch (const std::exception& e) {
        t->status = InternalError(*t->path + ": decode threw: " + e.what());
      }
      if (t->status.ok()) {
        slot.labels[t->batch_position] = label;
        slot.indices[t->batch_position] = t->sample;
        return;
      }
    }
    if (options_.on_error == ErrorPolicy::kSkip) {
      slot.RecordSkip(t->sample, t->status);
      if (t->attempts < options_.max_refill_attempts) {
        // Replace it with the next sample of the epoch's order, deterministically.
        ++t->attempts;
        const int64_t n = plan_.samples_per_epoch();
        PrepareSample(*run, t, plan_.SampleAt(run->epoch, (t->plan_position + t->attempts) % n));
        if (!internal::CompleteWithoutIo(t)) internal::ReadBlocking(t);
        internal::CloseOwnedFile(t);
        t->file = nullptr;
        continue;
      }
      t->status = DataLossError("gave up after " + std::to_string(t->attempts + 1) +
                                " consecutive bad samples for one batch position "
                                "(LoaderOptions.max_refill_attempts); the last: " +
                                t->status.ToString());
    }
    slot.RecordError(t->batch_position, t->status);
    return;
  }
}

void LoaderImpl::Finish(Run* run) {
  const int slot_id = run->slot;
  internal::Slot& slot = ring_->slot(slot_id);
  const int ticket = run->ticket;
  const auto count = static_cast<int64_t>(run->count);
  const int window_set = run->window_set;
  if (slot.remaining.fetch_sub(count, std::memory_order_acq_rel) == count) Publish(slot_id);
  // Last: once the ticket is back the run may be reused, and StopDispatch takes
  // every ticket back as proof that no thread still touches the ring. This
  // thread then starts the next run itself: no dispatcher to wake.
  std::lock_guard<std::mutex> lock(dispatch_mu_);
  if (window_set >= 0) windows_->Release(window_set);
  idle_tickets_.push_back(ticket);
  if (stopping_.load(std::memory_order_relaxed)) {
    if (idle_tickets_.size() == runs_.size()) dispatch_cv_.notify_all();
    return;
  }
  PumpLocked();
}

void LoaderImpl::Publish(int slot) {
  int ready = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_[slot] = 1;
    if (trace_.enabled()) ready = static_cast<int>(std::count(ready_.begin(), ready_.end(), 1));
  }
  cv_.notify_all();
  if (trace_.enabled()) trace_.Count("batches ready", internal::NowNanos(), ready);
}

void LoaderImpl::AccountSkips(internal::Slot& slot) {
  std::vector<std::pair<uint64_t, Status>> skips;
  slot.TakeSkips(&skips);
  if (skips.empty()) return;
  std::lock_guard<std::mutex> lock(skipped_mu_);
  for (const auto& [index, status] : skips) {
    ++skipped_;
    if (skipped_samples_.size() < kMaxListedSkips) {
      skipped_samples_.push_back({index, status.ToString()});
    }
  }
}

void LoaderImpl::SetBackgroundError(Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (background_error_.ok()) background_error_ = std::move(status);
  }
  cv_.notify_all();
}

// ---- The consumer ----

StatusOr<Batch> LoaderImpl::Next() {
  if (copy_) return NextFromCopyEngine();
  int slot_id;
  Position at;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!background_error_.ok()) return background_error_;
    if (position_.batch >= plan_.batches_per_epoch()) {
      position_ = {position_.epoch + 1, 0};
      return Batch();  // end of epoch
    }
    if (leased_count_ == ring_->size()) {
      return ResourceExhaustedError(
          "Loader::Next: all " + std::to_string(ring_->size()) +
          " ring slots are held by live Batch objects, so no batch can be filled; release a "
          "batch before asking for the next, or raise LoaderOptions.ring_slots");
    }
    const int64_t t0 = internal::NowNanos();
    internal::TraceRange trace("stoke wait for batch");
    cv_.wait(lock, [&] {
      return !background_error_.ok() ||
             (scheduled_count_ > 0 && ready_[scheduled_[scheduled_head_]]);
    });
    const int64_t t1 = internal::NowNanos();
    consumer_wait_ns_.fetch_add(t1 - t0, std::memory_order_relaxed);
    if (!background_error_.ok()) return background_error_;
    slot_id = scheduled_[scheduled_head_];
    if (trace_.enabled()) {
      trace_.Span("wait for batch", t0, t1, position_.epoch, position_.batch,
                  plan_.batch_size(position_.batch));
    }
    scheduled_head_ = (scheduled_head_ + 1) % scheduled_.size();
    --scheduled_count_;
    leased_[slot_id] = 1;
    ++leased_count_;
    at = position_;
    ++position_.batch;
  }
  internal::Slot& slot = ring_->slot(slot_id);
  assert(slot.epoch == at.epoch && slot.batch == at.batch);
  // Skips count when their batch is delivered, not when read ahead.
  AccountSkips(slot);
  Batch batch;
  batch.owner_ = this;
  batch.slot_ = slot_id;
  // A failed batch still gets its lease so that releasing it frees the slot.
  Status error = slot.error();
  if (!error.ok()) {
    batch.Release();
    return error;
  }
  SetShape(&batch, at, slot.size);
  batch.data_ = slot.data;
  batch.labels_ = slot.labels;
  batch.indices_ = slot.indices;
  batch.device_labels_ = slot.labels;
  batches_delivered_.fetch_add(1, std::memory_order_relaxed);
  samples_delivered_.fetch_add(static_cast<uint64_t>(slot.size), std::memory_order_relaxed);
  return batch;
}

void LoaderImpl::SetShape(Batch* batch, Position at, int64_t size) const {
  // The delivered spec: the dataset's, or after the copy engine's conversion.
  const SampleSpec& spec = convert_.out_spec;
  batch->size_ = size;
  batch->epoch_ = at.epoch;
  batch->index_ = at.batch;
  batch->shape_[0] = size;
  for (size_t i = 0; i < spec.shape.size(); ++i) batch->shape_[i + 1] = spec.shape[i];
  batch->rank_ = static_cast<int>(spec.shape.size()) + 1;
  batch->dtype_ = spec.dtype;
  batch->channels_last_ = spec.channels_last;
  batch->bytes_ = static_cast<size_t>(size) * convert_.out_sample_bytes;
}

StatusOr<Batch> LoaderImpl::NextFromCopyEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!background_error_.ok()) return background_error_;
    if (position_.batch >= plan_.batches_per_epoch()) {
      position_ = {position_.epoch + 1, 0};
      return Batch();  // end of epoch
    }
  }
  internal::CopyEngine::Delivery d;
  int64_t wait_ns = 0;
  Status status = copy_->Next(&d, &wait_ns);
  consumer_wait_ns_.fetch_add(wait_ns, std::memory_order_relaxed);
  if (d.buffer < 0) return status;  // sticky: the loader's or the device's
  Position at;
  {
    std::lock_guard<std::mutex> lock(mu_);
    at = position_;
    ++position_.batch;
  }
  assert(d.epoch == at.epoch && d.batch == at.batch);
  if (!status.ok()) return status;  // the batch's own error; its buffer is free
  Batch batch;
  batch.owner_ = copy_.get();
  batch.slot_ = d.buffer;
  SetShape(&batch, at, d.size);
  batch.data_ = d.data;
  batch.labels_ = d.labels;
  batch.indices_ = d.indices;
  batch.device_labels_ = d.device_labels;
  batch.device_ = copy_->device().spec();
  batches_delivered_.fetch_add(1, std::memory_order_relaxed);
  samples_delivered_.fetch_add(static_cast<uint64_t>(d.size), std::memory_order_relaxed);
  return batch;
}

void LoaderImpl::ReleaseLease(int slot, CUstream_st*) { ReleaseSlot(slot); }

Status LoaderImpl::MakeStreamWait(int, CUstream_st*) {
  return Status::Ok();  // the batch is in host memory, complete
}

Status LoaderImpl::CopyToHost(int slot, void* out, size_t bytes) {
  std::memcpy(out, ring_->slot(slot).data, bytes);
  return Status::Ok();
}

Status LoaderImpl::TakeSlot(Taken* out) {
  int slot_id;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] {
      return !background_error_.ok() || take_cancelled_ ||
             (scheduled_count_ > 0 && ready_[scheduled_[scheduled_head_]]);
    });
    if (!background_error_.ok()) return background_error_;
    if (take_cancelled_) {
      out->slot = -1;
      return Status::Ok();
    }
    slot_id = scheduled_[scheduled_head_];
    scheduled_head_ = (scheduled_head_ + 1) % scheduled_.size();
    --scheduled_count_;
    leased_[slot_id] = 1;
    ++leased_count_;
  }
  internal::Slot& slot = ring_->slot(slot_id);
  // Skips count when the copy engine takes their batch: at most device_buffers
  // batches before they are delivered.
  AccountSkips(slot);
  out->slot = slot_id;
  out->epoch = slot.epoch;
  out->batch = slot.batch;
  out->size = slot.size;
  out->data = slot.data;
  out->labels = slot.labels;
  out->indices = slot.indices;
  out->error = slot.error();
  return Status::Ok();
}

void LoaderImpl::CancelTake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    take_cancelled_ = true;
  }
  cv_.notify_all();
}

void LoaderImpl::ResumeTake() {
  std::lock_guard<std::mutex> lock(mu_);
  take_cancelled_ = false;
}

void LoaderImpl::ReleaseSlot(int slot) {
  // dispatch_mu_ first (the lock order), so that StopDispatch sees the slot
  // either leased or free, never both.
  std::lock_guard<std::mutex> dispatch_lock(dispatch_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    assert(leased_[slot]);
    leased_[slot] = 0;
    --leased_count_;
  }
  free_slots_.push_back(slot);
  PumpLocked();
}

Status LoaderImpl::Seek(Position position) {
  if (position.epoch < 0 || position.batch < 0 || position.batch > plan_.batches_per_epoch()) {
    return InvalidArgumentError("Loader::Seek: position (epoch " + std::to_string(position.epoch) +
                                ", batch " + std::to_string(position.batch) + ") is outside [0, " +
                                std::to_string(plan_.batches_per_epoch()) + "] batches");
  }
  if (copy_) copy_->Stop();  // its copies complete and give their slots back
  StopDispatch();
  {
    std::lock_guard<std::mutex> lock(mu_);
    position_ = position;
  }
  StartDispatch(position);
  if (copy_) copy_->Start();
  return Status::Ok();
}

Position LoaderImpl::position() const {
  std::lock_guard<std::mutex> lock(mu_);
  return position_;
}

LoaderStats LoaderImpl::stats() const {
  LoaderStats s;
  s.stages.push_back({"dispatch", {dispatch_.Snapshot()}});
  // Quasi order: the window threads read; the engine only passes runs on.
  s.stages.push_back({"read", windows_ ? windows_->stats() : engine_->stats()});
  if (!decode_.empty()) {
    StageStats decode{"decode", {}};
    for (const internal::ThreadCounters& c : decode_) decode.threads.push_back(c.Snapshot());
    s.stages.push_back(std::move(decode));
  } else if (decode_inline_.items.load(std::memory_order_relaxed) > 0) {
    // On the read threads: their decode time, summed; not waiting by itself.
    s.stages.push_back({"decode/inline", {decode_inline_.Snapshot()}});
  }
  if (copy_) {
    s.stages.push_back(copy_->stats());
    s.convert_seconds = copy_->device().convert_seconds();
  }
  s.device = DeviceName(copy_ ? copy_->device().spec() : DeviceSpec{});
  s.batches = batches_delivered_.load(std::memory_order_relaxed);
  s.samples = samples_delivered_.load(std::memory_order_relaxed);
  s.bytes = s.samples * (copy_ ? convert_.out_sample_bytes : sample_bytes_);
  s.consumer_wait_seconds =
      static_cast<double>(consumer_wait_ns_.load(std::memory_order_relaxed)) * 1e-9;
  s.ring_bytes = ring_->bytes();
  s.arena_bytes = (arena_ ? arena_->bytes() : 0) + (windows_ ? windows_->bytes() : 0);
  s.io_backend = !maps_.empty() ? "mmap"
                 : windows_
                     ? "pread windows of " + std::to_string(window_layout_.capacity >> 10) + " KiB"
                     : std::string(engine_->name());
  std::lock_guard<std::mutex> lock(skipped_mu_);
  s.skipped = skipped_;
  s.skipped_samples = skipped_samples_;
  return s;
}

}  // namespace stoke

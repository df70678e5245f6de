#include "loader/loader_impl.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace stoke {
namespace {

constexpr size_t kMaxListedSkips = 1000;
// Datasets of byte ranges in at most this many files keep them open.
constexpr uint32_t kMaxKeptOpenFiles = 64;
// samples_per_task = 0: runs of about this many stored bytes.
constexpr uint64_t kAutoRunBytes = 256 * 1024;
// ... and read buffers of at most this many bytes per task.
constexpr uint64_t kAutoRunBufferBytes = 4 << 20;

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
  STOKE_RETURN_IF_ERROR(range("ring_slots", o.ring_slots, 2, 4096));
  STOKE_RETURN_IF_ERROR(range("read_threads", o.read_threads, 1, 1024));
  STOKE_RETURN_IF_ERROR(range("reads_in_flight", o.reads_in_flight, 0, 65536));
  STOKE_RETURN_IF_ERROR(range("decode_threads", o.decode_threads, 0, 1024));
  STOKE_RETURN_IF_ERROR(range("samples_per_task", o.samples_per_task, 0, 4096));
  STOKE_RETURN_IF_ERROR(range("block_samples", o.block_samples, 1, int64_t{1} << 40));
  STOKE_RETURN_IF_ERROR(range("max_refill_attempts", o.max_refill_attempts, 0, 1 << 20));
  STOKE_RETURN_IF_ERROR(range("world_size", o.world_size, 1, 1 << 20));
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
  return LoaderImpl::Create(std::move(dataset), options);
}

StatusOr<std::unique_ptr<Loader>> LoaderImpl::Create(std::shared_ptr<const Dataset> dataset,
                                                     const LoaderOptions& options) {
  STOKE_RETURN_IF_ERROR(ValidateOptions(options, *dataset));
  internal::PlanConfig config;
  config.dataset_size = dataset->size();
  config.order = options.order;
  config.seed = options.seed;
  config.block_samples = static_cast<uint64_t>(options.block_samples);
  config.batch_size = options.batch_size;
  config.drop_last = options.drop_last;
  config.rank = options.rank;
  config.world_size = options.world_size;
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
  std::unique_ptr<LoaderImpl> loader(new LoaderImpl(std::move(dataset), options, plan));
  STOKE_RETURN_IF_ERROR(loader->Init());
  return std::unique_ptr<Loader>(std::move(loader));
}

LoaderImpl::LoaderImpl(std::shared_ptr<const Dataset> dataset, const LoaderOptions& options,
                       internal::Plan plan)
    : dataset_(std::move(dataset)),
      options_(options),
      plan_(plan),
      sample_bytes_(dataset_->spec().bytes()),
      free_tickets_(1024),
      free_slots_(static_cast<size_t>(options.ring_slots) + 2),
      decode_queue_(1024),
      decode_(static_cast<size_t>(options.decode_threads)) {}

Status LoaderImpl::Init() {
  const LoaderOptions& o = options_;
  const bool uring_wanted = o.io != IoBackend::kPread;
  const SampleLocation first = dataset_->Locate(0);

  // 0. Runs: samples per task, and tickets (runs in flight).
  direct_reads_ = o.direct_io || !dataset_->stored_as_output();
  const size_t capacity =
      direct_reads_ ? internal::ReadBufferCapacity(first.length, first.whole_file, o.direct_io) : 0;
  if (o.samples_per_task > 0) {
    samples_per_task_ = o.samples_per_task;
  } else {
    // A whole-file sample's length is only a ceiling; its output size is the
    // better guess of what is read. A task's read buffers stay within a few MiB.
    const uint64_t typical = std::max<uint64_t>(first.whole_file ? sample_bytes_ : first.length, 1);
    uint64_t run = std::clamp<uint64_t>(kAutoRunBytes / typical, 1, 64);
    if (capacity > 0) run = std::clamp<uint64_t>(kAutoRunBufferBytes / capacity, 1, run);
    samples_per_task_ = static_cast<int>(run);
  }
  samples_per_task_ = static_cast<int>(std::min<int64_t>(samples_per_task_, o.batch_size));
  int tickets;
  if (o.reads_in_flight > 0) {
    tickets = (o.reads_in_flight + samples_per_task_ - 1) / samples_per_task_;
  } else {
    const int per_run_depth = (64 + samples_per_task_ - 1) / samples_per_task_;
    tickets = uring_wanted ? std::max(4, per_run_depth) : 2 * o.read_threads;
    tickets = std::max(tickets, 2 * o.decode_threads);
  }
  tickets = std::max(tickets, 1);
  const int in_flight = tickets * samples_per_task_;

  // 1. Memory: check the budget, then allocate the ring and the read arena.
  const uint64_t ring_bytes = internal::Ring::BytesFor(o.ring_slots, o.batch_size, sample_bytes_);
  const uint64_t arena_bytes = direct_reads_ ? internal::Arena::BytesFor(in_flight, capacity) : 0;
  if (ring_bytes + arena_bytes > o.memory_budget_bytes) {
    return ResourceExhaustedError(
        "LoaderOptions.memory_budget_bytes: " + std::to_string(o.memory_budget_bytes) +
        " bytes cannot hold the ring (" + std::to_string(o.ring_slots) + " slots x " +
        std::to_string(o.batch_size) + " samples x " + std::to_string(sample_bytes_) + " bytes = " +
        std::to_string(ring_bytes) + " bytes) and the read arena (" + std::to_string(in_flight) +
        " buffers x " + std::to_string(capacity) + " bytes = " + std::to_string(arena_bytes) +
        " bytes); raise the budget or lower ring_slots, batch_size or reads_in_flight");
  }
  STOKE_ASSIGN_OR_RETURN(ring_, internal::Ring::Create(o.ring_slots, o.batch_size, sample_bytes_,
                                                       internal::AlignedHostMemory()));
  if (direct_reads_) {
    STOKE_ASSIGN_OR_RETURN(
        arena_, internal::Arena::Create(in_flight, capacity, internal::AlignedHostMemory()));
  }

  // 2. Files: keep a few big ones open; whole-file samples are opened per sample,
  // so that a missing one is that sample's error.
  FileOptions file_options;
  file_options.direct = o.direct_io;
  if (!first.whole_file && first.memory == nullptr && dataset_->file_count() <= kMaxKeptOpenFiles) {
    for (uint32_t f = 0; f < dataset_->file_count(); ++f) {
      STOKE_ASSIGN_OR_RETURN(auto file,
                             dataset_->file_system()->Open(dataset_->file_path(f), file_options));
      files_.push_back(std::move(file));
    }
  }

  // 3. Tickets and their runs.
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
    free_tickets_.enqueue(i);
  }
  scheduled_.assign(static_cast<size_t>(o.ring_slots), -1);
  ready_.assign(static_cast<size_t>(o.ring_slots), 0);
  leased_.assign(static_cast<size_t>(o.ring_slots), 0);
  for (int s = 0; s < o.ring_slots; ++s) free_slots_.enqueue(s);
  skipped_samples_.reserve(kMaxListedSkips);

  // 4. Threads: the read engine, the decoders, the dispatcher.
  if (o.io == IoBackend::kPread) {
    engine_ = internal::MakePreadEngine(o.read_threads, this);
  } else {
    auto uring = internal::MakeUringEngine(in_flight, this);
    if (uring.ok()) {
      engine_ = std::move(uring).value();
    } else if (o.io == IoBackend::kUring) {
      return uring.status().WithContext("LoaderOptions.io = uring");
    } else {
      engine_ = internal::MakePreadEngine(o.read_threads, this);  // auto: fall back
    }
  }
  for (int i = 0; i < o.decode_threads; ++i) {
    decoders_.emplace_back([this, i] { DecodeLoop(i); });
  }
  position_ = o.start;
  StartDispatch(o.start);
  return Status::Ok();
}

LoaderImpl::~LoaderImpl() {
  if (engine_) {
    StopDispatch();
    engine_->Stop();
  }
  for (size_t i = 0; i < decoders_.size(); ++i) decode_queue_.enqueue(nullptr);
  for (std::thread& t : decoders_) t.join();
}

// ---- Dispatch ----

void LoaderImpl::StartDispatch(Position from) {
  stopping_.store(false);
  dispatcher_ = std::thread([this, from] { DispatchLoop(from); });
}

void LoaderImpl::StopDispatch() {
  stopping_.store(true);
  // Wake the dispatcher wherever it waits; -1 is not a slot or a ticket.
  free_slots_.enqueue(-1);
  free_tickets_.enqueue(-1);
  if (dispatcher_.joinable()) dispatcher_.join();
  // Collect every ticket: each comes back once its task is finished.
  std::vector<int> tickets;
  tickets.reserve(runs_.size());
  while (tickets.size() < runs_.size()) {
    int t;
    free_tickets_.wait_dequeue(t);
    if (t >= 0) tickets.push_back(t);
  }
  int stray;
  while (free_tickets_.try_dequeue(stray)) {  // wake-up sentinels
  }
  for (int t : tickets) free_tickets_.enqueue(t);
  // Every slot not held by a Batch is free again; nothing is scheduled.
  std::lock_guard<std::mutex> lock(mu_);
  int s;
  while (free_slots_.try_dequeue(s)) {
  }
  for (int i = 0; i < ring_->size(); ++i) {
    ready_[i] = 0;
    if (!leased_[i]) free_slots_.enqueue(i);
  }
  scheduled_head_ = 0;
  scheduled_count_ = 0;
}

void LoaderImpl::DispatchLoop(Position from) {
  Position pos = from;
  try {
    while (true) {
      if (pos.batch >= plan_.batches_per_epoch()) pos = {pos.epoch + 1, 0};
      // 1. Wait for a free slot.
      int64_t t0 = internal::NowNanos();
      int slot_id;
      free_slots_.wait_dequeue(slot_id);
      int64_t t1 = internal::NowNanos();
      dispatch_.AddBlocked(t1 - t0);
      if (slot_id < 0 || stopping_.load()) return;

      // 2. Claim it for the batch at `pos`, and queue it for the consumer.
      internal::Slot& slot = ring_->slot(slot_id);
      slot.epoch = pos.epoch;
      slot.batch = pos.batch;
      slot.size = plan_.batch_size(pos.batch);
      slot.remaining.store(slot.size, std::memory_order_relaxed);
      slot.ClearErrors();
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready_[slot_id] = 0;
        scheduled_[(scheduled_head_ + scheduled_count_) % scheduled_.size()] = slot_id;
        ++scheduled_count_;
      }

      // 3. Submit the batch in runs of consecutive positions, as tickets allow.
      const int64_t first = pos.batch * options_.batch_size;
      for (int64_t i = 0; i < slot.size; i += samples_per_task_) {
        int64_t w0 = internal::NowNanos();
        int ticket;
        free_tickets_.wait_dequeue(ticket);
        int64_t w1 = internal::NowNanos();
        dispatch_.AddBlocked(w1 - w0);
        if (ticket < 0 || stopping_.load()) {
          if (ticket >= 0) free_tickets_.enqueue(ticket);  // StopDispatch counts them all
          return;
        }
        Run& run = *runs_[ticket];
        run.slot = slot_id;
        run.epoch = pos.epoch;
        run.count = static_cast<size_t>(std::min<int64_t>(samples_per_task_, slot.size - i));
        for (size_t j = 0; j < run.count; ++j) {
          SampleTask& t = run.samples[j];
          t.plan_position = first + i + static_cast<int64_t>(j);
          t.batch_position = i + static_cast<int64_t>(j);
          t.attempts = 0;
          PrepareSample(slot_id, &t, plan_.SampleAt(pos.epoch, t.plan_position));
        }
        engine_->Submit(&run);
        dispatch_.AddBusy(internal::NowNanos() - w1);
      }
      dispatch_.Add(dispatch_.items, 1);
      ++pos.batch;
    }
  } catch (const std::exception& e) {
    SetBackgroundError(InternalError(std::string("dispatcher: ") + e.what()));
  } catch (...) {
    SetBackgroundError(InternalError("dispatcher: unknown exception"));
  }
}

void LoaderImpl::PrepareSample(int slot, SampleTask* t, uint64_t sample) {
  t->sample = sample;
  const SampleLocation loc = dataset_->Locate(sample);
  t->memory = loc.memory;
  t->path = &dataset_->file_path(loc.file);
  t->file = files_.empty() ? nullptr : files_[loc.file].get();
  t->owned_file.reset();
  t->offset = loc.offset;
  t->length = loc.length;
  t->whole_file = loc.whole_file;
  if (direct_reads_) {
    t->buffer = t->arena_buffer;
  } else {
    t->buffer = {ring_->slot(slot).data + t->batch_position * sample_bytes_, sample_bytes_};
  }
  internal::PrepareRead(t);
  if (t->buffer.size() <
      internal::ReadBufferCapacity(loc.length, loc.whole_file, t->file_options.direct)) {
    // Already failed: the engines complete it without reading.
    t->status = InternalError(*t->path + ": sample " + std::to_string(sample) + " needs " +
                              std::to_string(loc.length) +
                              " stored bytes, more than the read buffers sized from sample 0");
  }
}

// ---- Completion: read, decode, finish ----

void LoaderImpl::OnReadsDone(internal::ReadGroup* g) {
  Run* run = static_cast<Run*>(g);
  for (size_t j = 0; j < run->count; ++j) {
    run->samples[j].owned_file.reset();  // closes a per-sample file
    run->samples[j].file = nullptr;
  }
  if (stopping_.load(std::memory_order_relaxed)) return Finish(run);
  if (!decoders_.empty()) {
    decode_queue_.enqueue(run);
    return;
  }
  DecodeAndFinish(run, nullptr);
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
  const int64_t t0 = counters ? internal::NowNanos() : 0;
  for (size_t j = 0; j < run->count; ++j) CompleteSample(run, &run->samples[j]);
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
        t->status = dataset_->Decode(t->sample, t->stored, out, &label);
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
        PrepareSample(run->slot, t,
                      plan_.SampleAt(run->epoch, (t->plan_position + t->attempts) % n));
        if (t->status.ok() && !internal::CompleteWithoutIo(t)) internal::ReadBlocking(t);
        t->owned_file.reset();
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
  if (slot.remaining.fetch_sub(count, std::memory_order_acq_rel) == count) Publish(slot_id);
  // Last: once the ticket is back the run may be reused, and StopDispatch takes
  // every ticket back as proof that no thread still touches the ring.
  free_tickets_.enqueue(ticket);
}

void LoaderImpl::Publish(int slot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_[slot] = 1;
  }
  cv_.notify_all();
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
    cv_.wait(lock, [&] {
      return !background_error_.ok() ||
             (scheduled_count_ > 0 && ready_[scheduled_[scheduled_head_]]);
    });
    consumer_wait_ns_.fetch_add(internal::NowNanos() - t0, std::memory_order_relaxed);
    if (!background_error_.ok()) return background_error_;
    slot_id = scheduled_[scheduled_head_];
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
  const SampleSpec& spec = dataset_->spec();
  batch.size_ = slot.size;
  batch.epoch_ = at.epoch;
  batch.index_ = at.batch;
  batch.shape_[0] = slot.size;
  for (size_t i = 0; i < spec.shape.size(); ++i) batch.shape_[i + 1] = spec.shape[i];
  batch.rank_ = static_cast<int>(spec.shape.size()) + 1;
  batch.dtype_ = spec.dtype;
  batch.bytes_ = static_cast<size_t>(slot.size) * sample_bytes_;
  batch.data_ = slot.data;
  batch.labels_ = slot.labels;
  batch.indices_ = slot.indices;
  batches_delivered_.fetch_add(1, std::memory_order_relaxed);
  samples_delivered_.fetch_add(static_cast<uint64_t>(slot.size), std::memory_order_relaxed);
  return batch;
}

void LoaderImpl::ReleaseSlot(int slot) {
  std::lock_guard<std::mutex> lock(mu_);
  assert(leased_[slot]);
  leased_[slot] = 0;
  --leased_count_;
  free_slots_.enqueue(slot);
}

Status LoaderImpl::Seek(Position position) {
  if (position.epoch < 0 || position.batch < 0 || position.batch > plan_.batches_per_epoch()) {
    return InvalidArgumentError("Loader::Seek: position (epoch " + std::to_string(position.epoch) +
                                ", batch " + std::to_string(position.batch) + ") is outside [0, " +
                                std::to_string(plan_.batches_per_epoch()) + "] batches");
  }
  StopDispatch();
  {
    std::lock_guard<std::mutex> lock(mu_);
    position_ = position;
  }
  StartDispatch(position);
  return Status::Ok();
}

Position LoaderImpl::position() const {
  std::lock_guard<std::mutex> lock(mu_);
  return position_;
}

LoaderStats LoaderImpl::stats() const {
  LoaderStats s;
  s.stages.push_back({"dispatch", {dispatch_.Snapshot()}});
  s.stages.push_back({"read", engine_->stats()});
  if (!decode_.empty()) {
    StageStats decode{"decode", {}};
    for (const internal::ThreadCounters& c : decode_) decode.threads.push_back(c.Snapshot());
    s.stages.push_back(std::move(decode));
  }
  s.batches = batches_delivered_.load(std::memory_order_relaxed);
  s.samples = samples_delivered_.load(std::memory_order_relaxed);
  s.bytes = s.samples * sample_bytes_;
  s.consumer_wait_seconds =
      static_cast<double>(consumer_wait_ns_.load(std::memory_order_relaxed)) * 1e-9;
  s.ring_bytes = ring_->bytes();
  s.arena_bytes = arena_ ? arena_->bytes() : 0;
  s.io_backend = std::string(engine_->name());
  std::lock_guard<std::mutex> lock(skipped_mu_);
  s.skipped = skipped_;
  s.skipped_samples = skipped_samples_;
  return s;
}

}  // namespace stoke

#include "loader/window_cache.h"
#include "util/thread_role.h"

#include <algorithm>
#include <cassert>

namespace stoke::internal {

StatusOr<WindowLayout> WindowLayout::Make(const Dataset& dataset, uint64_t window_bytes,
                                          bool direct) {
  const uint64_t n = dataset.size();
  uint64_t stored = 0;
  bool in_memory = false;
  for (uint64_t i = 0; i < n; ++i) {
    const SampleLocation loc = dataset.Locate(i);
    if (loc.whole_file) {
      return InvalidArgumentError(
          "LoaderOptions.order = quasi: " + dataset.Describe() +
          ": every sample is a file of its own, so there are no consecutive records to read as "
          "one window and the order cannot make slow storage read sequentially; pack the "
          "dataset into shards (stoke pack) and read those with quasi order, or use full "
          "shuffle");
    }
    in_memory = in_memory || loc.memory != nullptr;
    stored += loc.length;
  }
  WindowLayout layout;
  // The same windows (and so the same order) whether the bytes are in memory
  // (preloaded) or not.
  const uint64_t mean = std::max<uint64_t>(1, stored / n);
  layout.window_samples = std::clamp<uint64_t>(window_bytes / mean, 1, n);
  const uint64_t k = layout.window_samples;
  if (in_memory) return layout;  // nothing to read: no pieces
  for (uint64_t first = 0; first < n; first += k) {
    layout.first.push_back(layout.pieces.size());
    const uint64_t end = std::min(n, first + k);
    uint64_t at = 0;
    const size_t window_first_piece = layout.pieces.size();
    for (uint64_t i = first; i < end; ++i) {
      const SampleLocation loc = dataset.Locate(i);
      // A sample extends the window's last piece when it lies in the same file
      // at or after it; otherwise it starts a new piece.
      if (layout.pieces.size() > window_first_piece) {
        Piece& last = layout.pieces.back();
        if (last.file == loc.file && loc.offset >= last.offset) {
          last.length = std::max(last.length, loc.offset + loc.length - last.offset);
          continue;
        }
      }
      layout.pieces.push_back({loc.file, loc.offset, loc.length, 0});
    }
    for (size_t p = window_first_piece; p < layout.pieces.size(); ++p) {
      layout.pieces[p].at = at;
      at += ReadBufferCapacity(layout.pieces[p].length, false, direct);
      if (direct) at = (at + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
    }
    layout.capacity = std::max(layout.capacity, at);
    layout.max_pieces = std::max(layout.max_pieces, layout.pieces.size() - window_first_piece);
  }
  layout.first.push_back(layout.pieces.size());
  return layout;
}

int WindowCache::SetWindows(const WindowLayout& layout, int group_windows) {
  return static_cast<int>(
      std::min<uint64_t>(static_cast<uint64_t>(group_windows), layout.first.size() - 1));
}

uint64_t WindowCache::BytesFor(const WindowLayout& layout, int group_windows) {
  return Arena::BytesFor(kSets * SetWindows(layout, group_windows), layout.capacity);
}

StatusOr<std::unique_ptr<WindowCache>> WindowCache::Create(const Dataset& dataset,
                                                           WindowLayout layout, const Plan& plan,
                                                           std::span<RandomAccessFile* const> files,
                                                           FileOptions file_options, int threads,
                                                           HostMemory* memory, Listener* listener) {
  const int set_windows = SetWindows(layout, static_cast<int>(plan.config().group_windows));
  assert(layout.window_samples == plan.config().window_samples);
  STOKE_ASSIGN_OR_RETURN(auto arena, Arena::Create(kSets * set_windows, layout.capacity, memory));
  std::unique_ptr<WindowCache> cache(new WindowCache(dataset, std::move(layout), plan, files,
                                                     file_options, listener, std::move(arena)));
  cache->counters_ = std::vector<ThreadCounters>(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i)
    cache->threads_.emplace_back([c = cache.get(), i] {
      MarkStokeThread();
      c->ThreadLoop(i);
    });
  return cache;
}

WindowCache::WindowCache(const Dataset& dataset, WindowLayout layout, const Plan& plan,
                         std::span<RandomAccessFile* const> files, FileOptions file_options,
                         Listener* listener, std::unique_ptr<Arena> arena)
    : dataset_(dataset),
      layout_(std::move(layout)),
      plan_(plan),
      files_(files.begin(), files.end()),
      file_options_(file_options),
      listener_(listener),
      group_windows_(SetWindows(layout_, static_cast<int>(plan.config().group_windows))),
      arena_(std::move(arena)),
      sets_(kSets) {
  MutexLock lock(&mu_);  // no thread runs yet: for the analysis
  for (Set& set : sets_) {
    set.window_ids.resize(static_cast<size_t>(group_windows_));
    set.reads.resize(static_cast<size_t>(group_windows_) * layout_.max_pieces);
  }
}

WindowCache::~WindowCache() {
  Stop();
  for (size_t i = 0; i < threads_.size(); ++i) jobs_.enqueue(Job{});
  for (std::thread& t : threads_) t.join();
}

void WindowCache::Start(int64_t epoch, int64_t position) {
  MutexLock lock(&mu_);
  for (Set& set : sets_) {
    assert(set.runs == 0);
    set.used = false;
  }
  stopping_.store(false, std::memory_order_relaxed);
  reading_ = true;
  load_epoch_ = epoch;
  load_position_ = plan_.SegmentAt(epoch, position).begin;
  cursor_epoch_ = epoch;
  cursor_ordinal_ = plan_.SegmentAt(epoch, position).ordinal;
  FillLocked();
}

void WindowCache::Stop() {
  MutexLock lock(&mu_);
  reading_ = false;
  stopping_.store(true, std::memory_order_relaxed);
  while (in_flight_ != 0) idle_cv_.Wait(&mu_);
}

int WindowCache::Acquire(int64_t epoch, const Segment& segment) {
  MutexLock lock(&mu_);
  if (epoch != cursor_epoch_ || segment.ordinal != cursor_ordinal_) {
    cursor_epoch_ = epoch;
    cursor_ordinal_ = segment.ordinal;
    bool freed = false;
    for (Set& set : sets_) freed |= FreeIfDoneLocked(&set);
    if (freed) FillLocked();
  }
  for (size_t i = 0; i < sets_.size(); ++i) {
    Set& set = sets_[i];
    if (set.used && set.epoch == epoch && set.ordinal == segment.ordinal) {
      if (set.unread > 0) return -1;
      ++set.runs;
      return static_cast<int>(i);
    }
  }
  return -1;
}

void WindowCache::Release(int s) {
  MutexLock lock(&mu_);
  Set& set = sets_[s];
  assert(set.runs > 0);
  --set.runs;
  if (FreeIfDoneLocked(&set)) FillLocked();
}

bool WindowCache::FreeIfDoneLocked(Set* set) {
  // Never while its windows are being read: those reads write its buffers.
  const bool past =
      set->epoch < cursor_epoch_ || (set->epoch == cursor_epoch_ && set->ordinal < cursor_ordinal_);
  if (!set->used || !past || set->runs > 0 || set->unread > 0) return false;
  set->used = false;
  return true;
}

void WindowCache::FillLocked() {
  if (!reading_) return;
  for (size_t i = 0; i < sets_.size(); ++i) {
    if (sets_[i].used) continue;
    // (An elastic resume's epoch may have nothing left to deliver.)
    while (load_position_ >= plan_.delivered_in(load_epoch_)) {
      ++load_epoch_;
      load_position_ = 0;
    }
    Load(static_cast<int>(i), load_epoch_, load_position_);
    load_position_ = plan_.SegmentAt(load_epoch_, load_position_).end;
  }
}

void WindowCache::Load(int s, int64_t epoch, int64_t position) {
  Set& set = sets_[s];
  const Segment segment = plan_.SegmentAt(epoch, position);
  set.used = true;
  set.epoch = epoch;
  set.ordinal = segment.ordinal;
  set.windows = 0;
  set.runs = 0;
  // The windows the segment's dispatched samples come from: at most a group's.
  for (int64_t p = segment.begin; p < std::min(segment.end, plan_.delivered_in(epoch)); ++p) {
    const uint64_t w = plan_.WindowOf(plan_.SampleAt(epoch, p));
    const auto end = set.window_ids.begin() + set.windows;
    if (std::find(set.window_ids.begin(), end, w) != end) continue;
    assert(set.windows < group_windows_);
    set.window_ids[static_cast<size_t>(set.windows++)] = w;
  }
  // In file order, so that neighbouring windows are read without a seek.
  std::sort(set.window_ids.begin(), set.window_ids.begin() + set.windows);
  set.unread = set.windows;
  in_flight_ += set.windows;
  for (int w = 0; w < set.windows; ++w) jobs_.enqueue(Job{s, w});
}

void WindowCache::ThreadLoop(int index) {
  ThreadCounters& counters = counters_[static_cast<size_t>(index)];
  while (true) {
    const int64_t t0 = NowNanos();
    Job job;
    jobs_.wait_dequeue(job);
    counters.AddBlocked(NowNanos() - t0);
    if (job.window < 0) return;
    Set& set = OwnedSet(job.set);  // the window this job reads is its own
    ReadWindow(&set, job.set, job.window, &counters);
    bool ready;
    {
      MutexLock lock(&mu_);
      ready = --set.unread == 0;
      // Dispatch may have passed it while it was read (a segment it never
      // asks for): refill it now rather than hold it.
      if (ready && FreeIfDoneLocked(&set)) FillLocked();
    }
    if (ready && !stopping_.load(std::memory_order_relaxed)) listener_->OnWindowsReady();
    {
      MutexLock lock(&mu_);
      if (--in_flight_ == 0) idle_cv_.NotifyAll();
    }
  }
}

void WindowCache::ReadWindow(Set* set, int s, int window, ThreadCounters* counters) {
  // Written only here until the set's last window is read, and read by runs
  // only after that (Acquire, under mu_).
  const int64_t t0 = NowNanos();
  const uint64_t w = set->window_ids[static_cast<size_t>(window)];
  const std::span<std::byte> buffer = WindowBuffer(s, window);
  const size_t first = layout_.first[w];
  const size_t pieces = layout_.first[w + 1] - first;
  uint64_t bytes = 0;
  for (size_t p = 0; p < pieces; ++p) {
    const WindowLayout::Piece& piece = layout_.pieces[first + p];
    Set::PieceRead& out = set->reads[static_cast<size_t>(window) * layout_.max_pieces + p];
    ReadRequest r;
    r.file_system = dataset_.file_system();
    r.file = files_.empty() ? nullptr : files_[piece.file];
    r.path = &dataset_.file_path(piece.file);
    r.file_options = file_options_;
    r.offset = piece.offset;
    r.length = piece.length;
    r.buffer = buffer.subspan(piece.at);
    r.cancelled = &stopping_;
    PrepareRead(&r);
    if (!CompleteWithoutIo(&r)) ReadBlocking(&r);
    const uint64_t skip = r.offset - r.read_offset;
    out.start = r.buffer.data() + skip;
    out.valid_end = piece.offset + (r.done > skip ? r.done - skip : 0);
    if (r.status.ok()) out.valid_end = piece.offset + piece.length;
    out.status = r.status;
    bytes += r.bytes_read;
    if (r.http_requests > 0) {
      http_requests_.fetch_add(r.http_requests, std::memory_order_relaxed);
      http_retries_.fetch_add(r.http_retries, std::memory_order_relaxed);
    }
  }
  // Items are samples, as for every other read stage.
  const uint64_t k = layout_.window_samples;
  counters->Add(counters->items, std::min(k, dataset_.size() - w * k));
  counters->Add(counters->bytes, bytes);
  counters->AddBusy(NowNanos() - t0);
}

const std::byte* WindowCache::Find(int s, uint64_t index, const SampleLocation& loc,
                                   Status* status) const {
  const Set& set = OwnedSet(s);  // acquired by the caller's run
  const uint64_t w = plan_.WindowOf(index);
  const auto end = set.window_ids.begin() + set.windows;
  const auto it = std::find(set.window_ids.begin(), end, w);
  if (it == end) return nullptr;
  const auto window = static_cast<size_t>(it - set.window_ids.begin());
  const size_t first = layout_.first[w];
  for (size_t p = first; p < layout_.first[w + 1]; ++p) {
    const WindowLayout::Piece& piece = layout_.pieces[p];
    if (piece.file != loc.file || loc.offset < piece.offset ||
        loc.offset + loc.length > piece.offset + piece.length) {
      continue;
    }
    const Set::PieceRead& read = set.reads[window * layout_.max_pieces + (p - first)];
    if (loc.offset + loc.length > read.valid_end) {
      // Bytes the read did not bring: the file ended first (this sample's
      // truncation), or the read failed (its error).
      const bool truncated = read.status.ok() || read.status.code() == StatusCode::kDataLoss;
      *status = truncated
                    ? TruncatedError(dataset_.file_path(loc.file), loc.length, loc.offset,
                                     read.valid_end > loc.offset ? read.valid_end - loc.offset : 0)
                    : read.status;
      return nullptr;
    }
    *status = Status::Ok();
    return read.start + (loc.offset - piece.offset);
  }
  return nullptr;
}

std::vector<ThreadStats> WindowCache::stats() const {
  std::vector<ThreadStats> out;
  for (const ThreadCounters& c : counters_) out.push_back(c.Snapshot());
  return out;
}

}  // namespace stoke::internal

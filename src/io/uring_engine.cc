// The io_uring engine: N threads, each running its own Boost.Asio io_context
// whose file I/O goes through its own io_uring (BOOST_ASIO_HAS_IO_URING, set for
// the whole library so every translation unit sees the same Asio). Reads are
// random_access_file async_read_some_at calls on the dataset's own descriptors,
// so each thread keeps many reads in flight; groups go to the threads in turn.
// More than one thread matters when the data is in RAM: then the opens, the
// completions and the decodes that run on these threads are the cost, not the
// device.
#include <liburing.h>
#include <sys/uio.h>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/random_access_file.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "io/read_engine.h"
#include "util/counters.h"
#include "util/thread_role.h"

#if !defined(BOOST_ASIO_HAS_IO_URING) || !defined(BOOST_ASIO_HAS_FILE)
#error "stoke's io_uring engine needs BOOST_ASIO_HAS_IO_URING (set by stoke's CMake)"
#endif

namespace stoke::internal {
namespace {

namespace asio = boost::asio;

// Boost 1.81's Asio, with io_uring used for files beside its epoll reactor,
// drains at most 128 completions each time the ring's eventfd fires; any more
// stay in the completion queue with the eventfd already read, and the thread
// sleeps on them forever. Keeping fewer reads in flight than that (with room
// for its own timer and wake-up entries) means every wake drains them all.
constexpr int kMaxOutstanding = 96;

// ReadIfCached: the requests were finished without the ring.
constexpr uint64_t kCompleted = ~uint64_t{0};
// Page cache granularity: a cached read can stop short only at a page boundary
// or at the end of the file.
constexpr uint64_t kPageBytes = 4096;

// One thread and its ring.
class UringThread final : public ReadEngine {
 public:
  explicit UringThread(ReadSink* sink) : sink_(sink), work_(asio::make_work_guard(context_)) {
    start_ns_ = NowNanos();
    thread_ = std::thread([this] {
      MarkStokeThread();
      context_.run();
    });
  }
  ~UringThread() override { Stop(); }

  // Groups submitted and not yet completed, for the engine's choice of thread.
  size_t groups() const { return groups_.load(std::memory_order_relaxed); }

  void Submit(ReadGroup* g) override {
    groups_.fetch_add(1, std::memory_order_relaxed);
    asio::post(context_, asio::bind_allocator(HandlerAllocator<void>(&g->handler_memory),
                                              [this, g] { Start(g); }));
  }

  void Stop() override {
    if (!thread_.joinable()) return;
    // Forget the descriptors on the io thread without closing them: the dataset's
    // files own them.
    asio::post(context_, [this] {
      for (auto& [file, afile] : files_) {
        boost::system::error_code ec;
        afile->release(ec);
      }
      files_.clear();
      per_request_.clear();
    });
    work_.reset();  // run() returns once every read in flight has completed
    thread_.join();
  }

  std::string_view name() const override { return "io_uring"; }

  std::vector<ThreadStats> stats() const override {
    ThreadStats s = counters_.Snapshot();
    const double elapsed = static_cast<double>(NowNanos() - start_ns_) * 1e-9;
    s.blocked_seconds = elapsed > s.busy_seconds ? elapsed - s.busy_seconds : 0;
    return {s};
  }

 private:
  // All below runs on the io thread.

  // Issues every read of the group; the group completes when the last lands.
  // `pending` holds one extra count while issuing, so that reads completing
  // early cannot finish the group before all are issued.
  void Start(ReadGroup* g) {
    g->pending = 1;
    g->next_request = 0;
    g->next_waiting = nullptr;
    Issue(g);
  }

  // Issues g's reads from g->next_request on, as long as fewer than
  // kMaxOutstanding are in flight; otherwise queues the group to go on later.
  void Issue(ReadGroup* g) {
    while (g->next_request < g->count) {
      if (in_flight_ >= kMaxOutstanding) {
        if (waiting_tail_) {
          waiting_tail_->next_waiting = g;
        } else {
          waiting_head_ = g;
        }
        waiting_tail_ = g;
        return;
      }
      const size_t i = g->next_request;
      ReadRequest* r = g->requests[i];
      size_t k = 1;
      try {
        if (CompleteWithoutIo(r) || !OpenIfNeeded(r)) {
          g->next_request = i + 1;
          continue;
        }
        k = CoalescibleCount(g->requests + i, g->count - i);
        if (r->file->native_handle() < 0) {
          // A file stoke cannot hand to the kernel (a fake, a storage model):
          // read it here, adjacent requests merged.
          BeginBusy();
          ReadGroupBlocking(g->requests + i, k);
          EndBusy();
          g->next_request = i + k;
          continue;
        }
        // Bytes in RAM are read at once; the ring is for what must wait.
        const uint64_t ready = ReadIfCached(g->requests + i, k);
        if (ready == kCompleted) {
          g->next_request = i + k;
          continue;
        }
        asio::random_access_file* afile = AsioFile(r);
        BeginBusy();
        ++g->pending;
        try {
          ReadRun(afile, g, i, k, ready);
        } catch (...) {
          --g->pending;
          EndBusy();
          CloseOwned(r);
          throw;
        }
      } catch (const std::exception& e) {
        for (size_t j = i; j < i + k; ++j) {
          g->requests[j]->status =
              UnavailableError(*g->requests[j]->path + ": io_uring read failed: " + e.what());
        }
      }
      g->next_request = i + k;
    }
    RunDone(g);
  }

  // Reads what of r[0..k) (one merged read) is in the page cache now, without
  // blocking (preadv2 with RWF_NOWAIT). Returns kCompleted if that finished the
  // requests, else the bytes that landed (0 when none were cached, or the
  // kernel or file system does not support RWF_NOWAIT), for the ring to go on
  // from. A cached read that stops short inside a page stopped at the end of
  // the file; one that stops at a page boundary may have met an uncached page,
  // so the ring asks for the rest.
  static uint64_t ReadIfCached(ReadRequest* const* r, size_t k) {
    ReadRequest* head = r[0];
    if (head->file_options.direct) return 0;
    const uint64_t length = CoalescedLength(r, k);
    iovec iov{head->buffer.data(), length};
    const ssize_t n = ::preadv2(head->file->native_handle(), &iov, 1,
                                static_cast<off_t>(head->read_offset), RWF_NOWAIT);
    if (n <= 0) return 0;  // EAGAIN (not cached), unsupported, an error, or EOF: the ring decides
    const auto got = static_cast<uint64_t>(n);
    if (got == length || (head->read_offset + got) % kPageBytes != 0) {
      FinishCoalesced(r, k, got);
      return kCompleted;
    }
    return got;
  }

  // After a read lands: lets waiting groups go on while there is room.
  void ResumeWaiting() {
    while (waiting_head_ && in_flight_ < kMaxOutstanding) {
      ReadGroup* g = waiting_head_;
      waiting_head_ = g->next_waiting;
      if (!waiting_head_) waiting_tail_ = nullptr;
      g->next_waiting = nullptr;
      Issue(g);
    }
  }

  asio::random_access_file* AsioFile(ReadRequest* r) {
    if (OwnsFile(*r)) {
      // One Asio file object per request, made on first use and re-pointed at
      // each file after, so that steady state allocates nothing here.
      std::unique_ptr<asio::random_access_file>& afile = per_request_[r];
      if (!afile) afile = std::make_unique<asio::random_access_file>(context_);
      afile->assign(r->file->native_handle());
      return afile.get();
    }
    auto it = files_.find(r->file);
    if (it == files_.end()) {
      it = files_
               .emplace(r->file, std::make_unique<asio::random_access_file>(
                                     context_, r->file->native_handle()))
               .first;
    }
    return it->second.get();
  }

  // Reads g->requests[i..i+k) as one read, `done` bytes of which have landed.
  void ReadRun(asio::random_access_file* afile, ReadGroup* g, size_t i, size_t k, uint64_t done) {
    ReadRequest* head = g->requests[i];
    const uint64_t length = CoalescedLength(g->requests + i, k);
    const uint64_t ask = std::min(length - done, kMaxReadChunk);
    afile->async_read_some_at(
        head->read_offset + done, asio::buffer(head->buffer.data() + done, ask),
        asio::bind_allocator(
            HandlerAllocator<void>(&head->handler_memory),
            [this, afile, g, i, k, done, length, ask](const boost::system::error_code& ec,
                                                      size_t n) {
              ReadRequest* first = g->requests[i];
              const uint64_t asked = ask;
              const uint64_t now = done + n;
              // A whole chunk of a longer range, or a short read that is not
              // the end of the file: ask for the rest.
              if (!ec && n > 0 && now < length && (n == ask || !ShortReadIsEof(*first))) {
                return ReadRun(afile, g, i, k, now);
              }
              if (ec && ec != asio::error::eof) {
                if (k > 1) {
                  // Read one by one, so that the error names its own sample.
                  for (size_t j = i; j < i + k; ++j) ReadBlocking(g->requests[j]);
                } else {
                  first->done = now;
                  first->status =
                      ErrnoToStatus(ec.value(), *first->path + ": io_uring read of " +
                                                    std::to_string(asked) + " bytes at offset " +
                                                    std::to_string(first->read_offset + now));
                }
              } else {
                FinishCoalesced(g->requests + i, k, now);  // k == 1: an ordinary finish
              }
              CloseOwned(first);
              EndBusy();
              RunDone(g);
              ResumeWaiting();
            }));
  }

  void CloseOwned(ReadRequest* r) {
    if (!OwnsFile(*r)) return;
    auto it = per_request_.find(r);
    if (it != per_request_.end() && it->second->is_open()) {
      boost::system::error_code ec;
      it->second->release(ec);  // the request's own file closes the descriptor
    }
  }

  void RunDone(ReadGroup* g) {
    if (--g->pending > 0) return;
    groups_.fetch_sub(1, std::memory_order_relaxed);
    uint64_t bytes = 0;
    for (size_t i = 0; i < g->count; ++i) bytes += g->requests[i]->bytes_read;
    counters_.Add(counters_.items, g->count);
    counters_.Add(counters_.bytes, bytes);
    sink_->OnReadsDone(g);
  }

  // Reads in flight: async ones, plus a blocking one while it runs. Busy time is
  // the time with at least one: the device's view.
  void BeginBusy() {
    if (in_flight_++ == 0) busy_since_ns_ = NowNanos();
  }
  void EndBusy() {
    if (--in_flight_ == 0) counters_.AddBusy(NowNanos() - busy_since_ns_);
  }

  ReadSink* const sink_;
  asio::io_context context_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  ThreadCounters counters_;
  std::thread thread_;
  int64_t start_ns_ = 0;
  // io thread only:
  std::unordered_map<RandomAccessFile*, std::unique_ptr<asio::random_access_file>> files_;
  std::unordered_map<ReadRequest*, std::unique_ptr<asio::random_access_file>> per_request_;
  int in_flight_ = 0;  // at most kMaxOutstanding
  std::atomic<size_t> groups_{0};
  // Groups waiting for room in flight: a FIFO linked through
  // ReadGroup::next_waiting (no allocation).
  ReadGroup* waiting_head_ = nullptr;
  ReadGroup* waiting_tail_ = nullptr;
  int64_t busy_since_ns_ = 0;
};

class UringEngine final : public ReadEngine {
 public:
  UringEngine(int threads, ReadSink* sink) {
    for (int i = 0; i < threads; ++i) threads_.push_back(std::make_unique<UringThread>(sink));
  }
  // To the thread with the least work queued (ties in turn): a thread that was
  // preempted must not hold up work another could do.
  void Submit(ReadGroup* g) override {
    const size_t n = threads_.size();
    const size_t start = next_.fetch_add(1, std::memory_order_relaxed) % n;
    size_t best = start;
    for (size_t k = 1; k < n; ++k) {
      const size_t i = (start + k) % n;
      if (threads_[i]->groups() < threads_[best]->groups()) best = i;
    }
    threads_[best]->Submit(g);
  }
  void Stop() override {
    for (auto& t : threads_) t->Stop();
  }
  std::string_view name() const override { return "io_uring"; }
  std::vector<ThreadStats> stats() const override {
    std::vector<ThreadStats> out;
    for (const auto& t : threads_) out.push_back(t->stats().front());
    return out;
  }

 private:
  std::vector<std::unique_ptr<UringThread>> threads_;
  std::atomic<size_t> next_{0};
};

}  // namespace

StatusOr<std::unique_ptr<ReadEngine>> MakeUringEngine(int threads, ReadSink* sink) {
  // Probe: the kernel, its configuration or a seccomp policy may refuse io_uring.
  struct io_uring ring;
  const int rc = io_uring_queue_init(8, &ring, 0);
  if (rc < 0) {
    return UnavailableError(std::string("io_uring is unavailable here (io_uring_queue_init: ") +
                            std::strerror(-rc) + "); use --io pread");
  }
  io_uring_queue_exit(&ring);
  return std::unique_ptr<ReadEngine>(new UringEngine(threads, sink));
}

}  // namespace stoke::internal

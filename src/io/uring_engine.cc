// The io_uring engine: one thread runs a Boost.Asio io_context whose file I/O
// goes through io_uring (BOOST_ASIO_HAS_IO_URING, set for the whole library so
// every translation unit sees the same Asio). Reads are random_access_file
// async_read_some_at calls on the dataset's own descriptors; the thread only
// submits and reaps, so many reads are in flight at once.
#include <liburing.h>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/random_access_file.hpp>

#include <cstring>
#include <thread>
#include <unordered_map>

#include "io/read_engine.h"
#include "util/counters.h"

#if !defined(BOOST_ASIO_HAS_IO_URING) || !defined(BOOST_ASIO_HAS_FILE)
#error "stoke's io_uring engine needs BOOST_ASIO_HAS_IO_URING (set by stoke's CMake)"
#endif

namespace stoke::internal {
namespace {

namespace asio = boost::asio;

class UringEngine final : public ReadEngine {
 public:
  explicit UringEngine(ReadSink* sink) : sink_(sink), work_(asio::make_work_guard(context_)) {
    start_ns_ = NowNanos();
    thread_ = std::thread([this] { context_.run(); });
  }
  ~UringEngine() override { Stop(); }

  void Submit(ReadRequest* r) override {
    asio::post(context_, asio::bind_allocator(HandlerAllocator<void>(&r->handler_memory),
                                              [this, r] { Start(r); }));
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

  void Start(ReadRequest* r) {
    try {
      if (CompleteWithoutIo(r) || !OpenIfNeeded(r)) return Done(r);
      if (r->file->native_handle() < 0) {
        // A file stoke cannot hand to the kernel (a fake): read it here.
        BeginBusy();
        ReadBlocking(r);
        EndBusy();
        return Done(r);
      }
      asio::random_access_file* afile = AsioFile(r);
      BeginBusy();
      ReadMore(afile, r);
    } catch (const std::exception& e) {
      r->status = UnavailableError(*r->path + ": io_uring read failed: " + e.what());
      Done(r);
    }
  }

  asio::random_access_file* AsioFile(ReadRequest* r) {
    if (r->owned_file) {
      auto afile = std::make_unique<asio::random_access_file>(context_, r->file->native_handle());
      asio::random_access_file* p = afile.get();
      owned_[r] = std::move(afile);
      return p;
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

  void ReadMore(asio::random_access_file* afile, ReadRequest* r) {
    afile->async_read_some_at(
        r->read_offset + r->done,
        asio::buffer(r->buffer.data() + r->done, r->read_length - r->done),
        asio::bind_allocator(
            HandlerAllocator<void>(&r->handler_memory),
            [this, afile, r](const boost::system::error_code& ec, size_t n) {
              const uint64_t asked = r->read_length - r->done;
              r->done += n;
              bool more = false;
              if (ec == asio::error::eof || (!ec && n == 0)) {
                // end of file: FinishRead decides whether that is truncation
              } else if (ec) {
                r->status = ErrnoToStatus(
                    ec.value(), *r->path + ": io_uring read of " + std::to_string(asked) +
                                    " bytes at offset " + std::to_string(r->read_offset + r->done));
              } else if (r->done < r->read_length && !(r->file_options.direct && n < asked)) {
                more = true;  // a short read: ask for the rest
              }
              if (more) return ReadMore(afile, r);
              if (r->status.ok()) FinishRead(r);
              EndBusy();
              Done(r);
            }));
  }

  void Done(ReadRequest* r) {
    auto it = owned_.find(r);
    if (it != owned_.end()) {
      boost::system::error_code ec;
      it->second->release(ec);  // r->owned_file closes the descriptor
      owned_.erase(it);
    }
    counters_.Add(counters_.items, 1);
    counters_.Add(counters_.bytes, r->bytes_read);
    sink_->OnReadDone(r);
  }

  // Busy time is the time with at least one read in flight: the device's view.
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
  std::unordered_map<ReadRequest*, std::unique_ptr<asio::random_access_file>> owned_;
  int in_flight_ = 0;
  int64_t busy_since_ns_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<ReadEngine>> MakeUringEngine(int max_in_flight, ReadSink* sink) {
  // Probe: the kernel, its configuration or a seccomp policy may refuse io_uring.
  struct io_uring ring;
  const int rc =
      io_uring_queue_init(static_cast<unsigned>(max_in_flight < 8 ? 8 : max_in_flight), &ring, 0);
  if (rc < 0) {
    return UnavailableError(std::string("io_uring is unavailable here (io_uring_queue_init: ") +
                            std::strerror(-rc) + "); use --io pread");
  }
  io_uring_queue_exit(&ring);
  return std::unique_ptr<ReadEngine>(new UringEngine(sink));
}

}  // namespace stoke::internal

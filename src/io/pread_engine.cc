// The pread engine: a pool of threads running one Boost.Asio io_context; each
// posted group of reads runs to completion (blocking ReadAt calls, contiguous
// reads merged) on one of them.
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <optional>
#include <thread>

#include "io/read_engine.h"
#include "util/counters.h"
#include "util/thread_role.h"
#include "util/trace.h"

namespace stoke::internal {
namespace {

namespace asio = boost::asio;

class PreadEngine final : public ReadEngine {
 public:
  PreadEngine(int threads, ReadSink* sink)
      : sink_(sink), work_(asio::make_work_guard(context_)), counters_(threads) {
    start_ns_ = NowNanos();
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this, i] {
        MarkStokeThread();
        Run(i);
      });
    }
  }
  ~PreadEngine() override { Stop(); }

  void Submit(ReadGroup* g) override {
    asio::post(context_, asio::bind_allocator(HandlerAllocator<void>(&g->handler_memory),
                                              [this, g] { Read(g); }));
  }

  void Stop() override {
    work_.reset();  // run() returns once the posted reads are done
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  std::string_view name() const override { return "pread"; }

  std::vector<ThreadStats> stats() const override {
    const double elapsed = static_cast<double>(NowNanos() - start_ns_) * 1e-9;
    std::vector<ThreadStats> out;
    for (const ThreadCounters& c : counters_) {
      ThreadStats s = c.Snapshot();
      s.blocked_seconds = elapsed > s.busy_seconds ? elapsed - s.busy_seconds : 0;
      out.push_back(s);
    }
    return out;
  }

 private:
  static thread_local ThreadCounters* current_;

  void Run(int index) {
    current_ = &counters_[index];
    context_.run();
  }

  void Read(ReadGroup* g) {
    const int64_t t0 = NowNanos();
    try {
      TraceRange trace("stoke read");
      ReadGroupBlocking(g->requests, g->count);
    } catch (const std::exception& e) {
      FailUnfinished(g, InternalError(std::string("pread engine: ") + e.what()));
    } catch (...) {
      FailUnfinished(g, InternalError("pread engine: unknown exception"));
    }
    uint64_t bytes = 0;
    for (size_t i = 0; i < g->count; ++i) bytes += g->requests[i]->bytes_read;
    current_->AddBusy(NowNanos() - t0);
    current_->Add(current_->items, g->count);
    current_->Add(current_->bytes, bytes);
    sink_->OnReadsDone(g);
  }

  // After an exception: every request without a result gets `status`.
  static void FailUnfinished(ReadGroup* g, const Status& status) {
    for (size_t i = 0; i < g->count; ++i) {
      ReadRequest* r = g->requests[i];
      if (r->status.ok() && r->stored.data() == nullptr) r->status = status;
    }
  }

  ReadSink* const sink_;
  asio::io_context context_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::vector<ThreadCounters> counters_;  // one per thread, fixed size
  std::vector<std::thread> threads_;
  int64_t start_ns_ = 0;
};

thread_local ThreadCounters* PreadEngine::current_ = nullptr;

}  // namespace

std::unique_ptr<ReadEngine> MakePreadEngine(int threads, ReadSink* sink) {
  return std::make_unique<PreadEngine>(threads, sink);
}

}  // namespace stoke::internal

// The http engine (read_engine.h): a group's runs of contiguous reads become
// ranged GETs on the shared HttpClient, all in flight at once; when its last
// GET completes (on the client's thread) the group is queued for the engine's
// threads, which hand it to the sink.
#include <algorithm>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "io/http_client.h"
#include "io/read_engine.h"
#include "io/remote_file.h"
#include "util/counters.h"
#include "util/mutex.h"
#include "util/thread_role.h"
#include "util/trace.h"

namespace stoke::internal {
namespace {

class HttpEngine final : public ReadEngine, private HttpDone {
 public:
  HttpEngine(int threads, ReadSink* sink) : sink_(sink), client_(SharedHttpClient()) {
    start_ns_ = NowNanos();
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        MarkStokeThread();
        Deliver();
      });
    }
  }
  ~HttpEngine() override { Stop(); }

  void Submit(ReadGroup* g) override {
    // 1. Answer what needs no request; cut the rest into runs, each one GET.
    //    Nothing of g is touched once the first GET is submitted: its last
    //    completion hands g back to the sink.
    // Per thread, so that Submit allocates nothing once warm.
    thread_local std::vector<Get*> gets;
    gets.clear();
    for (size_t i = 0; i < g->count;) {
      ReadRequest* r = g->requests[i];
      if (CompleteWithoutIo(r)) {
        ++i;
        continue;
      }
      if (!OpenIfNeeded(r)) {
        ++i;
        continue;
      }
      auto* remote = dynamic_cast<RemoteFile*>(r->file);
      if (remote == nullptr) {  // a local file in a remote engine's loader
        ReadBlocking(r);
        ++i;
        continue;
      }
      const size_t k = CoalescibleCount(g->requests + i, g->count - i);
      // A whole-file read asks one byte more than allowed: no more than there is.
      const uint64_t size = *remote->Size();
      const uint64_t want = CoalescedLength(g->requests + i, k);
      const uint64_t there = r->read_offset < size ? size - r->read_offset : 0;
      if (there == 0) {  // at or past the end: nothing to ask
        FinishCoalesced(g->requests + i, k, 0);
        i += k;
        continue;
      }
      Get* get = Acquire();
      get->group = g;
      get->first = i;
      get->count = k;
      HttpTransfer& t = get->transfer;
      t.url = remote->url();
      t.signing = remote->signing();
      t.offset = r->read_offset;
      t.dst = std::span(r->buffer.data(), static_cast<size_t>(std::min(want, there)));
      gets.push_back(get);
      i += k;
    }
    // 2. Start them; the group completes with its last.
    if (gets.empty()) return sink_->OnReadsDone(g);
    g->pending = gets.size();
    bool stopping;
    {
      MutexLock lock(&mu_);
      if (in_flight_ == 0) busy_since_ns_ = NowNanos();
      in_flight_ += static_cast<int64_t>(gets.size());
      stopping = stopping_;
    }
    for (Get* get : gets) {
      client_->Submit(&get->transfer);
      if (stopping) client_->Cancel(&get->transfer);
    }
  }

  void CancelInFlight() override {
    MutexLock lock(&mu_);
    for (Get* get : active_) client_->Cancel(&get->transfer);
  }

  // 1. Cancel what is in flight; 2. the threads deliver every group still to
  // come and leave once nothing is in flight or queued; 3. join them.
  void Stop() override {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
      for (Get* get : active_) client_->Cancel(&get->transfer);
      wake_.NotifyAll();
    }
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  std::string_view name() const override { return "http"; }

  std::vector<ThreadStats> stats() const override {
    ThreadStats s = counters_.Snapshot();
    const double elapsed = static_cast<double>(NowNanos() - start_ns_) * 1e-9;
    {
      MutexLock lock(&mu_);
      if (in_flight_ > 0) s.busy_seconds += static_cast<double>(NowNanos() - busy_since_ns_) * 1e-9;
    }
    s.blocked_seconds = elapsed > s.busy_seconds ? elapsed - s.busy_seconds : 0;
    return {s};
  }

 private:
  struct Get {
    HttpTransfer transfer;
    ReadGroup* group = nullptr;
    size_t first = 0;
    size_t count = 0;
  };

  // An engine thread: hands completed groups to the sink until stopped with
  // nothing in flight or queued.
  void Deliver() {
    for (;;) {
      ReadGroup* g = nullptr;
      {
        MutexLock lock(&mu_);
        while (done_.empty() && !(stopping_ && active_.empty())) wake_.Wait(&mu_);
        if (done_.empty()) return;
        g = done_.front();
        done_.pop_front();
      }
      sink_->OnReadsDone(g);
    }
  }

  Get* Acquire() {
    MutexLock lock(&mu_);
    Get* get;
    if (free_.empty()) {
      all_.push_back(std::make_unique<Get>());
      get = all_.back().get();
      get->transfer.done = this;
      get->transfer.user = get;
    } else {
      get = free_.back();
      free_.pop_back();
    }
    active_.push_back(get);
    return get;
  }

  // The client's thread: must not block.
  void OnHttpDone(HttpTransfer* t) override {
    auto* get = static_cast<Get*>(t->user);
    ReadGroup* g = get->group;
    ReadRequest* const* r = g->requests + get->first;
    if (t->status.ok()) {
      FinishCoalesced(r, get->count, t->received);
    } else if (get->count == 1) {
      r[0]->status = t->status;
    } else {
      // The merged GET failed: each sample gets the error, naming its own range.
      for (size_t j = 0; j < get->count; ++j) {
        r[j]->status = t->status.WithContext(
            *r[j]->path + " bytes " + std::to_string(r[j]->offset) + "-" +
            std::to_string(r[j]->offset + r[j]->length - 1) + " (in a merged request)");
      }
    }
    r[0]->http_requests += static_cast<uint32_t>(1 + t->retries);
    r[0]->http_retries += static_cast<uint32_t>(t->retries);
    uint64_t bytes = 0;
    for (size_t j = 0; j < get->count; ++j) bytes += r[j]->bytes_read;
    counters_.Add(counters_.items, get->count);
    counters_.Add(counters_.bytes, bytes);
    const bool last = --g->pending == 0;
    {
      MutexLock lock(&mu_);
      if (--in_flight_ == 0) {
        counters_.AddBusy(NowNanos() - busy_since_ns_);
      }
      for (size_t i = 0; i < active_.size(); ++i) {
        if (active_[i] == get) {
          active_[i] = active_.back();
          active_.pop_back();
          break;
        }
      }
      free_.push_back(get);
      if (last) done_.push_back(g);
      if (last || (stopping_ && active_.empty())) wake_.NotifyAll();
    }
  }

  ReadSink* const sink_;
  HttpClient* const client_;
  ThreadCounters counters_;
  int64_t start_ns_ = 0;
  std::vector<std::thread> threads_;
  mutable Mutex mu_;
  CondVar wake_;
  bool stopping_ STOKE_GUARDED_BY(mu_) = false;
  // Groups whose reads are all done, for the engine's threads.
  std::deque<ReadGroup*> done_ STOKE_GUARDED_BY(mu_);
  int64_t in_flight_ STOKE_GUARDED_BY(mu_) = 0;
  int64_t busy_since_ns_ STOKE_GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Get>> all_ STOKE_GUARDED_BY(mu_);
  std::vector<Get*> free_ STOKE_GUARDED_BY(mu_);
  std::vector<Get*> active_ STOKE_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<ReadEngine> MakeHttpEngine(int threads, ReadSink* sink) {
  return std::make_unique<HttpEngine>(std::max(1, threads), sink);
}

}  // namespace stoke::internal

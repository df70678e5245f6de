// Read engines: many reads in flight, completions delivered to a sink.
//
//   pread:    N threads, each issuing blocking reads (FileSystem::ReadAt). Works
//             with every FileSystem, fakes included.
//   io_uring: N threads, each driving its own Boost.Asio io_uring backend;
//             reads of files with a native descriptor go to the kernel
//             asynchronously, so each thread keeps a deep queue busy. Files
//             without one (fakes, fault injectors) are read through ReadAt.
//   http:     remote files: ranged GETs on libcurl's multi interface, all of a
//             group's in flight at once (MakeHttpEngine).
//
// The unit of work is a ReadGroup: one submission, one completion, however many
// reads it holds, so per-sample costs are only the reads themselves.
//
// Thread safety: Submit may be called from any thread, including from inside
// OnReadsDone. The sink is called on engine threads, concurrently for pread.
#ifndef STOKE_SRC_IO_READ_ENGINE_H_
#define STOKE_SRC_IO_READ_ENGINE_H_

#include <memory>
#include <string_view>
#include <vector>

#include "io/read_request.h"
#include "stoke/stats.h"
#include "stoke/status.h"

namespace stoke::internal {

class ReadSink {
 public:
  // Called exactly once per submitted group, when all its reads have completed
  // (each request's status and stored set). Must not throw.
  virtual void OnReadsDone(ReadGroup* g) = 0;

 protected:
  ~ReadSink() = default;
};

class ReadEngine {
 public:
  virtual ~ReadEngine() = default;
  // Starts reading the group (PrepareRead must have been called on each request).
  // Never blocks; the group and its requests must stay alive until the sink has
  // been called for it.
  virtual void Submit(ReadGroup* g) = 0;
  // Waits for every submitted request's completion, then joins the threads.
  // Idempotent; the destructor calls it.
  virtual void Stop() = 0;
  // Asks the reads in flight to end soon (they complete with Cancelled, or
  // with their data if it is already there); never blocks. For an engine whose
  // reads may take long (remote data): the loader calls it when it stops or
  // seeks, before it waits for them. Default: nothing (local reads are short).
  virtual void CancelInFlight() {}
  virtual std::string_view name() const = 0;
  // Per-thread: items = samples read, bytes = bytes read, busy = reading (io_uring: with
  // at least one read in flight), blocked = idle.
  virtual std::vector<ThreadStats> stats() const = 0;
};

// Starts `threads` reader threads. Never fails for threads >= 1.
std::unique_ptr<ReadEngine> MakePreadEngine(int threads, ReadSink* sink);

// Unavailable naming the cause (e.g. the kernel or a seccomp policy refuses
// io_uring_setup) when io_uring cannot be used here.
// Each of the `threads` threads keeps at most 96 reads in flight and queues the
// rest (see kMaxOutstanding).
StatusOr<std::unique_ptr<ReadEngine>> MakeUringEngine(int threads, ReadSink* sink);

// Remote files (RemoteFile: s3://, http(s)://): each run of contiguous reads is
// one ranged GET on the process's HttpClient, every run of every group in
// flight at once; files that are not remote are read synchronously by
// Submit's caller (ReadBlocking). Completed groups go to the sink on `threads`
// threads of the engine's own (never the client's, whose thread must not
// block: a sink may read a refill synchronously). Stop cancels what is in
// flight. Its stats have one entry: busy while at least one request is in
// flight.
std::unique_ptr<ReadEngine> MakeHttpEngine(int threads, ReadSink* sink);

}  // namespace stoke::internal

#endif  // STOKE_SRC_IO_READ_ENGINE_H_

#include "loader/sizing.h"

#include <algorithm>

#include "io/read_request.h"
#include "ring/ring.h"

namespace stoke::internal {

Sizing ComputeSizing(const SizingInput& in) {
  const LoaderOptions& o = in.options;
  Sizing s;
  // Buffers for nearly every sample; the outliers (if any) share one of their own.
  const bool outliers = in.typical > 0 && in.typical < in.longest;
  s.read_buffer_capacity = in.direct_reads ? ReadBufferCapacity(outliers ? in.typical : in.longest,
                                                                in.whole_file, o.direct_io)
                                           : 0;
  s.overflow_capacity =
      in.direct_reads && outliers ? ReadBufferCapacity(in.longest, in.whole_file, o.direct_io) : 0;
  const size_t capacity = s.read_buffer_capacity;

  // 1. Samples per task.
  if (o.samples_per_task > 0) {
    s.samples_per_task = o.samples_per_task;
  } else {
    // A whole-file sample's length is only a ceiling; its output size is the
    // better guess of what is read. A task's read buffers stay within a few MiB.
    const uint64_t typical =
        std::max<uint64_t>(in.whole_file ? in.sample_bytes : in.first_length, 1);
    uint64_t run = std::clamp<uint64_t>(kAutoRunBytes / typical, 1, 64);
    if (capacity > 0) run = std::clamp<uint64_t>(kAutoRunBufferBytes / capacity, 1, run);
    s.samples_per_task = static_cast<int>(run);
    if (o.order == Order::kBlock && in.pack_run_buffers) {
      // Block order over byte ranges read into the arena: a run as long as a
      // block (up to 64), so that its neighbouring records are read with one read.
      const auto most = std::max<int64_t>(
          s.samples_per_task, std::min<int64_t>(64, (16 << 20) / std::max<size_t>(capacity, 1)));
      s.samples_per_task =
          static_cast<int>(std::clamp<int64_t>(o.block_samples, s.samples_per_task, most));
    }
  }
  s.samples_per_task = static_cast<int>(std::min<int64_t>(s.samples_per_task, o.batch_size));

  // 2. Tickets.
  if (o.reads_in_flight > 0) {
    s.tickets = (o.reads_in_flight + s.samples_per_task - 1) / s.samples_per_task;
  } else {
    // io_uring: at least 128 samples in flight, for a deep device queue.
    const int deep = (128 + s.samples_per_task - 1) / s.samples_per_task;
    s.tickets = in.uring ? std::max(2 * o.read_threads, deep) : 2 * o.read_threads;
    if (in.remote) {
      // Remote data: kRemoteInFlight samples in flight, so that a store with
      // tens of milliseconds per request still delivers at decode rates.
      s.tickets = std::max(s.tickets, static_cast<int>((kRemoteInFlight + s.samples_per_task - 1) /
                                                       s.samples_per_task));
    }
    s.tickets = std::max(s.tickets, 2 * o.decode_threads);
    // Big read buffers (large whole files): keep the automatic arena bounded.
    if (capacity > 0) {
      const uint64_t per_ticket = capacity * static_cast<uint64_t>(s.samples_per_task);
      const auto fit = static_cast<int>(std::max<uint64_t>(2, kAutoArenaBytes / per_ticket));
      s.tickets = std::min(s.tickets, fit);
    }
  }
  s.tickets = std::max(s.tickets, 1);

  // 3. Ring slots.
  s.ring_slots = o.ring_slots;
  if (o.ring_slots == 0) {
    const int64_t spanned = (s.in_flight() + o.batch_size - 1) / o.batch_size;
    const uint64_t per_slot = Ring::BytesFor(1, o.batch_size, in.sample_bytes);
    const auto fit =
        static_cast<int64_t>(o.memory_budget_bytes / 8 / std::max<uint64_t>(per_slot, 1));
    s.ring_slots =
        static_cast<int>(std::max<int64_t>(4, std::min<int64_t>({spanned + 3, fit, 4096})));
  }
  return s;
}

int AutoDecodeThreads(bool compute_bound, int cores, DeviceKind device) {
  if (!compute_bound) return 0;
  cores = std::max(1, cores);
  return device == DeviceKind::kCuda ? std::max(1, cores - 1) : cores;
}

}  // namespace stoke::internal

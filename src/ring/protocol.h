// The ring's protocol: which slot holds which batch, and who may touch it. The
// loader's ring of host slots follows it, and so do the copy engine's delivery
// buffers. Each slot moves through
//
//   free --Claim--> claimed --Publish--> ready --Take--> leased --Release--> free
//
// Claim appends the slot to the schedule, a FIFO in batch order: batches are
// claimed in order but finish in any order, and Take hands out only the
// schedule's head, once it is ready, so the consumer sees them in order.
// Between Claim and Publish the slot's memory belongs to the producer (the
// loader's read and decode threads, or the copy engine's thread); between Take
// and Release to the consumer; free slots to nobody.
//
// Two ways out of a wait: Cancel (until Resume) makes Claim and Take return no
// slot, for a producer or consumer being stopped; SetError records the first
// error, which every later Take returns even when a batch is ready (sticky).
// Reset, once no producer writes (its threads stopped), frees every slot that
// is not leased: a seek drops the batches read ahead.
//
// Thread safety: every method on any thread; one mutex guards the states, and
// Clang's -Wthread-safety checks it (tools/check_threads.sh).
#ifndef STOKE_SRC_RING_PROTOCOL_H_
#define STOKE_SRC_RING_PROTOCOL_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "ring/fifo.h"
#include "stoke/status.h"
#include "util/mutex.h"

namespace stoke::internal {

class RingProtocol {
 public:
  // Which free slot a claim takes.
  enum class Reuse {
    // The one freed last: its memory is the likeliest still in the CPU's
    // caches (the loader's host slots: 8% more JPEG shards/s on 2 cores than
    // oldest-first, image_bench).
    kNewestFirst,
    // The one freed longest ago: a device buffer whose consumer's stream has
    // had the longest to finish with it (the copy engine's buffers).
    kOldestFirst,
  };

  // `slots` slots, all free; the first claims take them in index order.
  RingProtocol(int slots, Reuse reuse);

  int size() const { return slots_; }

  // ---- The producer ----

  // Claims a free slot (which one: Reuse) for the next batch in order; -1 when
  // none is free.
  int TryClaim() STOKE_EXCLUDES(mu_);
  // The same, waiting for a free slot; -1 once cancelled or failed.
  int Claim() STOKE_EXCLUDES(mu_);
  // Gives back the slot just claimed, unpublished. Precondition: it is the
  // newest claim.
  void Unclaim(int slot) STOKE_EXCLUDES(mu_);
  // The slot's batch is complete. Returns how many slots are now ready and not
  // taken (for a trace).
  int Publish(int slot) STOKE_EXCLUDES(mu_);

  // ---- The consumer ----

  enum class Took {
    kSlot,       // *slot is leased to the caller
    kCancelled,  // Cancel was called
    kAllLeased,  // every slot is leased, and the caller asked not to wait
    kFailed,     // error() holds the sticky error
    kTimedOut,   // the deadline passed before the head was ready
  };
  using Deadline = std::chrono::steady_clock::time_point;
  // Waits until the schedule's head is ready and leases it; does not wait when
  // the ring has failed. `refuse_if_all_leased`: for a consumer that would
  // hold every lease itself, so that nothing could ever become ready; a
  // consumer whose leases others release (the copy engine's) waits instead.
  // Waits no later than `deadline` (the default: for ever).
  Took Take(int* slot, bool refuse_if_all_leased, Deadline deadline = Deadline::max())
      STOKE_EXCLUDES(mu_);
  // A leased slot is free again.
  void Release(int slot) STOKE_EXCLUDES(mu_);

  // ---- Stopping and failing ----

  void Cancel() STOKE_EXCLUDES(mu_);
  void Resume() STOKE_EXCLUDES(mu_);
  // Frees every slot not leased; nothing is scheduled after it. Precondition:
  // no producer holds a claimed slot's memory.
  void Reset() STOKE_EXCLUDES(mu_);
  // Records `status` unless an error is recorded already; wakes every waiter.
  void SetError(Status status) STOKE_EXCLUDES(mu_);
  Status error() const STOKE_EXCLUDES(mu_);
  int leased() const STOKE_EXCLUDES(mu_);

 private:
  enum class State : char { kFree, kClaimed, kReady, kLeased };

  // Takes a free slot, as reuse_ says. mu_ held; free_ not empty.
  int TakeFree() STOKE_REQUIRES(mu_);

  const int slots_;
  const Reuse reuse_;
  mutable Mutex mu_;
  CondVar claimable_;  // a slot was freed, or Claim should give up
  CondVar takeable_;   // a slot was published, or Take should give up
  // Per slot. Invariants: a slot is in free_ iff kFree (free_ is in the order
  // freed, newest at the back); in schedule_ iff
  // kClaimed or kReady, in the order claimed; ready_ counts the kReady ones and
  // leased_ the kLeased ones.
  std::vector<State> state_ STOKE_GUARDED_BY(mu_);
  Fifo<int> free_ STOKE_GUARDED_BY(mu_);
  Fifo<int> schedule_ STOKE_GUARDED_BY(mu_);
  int ready_ STOKE_GUARDED_BY(mu_) = 0;
  int leased_ STOKE_GUARDED_BY(mu_) = 0;
  bool cancelled_ STOKE_GUARDED_BY(mu_) = false;
  Status error_ STOKE_GUARDED_BY(mu_);  // sticky: the first one wins
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_RING_PROTOCOL_H_

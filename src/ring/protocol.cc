#include "ring/protocol.h"

#include <cassert>
#include <utility>

namespace stoke::internal {

RingProtocol::RingProtocol(int slots, Reuse reuse)
    : slots_(slots),
      reuse_(reuse),
      state_(static_cast<size_t>(slots), State::kFree),
      free_(static_cast<size_t>(slots)),
      schedule_(static_cast<size_t>(slots)) {
  // As if freed in the order that makes the first claims take 0, 1, 2, ...
  for (int i = 0; i < slots; ++i) free_.Push(reuse == Reuse::kOldestFirst ? i : slots - 1 - i);
}

int RingProtocol::TakeFree() {
  if (reuse_ == Reuse::kOldestFirst) return free_.Pop();
  const int slot = free_.Back();
  free_.PopBack();
  return slot;
}

int RingProtocol::TryClaim() {
  MutexLock lock(&mu_);
  if (free_.empty()) return -1;
  const int slot = TakeFree();
  state_[slot] = State::kClaimed;
  schedule_.Push(slot);
  return slot;
}

int RingProtocol::Claim() {
  MutexLock lock(&mu_);
  while (free_.empty() && !cancelled_ && error_.ok()) claimable_.Wait(&mu_);
  if (cancelled_ || !error_.ok()) return -1;
  const int slot = TakeFree();
  state_[slot] = State::kClaimed;
  schedule_.Push(slot);
  return slot;
}

void RingProtocol::Unclaim(int slot) {
  {
    MutexLock lock(&mu_);
    assert(state_[slot] == State::kClaimed && schedule_.Back() == slot);
    schedule_.PopBack();
    state_[slot] = State::kFree;
    free_.Push(slot);
  }
  claimable_.NotifyOne();
}

int RingProtocol::Publish(int slot) {
  int ready;
  {
    MutexLock lock(&mu_);
    assert(state_[slot] == State::kClaimed);
    state_[slot] = State::kReady;
    ready = ++ready_;
  }
  takeable_.NotifyAll();
  return ready;
}

RingProtocol::Took RingProtocol::Take(int* slot, bool refuse_if_all_leased, Deadline deadline) {
  MutexLock lock(&mu_);
  if (!error_.ok()) return Took::kFailed;
  if (refuse_if_all_leased && leased_ == slots_) return Took::kAllLeased;
  while (error_.ok() && !cancelled_ &&
         (schedule_.empty() || state_[schedule_.Front()] != State::kReady)) {
    if (deadline == Deadline::max()) {
      takeable_.Wait(&mu_);
    } else if (!takeable_.WaitUntil(&mu_, deadline) &&
               (schedule_.empty() || state_[schedule_.Front()] != State::kReady) && error_.ok() &&
               !cancelled_) {
      return Took::kTimedOut;
    }
  }
  if (!error_.ok()) return Took::kFailed;
  if (cancelled_) return Took::kCancelled;
  *slot = schedule_.Pop();
  state_[*slot] = State::kLeased;
  --ready_;
  ++leased_;
  return Took::kSlot;
}

void RingProtocol::Release(int slot) {
  {
    MutexLock lock(&mu_);
    assert(state_[slot] == State::kLeased);
    state_[slot] = State::kFree;
    --leased_;
    free_.Push(slot);
  }
  claimable_.NotifyOne();
}

void RingProtocol::Cancel() {
  {
    MutexLock lock(&mu_);
    cancelled_ = true;
  }
  claimable_.NotifyAll();
  takeable_.NotifyAll();
}

void RingProtocol::Resume() {
  MutexLock lock(&mu_);
  cancelled_ = false;
}

void RingProtocol::Reset() {
  {
    MutexLock lock(&mu_);
    schedule_.Clear();
    free_.Clear();
    ready_ = 0;
    for (int s = 0; s < slots_; ++s) {
      if (state_[s] == State::kLeased) continue;
      state_[s] = State::kFree;
      free_.Push(s);
    }
  }
  claimable_.NotifyAll();
}

void RingProtocol::SetError(Status status) {
  {
    MutexLock lock(&mu_);
    if (error_.ok()) error_ = std::move(status);
  }
  claimable_.NotifyAll();
  takeable_.NotifyAll();
}

Status RingProtocol::error() const {
  MutexLock lock(&mu_);
  return error_;
}

int RingProtocol::leased() const {
  MutexLock lock(&mu_);
  return leased_;
}

}  // namespace stoke::internal

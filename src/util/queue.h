// The stage queues: moodycamel's blocking ConcurrentQueue, with a short spin.
//
// Its default waits spin 10,000 times before sleeping, which on a machine with
// few cores takes a core away from the readers and decoders the waiter is
// waiting for. A waiter here spins briefly, then sleeps on the semaphore.
#ifndef STOKE_SRC_UTIL_QUEUE_H_
#define STOKE_SRC_UTIL_QUEUE_H_

#include <concurrentqueue/blockingconcurrentqueue.h>

namespace stoke::internal {

struct QueueTraits : moodycamel::ConcurrentQueueDefaultTraits {
  static const int MAX_SEMA_SPINS = 64;
};

template <typename T>
using BlockingQueue = moodycamel::BlockingConcurrentQueue<T, QueueTraits>;

}  // namespace stoke::internal

#endif  // STOKE_SRC_UTIL_QUEUE_H_

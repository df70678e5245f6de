// A mutex, its scoped lock and a condition variable that Clang's thread-safety
// analysis understands (-Wthread-safety): fields marked STOKE_GUARDED_BY(mu_)
// may be touched only with mu_ held, and the compiler checks it. With GCC the
// attributes are empty and these are plain std::mutex and
// std::condition_variable. tools/check_threads.sh runs the analysis.
#ifndef STOKE_SRC_UTIL_MUTEX_H_
#define STOKE_SRC_UTIL_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define STOKE_THREAD_ATTRIBUTE(x) __attribute__((x))
#else
#define STOKE_THREAD_ATTRIBUTE(x)
#endif

#define STOKE_CAPABILITY(x) STOKE_THREAD_ATTRIBUTE(capability(x))
#define STOKE_SCOPED_CAPABILITY STOKE_THREAD_ATTRIBUTE(scoped_lockable)
#define STOKE_GUARDED_BY(x) STOKE_THREAD_ATTRIBUTE(guarded_by(x))
#define STOKE_REQUIRES(...) STOKE_THREAD_ATTRIBUTE(requires_capability(__VA_ARGS__))
#define STOKE_EXCLUDES(...) STOKE_THREAD_ATTRIBUTE(locks_excluded(__VA_ARGS__))
#define STOKE_ACQUIRE(...) STOKE_THREAD_ATTRIBUTE(acquire_capability(__VA_ARGS__))
#define STOKE_RELEASE(...) STOKE_THREAD_ATTRIBUTE(release_capability(__VA_ARGS__))
// A function whose accesses follow a protocol the analysis cannot see (an
// object owned by one thread for a while); its comment must say which.
#define STOKE_NO_THREAD_SAFETY_ANALYSIS STOKE_THREAD_ATTRIBUTE(no_thread_safety_analysis)

namespace stoke::internal {

class STOKE_CAPABILITY("mutex") Mutex {
 public:
  void Lock() STOKE_ACQUIRE() { mu_.lock(); }
  void Unlock() STOKE_RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

class STOKE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) STOKE_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() STOKE_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  // Waits for a notification (or a spurious wakeup): callers loop on their
  // condition, which the analysis then checks with `mu` held. `mu` is held on
  // entry and on return.
  void Wait(Mutex* mu) STOKE_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held; the caller's MutexLock unlocks it
  }
  // As Wait, or until `deadline`: false when it passed (the caller rechecks
  // its condition either way).
  bool WaitUntil(Mutex* mu, std::chrono::steady_clock::time_point deadline) STOKE_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool notified = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return notified;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_UTIL_MUTEX_H_

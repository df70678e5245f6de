// Whose thread is this? stoke's dispatcher (which takes the loader's locks and
// submits reads) may run only on threads stoke started (read, decode, window,
// copy and device-completion threads) and on a consumer's thread inside a call
// into stoke (Loader::Open, Seek, destruction, Batch::Release). A thread some
// driver owns, such as a CUDA host-function callback, is neither: a device
// hands finished copies back on a thread of its own (copy/device.h), and the
// loader refuses to dispatch anywhere else (LoaderImpl::PumpLocked).
#ifndef STOKE_SRC_UTIL_THREAD_ROLE_H_
#define STOKE_SRC_UTIL_THREAD_ROLE_H_

namespace stoke::internal {

inline thread_local bool t_stoke_thread = false;
inline thread_local int t_stoke_calls = 0;

// Marks the calling thread as started by stoke, for its life. The first line
// of every thread stoke starts.
inline void MarkStokeThread() { t_stoke_thread = true; }

// While alive, the calling thread is inside a call into stoke.
class InStokeCall {
 public:
  InStokeCall() { ++t_stoke_calls; }
  ~InStokeCall() { --t_stoke_calls; }
  InStokeCall(const InStokeCall&) = delete;
  InStokeCall& operator=(const InStokeCall&) = delete;
};

inline bool OnStokeThread() { return t_stoke_thread || t_stoke_calls > 0; }

}  // namespace stoke::internal

#endif  // STOKE_SRC_UTIL_THREAD_ROLE_H_

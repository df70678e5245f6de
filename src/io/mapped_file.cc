#include "io/mapped_file.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace stoke::internal {
namespace {

// The copy a thread is making from a mapping, while it makes it: a SIGBUS on
// that thread, at an address inside the source, jumps back to the copy.
struct CopyGuard {
  const std::byte* begin = nullptr;
  const std::byte* end = nullptr;
  sigjmp_buf jump;
};
thread_local CopyGuard* t_guard = nullptr;

struct sigaction g_previous;  // the handler before ours, written once

void OnSigbus(int signal, siginfo_t* info, void* context) {
  CopyGuard* guard = t_guard;
  const auto* at = static_cast<const std::byte*>(info->si_addr);
  if (guard != nullptr && at >= guard->begin && at < guard->end) {
    t_guard = nullptr;
    siglongjmp(guard->jump, 1);  // SA_NODEFER: SIGBUS stays unblocked after the jump
  }
  // Not a copy of ours: whoever handled SIGBUS before us does.
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(signal, info, context);
  } else if (g_previous.sa_handler == SIG_DFL || g_previous.sa_handler == SIG_IGN) {
    // Returning re-runs the faulting access, which now takes the default
    // action (a fault cannot be ignored): the process dies as it would have.
    ::signal(SIGBUS, SIG_DFL);
  } else {
    g_previous.sa_handler(signal);
  }
}

void InstallSigbusHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = &OnSigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous);
  });
}

}  // namespace

size_t CopyFromMapping(const MappingCopy* copies, size_t n) {
  CopyGuard guard;
  // Volatile: read after a siglongjmp back into this frame.
  volatile size_t i = 0;
  if (sigsetjmp(guard.jump, 0) != 0) return i;  // t_guard was cleared by the handler
  t_guard = &guard;
  for (size_t at = i; at < n; at = i) {
    const MappingCopy& c = copies[at];
    guard.begin = c.src;
    guard.end = c.src + c.bytes;
    // Compiler barriers: the copy stays between the guard's update and its
    // removal, as the handler (on this thread) sees them.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    std::memcpy(c.dst, c.src, c.bytes);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    i = at + 1;
  }
  t_guard = nullptr;
  return n;
}

double MappedFile::ResidentFraction() const {
  if (size_ == 0) return 1;
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> pages((size_ + page - 1) / page);
  if (::mincore(const_cast<std::byte*>(data_), size_, pages.data()) != 0) return 0;
  size_t resident = 0;
  for (unsigned char p : pages) resident += p & 1;
  return static_cast<double>(resident) / static_cast<double>(pages.size());
}

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Map(RandomAccessFile& file) {
  if (file.native_handle() < 0) {
    return UnavailableError(file.name() + ": cannot be memory-mapped (no POSIX descriptor)");
  }
  STOKE_ASSIGN_OR_RETURN(uint64_t size, file.Size());
  if (size == 0) return std::unique_ptr<MappedFile>(new MappedFile(nullptr, 0));
  InstallSigbusHandler();  // before any copy from a mapping
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, file.native_handle(), 0);
  if (p == MAP_FAILED) return ErrnoToStatus(errno, file.name() + ": mmap");
  return std::unique_ptr<MappedFile>(new MappedFile(static_cast<const std::byte*>(p), size));
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace stoke::internal

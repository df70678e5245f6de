// stoke/status.h: the one error convention of the library.
//
// Every fallible call returns a [[nodiscard]] Status or StatusOr<T>. A Status is
// either OK (cheap: no allocation) or carries a code and a message that names the
// file, the offset and the native cause. The range-for sugar of the loader throws
// stoke::Error, which carries the Status.
//
// Thread safety: Status and StatusOr are values; distinct objects may be used from
// distinct threads freely, one object needs external synchronisation.
//
//   stoke::StatusOr<std::unique_ptr<stoke::Loader>> loader = stoke::Loader::Open(...);
//   if (!loader.ok()) { std::cerr << loader.status() << "\n"; return 1; }
#ifndef STOKE_STATUS_H_
#define STOKE_STATUS_H_

#include <cassert>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace stoke {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,    // a bad option or a malformed request
  kNotFound,           // a missing file or directory
  kDataLoss,           // a corrupt, truncated or wrongly shaped sample or file
  kUnavailable,        // a retryable I/O failure (EIO, io_uring unavailable)
  kResourceExhausted,  // memory: a budget that cannot hold the ring, a failed allocation
  kDeadlineExceeded,
  kCancelled,
  kInternal,  // a failure of stoke itself or of a system call that should not fail
};

// The code's name as written in messages, e.g. "DataLoss".
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  // OK.
  Status() = default;
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // Empty for OK.
  const std::string& message() const;
  // "DataLoss: /data/x.idx: ..." or "OK".
  std::string ToString() const;

  // Returns a copy whose message is `prefix + ": " + message()`; OK stays OK.
  Status WithContext(std::string_view prefix) const;

  // Marks a status as deliberately not inspected.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  // Null iff OK. Shared so that copying an error (which travels between threads
  // with its sample) does not allocate; never mutated after construction.
  std::shared_ptr<const Rep> rep_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status DataLossError(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
inline Status UnavailableError(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status ResourceExhaustedError(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status DeadlineExceededError(std::string m) {
  return Status(StatusCode::kDeadlineExceeded, std::move(m));
}
inline Status CancelledError(std::string m) { return Status(StatusCode::kCancelled, std::move(m)); }
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

// Maps an errno value to a Status: ENOENT -> NotFound, EIO -> Unavailable,
// ENOMEM -> ResourceExhausted, EINVAL -> InvalidArgument, others -> Internal.
// The message is `context + ": " + strerror(err)`.
Status ErrnoToStatus(int err, std::string_view context);

// The exception thrown by the loader's range-for interface (and nowhere else).
class Error : public std::runtime_error {
 public:
  explicit Error(Status status);
  const Status& status() const { return status_; }

 private:
  Status status_;
};

namespace internal {
// Writes "StatusOr::value() of an error: " and the status to stderr, then
// aborts: reading the value of an error is a bug, in release builds too.
[[noreturn]] void DieOfBadStatusOrAccess(const Status& status);
}  // namespace internal

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // An error; `status` must not be OK (that is a bug, asserted).
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok());
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // Preconditions: ok(). Otherwise the process aborts with the status's
  // message (as absl::StatusOr crashes), never reads a missing value.
  T& value() & {
    if (!ok()) internal::DieOfBadStatusOrAccess(status_);
    return *value_;
  }
  const T& value() const& {
    if (!ok()) internal::DieOfBadStatusOrAccess(status_);
    return *value_;
  }
  T&& value() && {
    if (!ok()) internal::DieOfBadStatusOrAccess(status_);
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace stoke

// Returns early from the enclosing function if `expr` (a Status) is not OK.
#define STOKE_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::stoke::Status stoke_status_ = (expr);        \
    if (!stoke_status_.ok()) return stoke_status_; \
  } while (0)

#define STOKE_CONCAT_INNER_(a, b) a##b
#define STOKE_CONCAT_(a, b) STOKE_CONCAT_INNER_(a, b)

// `STOKE_ASSIGN_OR_RETURN(auto x, Foo());` declares x from a StatusOr or returns its error.
#define STOKE_ASSIGN_OR_RETURN(lhs, expr) \
  STOKE_ASSIGN_OR_RETURN_IMPL_(STOKE_CONCAT_(stoke_statusor_, __LINE__), lhs, expr)
#define STOKE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#endif  // STOKE_STATUS_H_

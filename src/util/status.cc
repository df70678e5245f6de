#include "stoke/status.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>

namespace stoke {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kDataLoss:
      return "DataLoss";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string message) {
  assert(code != StatusCode::kOk);
  rep_ = std::make_shared<const Rep>(Rep{code, std::move(message)});
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code()));
  s += ": ";
  s += message();
  return s;
}

Status Status::WithContext(std::string_view prefix) const {
  if (ok()) return *this;
  std::string m(prefix);
  m += ": ";
  m += message();
  return Status(code(), std::move(m));
}

std::ostream& operator<<(std::ostream& os, const Status& status) { return os << status.ToString(); }

Status ErrnoToStatus(int err, std::string_view context) {
  std::string m(context);
  m += ": ";
  m += std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return NotFoundError(std::move(m));
    case EIO:
    case EAGAIN:
    case EINTR:
    case ETIMEDOUT:
      return UnavailableError(std::move(m));
    case ENOMEM:
    case ENOSPC:
    case EMFILE:
    case ENFILE:
      return ResourceExhaustedError(std::move(m));
    case EINVAL:
    case EISDIR:
    case EACCES:
    case EPERM:
      return InvalidArgumentError(std::move(m));
    default:
      return InternalError(std::move(m));
  }
}

Error::Error(Status status) : std::runtime_error(status.ToString()), status_(std::move(status)) {}

namespace internal {

void DieOfBadStatusOrAccess(const Status& status) {
  std::fprintf(stderr, "stoke: StatusOr::value() of an error: %s\n", status.ToString().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal

}  // namespace stoke

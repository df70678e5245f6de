#include "io/page_cache.h"

#include <fcntl.h>
#include <unistd.h>

namespace stoke::internal {

void EvictFromPageCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

}  // namespace stoke::internal

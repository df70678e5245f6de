// Cold-cache measurements: dropping one file's pages from the page cache with
// posix_fadvise(POSIX_FADV_DONTNEED), which needs no privilege. Dirty pages
// stay; a file that cannot be opened is left as it is.
#ifndef STOKE_SRC_IO_PAGE_CACHE_H_
#define STOKE_SRC_IO_PAGE_CACHE_H_

#include <string>

namespace stoke::internal {

void EvictFromPageCache(const std::string& path);

}  // namespace stoke::internal

#endif  // STOKE_SRC_IO_PAGE_CACHE_H_

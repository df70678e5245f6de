// The system calls the shard writer makes, as a table a test can replace to
// inject faults while packing: ENOSPC or EIO on a write, short writes, a failed
// fsync, close or rename. Pack uses the system's.
#ifndef STOKE_SRC_DATASET_SHARD_IO_H_
#define STOKE_SRC_DATASET_SHARD_IO_H_

#include <sys/types.h>

#include <functional>
#include <string>

#include "stoke/shards.h"

namespace stoke::internal {

struct ShardIo {
  std::function<int(const char* path, int flags, mode_t mode)> open;
  std::function<ssize_t(int fd, const void* data, size_t bytes)> write;
  std::function<int(int fd)> fsync;
  std::function<int(int fd)> close;
  std::function<int(const char* from, const char* to)> rename;
};

// open(2), write(2), fsync(2), close(2), rename(2).
const ShardIo& SystemShardIo();

// Pack, making its file system calls through `io`.
StatusOr<PackResult> PackWith(const ShardIo& io, const Dataset& dataset, const std::string& dst_dir,
                              const PackOptions& options);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_SHARD_IO_H_

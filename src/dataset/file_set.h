// The files of a sharded dataset: every file of a folder with a given
// extension, the files a glob pattern names, in name order, or those a
// brace pattern names ("shard-{000000..000009}.tar"), in its order. Shared by
// packed shards and WebDataset tars.
#ifndef STOKE_SRC_DATASET_FILE_SET_H_
#define STOKE_SRC_DATASET_FILE_SET_H_

#include <string>
#include <vector>

#include "stoke/file_system.h"
#include "stoke/status.h"

namespace stoke::internal {

// NotFound naming `path` and what was looked for when nothing matches; the
// listing's error for an unreadable folder.
// Remote locations (s3://, http(s)://): ListRemoteFileSet, which lists an
// S3 prefix only for other files than stoke's shards (those need the
// manifest an interrupted pack lacks).
StatusOr<std::vector<std::string>> ListFileSet(const std::string& path,
                                               const std::string& extension);

// `given` if set; else the remote file system for s3:// and http(s):// paths,
// the default one otherwise.
FileSystem* FileSystemFor(const std::string& path, FileSystem* given);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_FILE_SET_H_

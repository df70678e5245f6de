// The files of a sharded dataset: every file of a folder with a given
// extension, or the files a glob pattern names, in name order. Shared by
// packed shards and WebDataset tars.
#ifndef STOKE_SRC_DATASET_FILE_SET_H_
#define STOKE_SRC_DATASET_FILE_SET_H_

#include <string>
#include <vector>

#include "stoke/status.h"

namespace stoke::internal {

// NotFound naming `path` and what was looked for when nothing matches; the
// listing's error for an unreadable folder.
StatusOr<std::vector<std::string>> ListFileSet(const std::string& path,
                                               const std::string& extension);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_FILE_SET_H_

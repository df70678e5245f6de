// The list file format shared by the tensor and image lists: "path label"
// lines, paths relative to the list's folder unless absolute, '#' comments.
#ifndef STOKE_SRC_DATASET_LIST_FILE_H_
#define STOKE_SRC_DATASET_LIST_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "stoke/file_system.h"
#include "stoke/status.h"

namespace stoke::internal {

// Reads and parses the list; InvalidArgument naming the list file and line for a
// malformed line, or when it holds no samples.
Status ReadListFile(FileSystem* fs, const std::string& list_path, std::vector<std::string>* paths,
                    std::vector<int64_t>* labels);

// InvalidArgument naming `what` when a dataset has more files than
// SampleLocation::file (a uint32_t) can index.
inline Status CheckFileCount(const std::string& what, size_t files) {
  if (files <= UINT32_MAX) return Status::Ok();
  return InvalidArgumentError(what + ": " + std::to_string(files) +
                              " files, more than the 4294967295 a dataset can index");
}

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_LIST_FILE_H_

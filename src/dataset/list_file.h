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

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_LIST_FILE_H_

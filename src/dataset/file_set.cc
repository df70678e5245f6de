#include "dataset/file_set.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>

#include "dataset/shard_format.h"
#include "io/object_store.h"
#include "io/remote_file.h"

namespace stoke::internal {

StatusOr<std::vector<std::string>> ListFileSet(const std::string& path,
                                               const std::string& extension) {
  if (IsRemotePath(path)) {
    return ListRemoteFileSet(path, extension, /*listing_allowed=*/extension != kShardSuffix);
  }
  // WebDataset's brace notation names the files, local or remote.
  if (path.find('{') != std::string::npos) return ExpandBraces(path);
  std::vector<std::string> paths;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      if (entry.path().extension() == extension) paths.push_back(entry.path().string());
    }
    if (ec) return ErrnoToStatus(ec.value(), path + ": list");
  } else {
    glob_t g{};
    if (::glob(path.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) paths.push_back(g.gl_pathv[i]);
    }
    globfree(&g);
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) return NotFoundError(path + ": no *" + extension + " files");
  return paths;
}

FileSystem* FileSystemFor(const std::string& path, FileSystem* given) {
  if (given != nullptr) return given;
  return IsRemotePath(path) ? RemoteFileSystem() : DefaultFileSystem();
}

}  // namespace stoke::internal

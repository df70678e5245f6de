// `stoke pack SRC DST`: converts a dataset into stoke shards (stoke/shards.h).
#ifndef STOKE_TOOLS_STOKE_PACK_H_
#define STOKE_TOOLS_STOKE_PACK_H_

#include <cstdio>
#include <string>
#include <vector>

namespace stoke::cli {

// Returns the process exit status: 0 success, 1 data or I/O error, 2 usage error.
int PackCommand(const std::vector<std::string>& args);
void PrintPackUsage(FILE* out);

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_PACK_H_

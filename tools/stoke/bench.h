// `stoke bench`: where should a dataset live, and in what layout? Cold-cache
// passes over one or more locations and storage models, small files against
// packed shards, raw reads and the full pipeline.
#ifndef STOKE_TOOLS_STOKE_BENCH_H_
#define STOKE_TOOLS_STOKE_BENCH_H_

#include <cstdio>
#include <string>
#include <vector>

namespace stoke::cli {

// Returns the process exit status: 0 success (the need met, or none given),
// 1 data or I/O error or a need not met anywhere, 2 usage error.
int BenchCommand(const std::vector<std::string>& args);
void PrintBenchUsage(FILE* out);

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_BENCH_H_

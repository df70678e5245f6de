// `stoke profile PATH`: runs a loader over a dataset, shows live progress, and
// prints (and with --json writes) what each stage did.
#ifndef STOKE_TOOLS_STOKE_PROFILE_H_
#define STOKE_TOOLS_STOKE_PROFILE_H_

#include <cstdio>
#include <string>
#include <vector>

namespace stoke::cli {

// Returns the process exit status: 0 success, 1 data or I/O error, 2 usage error.
int ProfileCommand(const std::vector<std::string>& args);
void PrintProfileUsage(FILE* out);

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_PROFILE_H_

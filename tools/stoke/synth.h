// stoke synth: writes a synthetic ImageFolder of JPEGs.
#ifndef STOKE_TOOLS_STOKE_SYNTH_H_
#define STOKE_TOOLS_STOKE_SYNTH_H_

#include <cstdio>
#include <string>
#include <vector>

namespace stoke::cli {

// Returns the process exit status: 0 success, 1 I/O error, 2 usage error.
int SynthCommand(const std::vector<std::string>& args);
void PrintSynthUsage(FILE* out);

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_SYNTH_H_

// stoke synth: writes a synthetic ImageFolder of JPEGs.
#ifndef STOKE_TOOLS_STOKE_SYNTH_H_
#define STOKE_TOOLS_STOKE_SYNTH_H_

#include <string>
#include <vector>

namespace stoke::cli {

extern const char kSynthUsage[];
int SynthCommand(const std::vector<std::string>& args);

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_SYNTH_H_

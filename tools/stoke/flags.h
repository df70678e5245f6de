// Command-line flags of the stoke tool: "--name value", "--name=value" and
// boolean "--name". Errors name the flag; the caller exits with status 2.
#ifndef STOKE_TOOLS_STOKE_FLAGS_H_
#define STOKE_TOOLS_STOKE_FLAGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "stoke/status.h"

namespace stoke::cli {

class Flags {
 public:
  // `valued` flags take a value, `switches` don't. Anything else starting with
  // "--" is an unknown flag; other arguments are positional.
  static StatusOr<Flags> Parse(const std::vector<std::string>& args,
                               const std::set<std::string>& valued,
                               const std::set<std::string>& switches);

  const std::vector<std::string>& positional() const { return positional_; }
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string String(const std::string& name, const std::string& fallback) const;
  // InvalidArgument naming the flag unless the value is an integer in [lo, hi].
  StatusOr<int64_t> Int(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) const;
  // Accepts plain bytes or a K/M/G/KiB/MiB/GiB suffix.
  StatusOr<uint64_t> Bytes(const std::string& name, uint64_t fallback) const;
  // InvalidArgument naming the flag unless the value is one of `choices`.
  StatusOr<std::string> Choice(const std::string& name, const std::string& fallback,
                               const std::vector<std::string>& choices) const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_FLAGS_H_

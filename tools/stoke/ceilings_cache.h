// The profiler's ceilings, cached per machine and dataset so that a second run
// does not measure them again: one line per (host, dataset as described,
// storage model) in $XDG_CACHE_HOME/stoke/ceilings.tsv (else ~/.cache/...).
// `stoke profile --remeasure` measures anew and replaces the line.
#ifndef STOKE_TOOLS_STOKE_CEILINGS_CACHE_H_
#define STOKE_TOOLS_STOKE_CEILINGS_CACHE_H_

#include <optional>
#include <string>
#include <string_view>

#include "profile/verdict.h"

namespace stoke::cli {

// The cache key for a dataset description and storage model on this host.
std::string CeilingsKey(const std::string& dataset, const std::string& storage_model);
// The cached ceilings under `key`, if any (an unreadable cache is a miss).
std::optional<internal::Ceilings> LoadCeilings(const std::string& key);
// One line of the cache: the ceilings if it is `key`'s and holds every figure.
std::optional<internal::Ceilings> ParseCeilingsLine(std::string_view line, std::string_view key);
// Stores them under `key`, replacing an older line; failures are ignored (the
// cache is an optimisation) but reported on stderr.
void StoreCeilings(const std::string& key, const internal::Ceilings& c);
// Where the cache lives.
std::string CeilingsCachePath();

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_CEILINGS_CACHE_H_

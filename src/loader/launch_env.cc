// RankFromEnvironment (stoke/launch.h): the rank a launcher gave this process.
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include "stoke/launch.h"

namespace stoke {
namespace {

// Environment variable `name` as an int: nullopt when unset or empty;
// InvalidArgument naming it when it is not a whole number.
StatusOr<std::optional<int>> EnvInt(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::optional<int>();
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (*end != '\0' || errno != 0 || v < -1000000000L || v > 1000000000L) {
    return InvalidArgumentError(std::string("environment: ") + name + "='" + text +
                                "' is not a whole number");
  }
  return std::optional<int>(static_cast<int>(v));
}

}  // namespace

Status RankFromEnvironment(LoaderOptions* options) {
  // Launchers in order of precedence: torchrun, Open MPI, MPICH/PMI, Slurm.
  static constexpr const char* kLaunchers[][2] = {{"RANK", "WORLD_SIZE"},
                                                  {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                                  {"PMI_RANK", "PMI_SIZE"},
                                                  {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& [rank_name, size_name] : kLaunchers) {
    StatusOr<std::optional<int>> rank = EnvInt(rank_name);
    if (!rank.ok()) return rank.status();
    StatusOr<std::optional<int>> size = EnvInt(size_name);
    if (!size.ok()) return size.status();
    if (!*rank && !*size) continue;
    if (!*rank || !*size) {
      return InvalidArgumentError(std::string("environment: ") + (*rank ? rank_name : size_name) +
                                  " is set but " + (*rank ? size_name : rank_name) + " is not");
    }
    if (**size < 1 || **rank < 0 || **rank >= **size) {
      return InvalidArgumentError(std::string("environment: ") + rank_name + "=" +
                                  std::to_string(**rank) + " is not a rank of " + size_name + "=" +
                                  std::to_string(**size));
    }
    options->rank = **rank;
    options->world_size = **size;
    return Status();
  }
  return Status();
}

}  // namespace stoke

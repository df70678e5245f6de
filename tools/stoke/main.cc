// The stoke command: one binary, one subcommand per use.
#include <cstdio>
#include <string>
#include <vector>

#include "bench.h"
#include "pack.h"
#include "profile.h"
#include "synth.h"
#include "train.h"

namespace {

constexpr char kUsage[] =
    "usage: stoke COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  profile PATH   run a loader over a dataset and report each stage\n"
    "  synth DIR      write a synthetic ImageFolder of JPEGs\n"
    "  train PATH     train a model (MLP or small CNN) on a dataset through a loader\n"
    "  pack SRC DST   convert a dataset into packed shards\n"
    "  bench PATH     cold-cache passes on several locations and storage models, files vs shards\n"
    "  help [COMMAND] show this text, or a command's options\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "profile") return stoke::cli::ProfileCommand(args);
  if (command == "synth") return stoke::cli::SynthCommand(args);
  if (command == "train") return stoke::cli::TrainCommand(args);
  if (command == "pack") return stoke::cli::PackCommand(args);
  if (command == "bench") return stoke::cli::BenchCommand(args);
  if (command == "help" || command == "--help" || command == "-h") {
    if (!args.empty() && args[0] == "profile") {
      stoke::cli::PrintProfileUsage(stdout);
    } else if (!args.empty() && args[0] == "bench") {
      stoke::cli::PrintBenchUsage(stdout);
    } else if (!args.empty() && args[0] == "pack") {
      stoke::cli::PrintPackUsage(stdout);
    } else if (!args.empty() && args[0] == "train") {
      stoke::cli::PrintTrainUsage(stdout);
    } else if (!args.empty() && args[0] == "synth") {
      std::fputs(stoke::cli::kSynthUsage, stdout);
    } else {
      std::fputs(kUsage, stdout);
    }
    return 0;
  }
  std::fprintf(stderr, "stoke: unknown command '%s'\n%s", command.c_str(), kUsage);
  return 2;
}

// The stoke command: one binary, one subcommand per use, dispatched through
// the command table. Each command parses its arguments into a request, runs
// it into a plain result and reports that (command.h).
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "bench.h"
#include "command.h"
#include "pack.h"
#include "profile.h"
#include "synth.h"
#include "train.h"

namespace {

using stoke::cli::Command;

constexpr std::array<Command, 5> kCommands = {{
    {"profile", "PATH", "run a loader over a dataset and report each stage",
     stoke::cli::ProfileCommand, stoke::cli::PrintProfileUsage},
    {"synth", "DIR", "write a synthetic ImageFolder of JPEGs", stoke::cli::SynthCommand,
     stoke::cli::PrintSynthUsage},
    {"train", "PATH", "train a model (MLP or small CNN) on a dataset through a loader",
     stoke::cli::TrainCommand, stoke::cli::PrintTrainUsage},
    {"pack", "SRC DST", "convert a dataset into packed shards", stoke::cli::PackCommand,
     stoke::cli::PrintPackUsage},
    {"bench", "PATH", "cold-cache passes on several locations and storage models, files vs shards",
     stoke::cli::BenchCommand, stoke::cli::PrintBenchUsage},
}};

void PrintUsage(FILE* out) {
  std::fputs("usage: stoke COMMAND [options]\n\ncommands:\n", out);
  for (const Command& c : kCommands) {
    const std::string head = std::string(c.name) + " " + c.synopsis;
    std::fprintf(out, "  %-14s %s\n", head.c_str(), c.summary);
  }
  std::fprintf(out, "  %-14s %s\n", "help [COMMAND]", "show this text, or a command's options");
}

const Command* Find(const std::string& name) {
  for (const Command& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    PrintUsage(stderr);
    return 2;
  }
  const std::string name = args[0];
  args.erase(args.begin());
  if (const Command* command = Find(name)) return command->run(args);
  if (name == "help" || name == "--help" || name == "-h") {
    const Command* command = args.empty() ? nullptr : Find(args[0]);
    if (command) {
      command->usage(stdout);
    } else {
      PrintUsage(stdout);
    }
    return 0;
  }
  std::fprintf(stderr, "stoke: unknown command '%s'\n", name.c_str());
  PrintUsage(stderr);
  return 2;
}

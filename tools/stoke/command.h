// What the stoke commands share: the exit statuses, a failure that carries its
// exit status, and the shape every command has: parse its arguments into a
// request, run it into a plain result, and report the result (text, JSON,
// HTML) from that result alone.
#ifndef STOKE_TOOLS_STOKE_COMMAND_H_
#define STOKE_TOOLS_STOKE_COMMAND_H_

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "stoke/status.h"

namespace stoke::cli {

constexpr int kExitData = 1;   // a data or I/O error
constexpr int kExitUsage = 2;  // bad arguments

// A command's failure: what to print and the exit status it gives.
struct Failure {
  int exit_code = kExitData;
  Status status;

  static Failure Usage(Status status) { return {kExitUsage, std::move(status)}; }
  static Failure Data(Status status) { return {kExitData, std::move(status)}; }
};

// Prints "stoke COMMAND: error" on stderr; returns the failure's exit status.
inline int Fail(const char* command, const Failure& failure) {
  std::fprintf(stderr, "stoke %s: %s\n", command, failure.status.ToString().c_str());
  return failure.exit_code;
}

// An entry of main.cc's command table.
struct Command {
  const char* name;
  const char* synopsis;  // its arguments, for the command list
  const char* summary;
  int (*run)(const std::vector<std::string>& args);  // returns the exit status
  void (*usage)(FILE* out);
};

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_COMMAND_H_

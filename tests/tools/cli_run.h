// Running the stoke command from a test: its exit code and output, and the
// JSON it writes. Shared by cli_test.cc and advice_test.cc.
#ifndef STOKE_TESTS_TOOLS_CLI_RUN_H_
#define STOKE_TESTS_TOOLS_CLI_RUN_H_

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "testing/test_data.h"

namespace stoke {

struct CliRun {
  int exit_code;
  std::string output;  // stdout and stderr
};

// Runs `command` through the shell, stderr with stdout.
inline CliRun RunShell(const std::string& shell_command) {
  const std::string command = shell_command + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  CliRun run{-1, ""};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) run.output.append(buf, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

#ifdef STOKE_CLI
inline CliRun Stoke(const std::string& args) {
  return RunShell(std::string(STOKE_CLI) + " " + args);
}
#endif

inline double JsonNumber(const std::string& text, const std::string& key, size_t from = 0) {
  const size_t at = text.find("\"" + key + "\":", from);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + key.size() + 3, nullptr);
}

inline std::string ReadText(const std::string& path) {
  const std::vector<uint8_t> bytes = testing::ReadFileBytes(path);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace stoke

#endif  // STOKE_TESTS_TOOLS_CLI_RUN_H_

// Running the stoke command from a test: its exit code and output, and the
// JSON it writes. Shared by cli_test.cc and advice_test.cc.
#ifndef STOKE_TESTS_TOOLS_CLI_RUN_H_
#define STOKE_TESTS_TOOLS_CLI_RUN_H_

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

inline std::string ReadText(const std::string& path) {
  const std::vector<uint8_t> bytes = testing::ReadFileBytes(path);
  return std::string(bytes.begin(), bytes.end());
}

// The JSON document in the file at `path`, parsed (a discarded value, which
// is_discarded() tells, when it is not JSON).
inline nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(ReadText(path), nullptr, /*allow_exceptions=*/false);
}

// Every object, at any depth of `j`, that has the member `key`, in document order.
inline void ObjectsWith(const nlohmann::json& j, const std::string& key,
                        std::vector<const nlohmann::json*>* out) {
  if (j.is_object() && j.contains(key)) out->push_back(&j);
  if (j.is_structured()) {
    for (const nlohmann::json& child : j) ObjectsWith(child, key, out);
  }
}
inline std::vector<const nlohmann::json*> ObjectsWith(const nlohmann::json& j,
                                                      const std::string& key) {
  std::vector<const nlohmann::json*> out;
  ObjectsWith(j, key, &out);
  return out;
}

}  // namespace stoke

#endif  // STOKE_TESTS_TOOLS_CLI_RUN_H_

// Runs a program built beside the tests (the distgraph CLI) to its end: exit status and output.
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/child_process.hpp"

namespace distgraph::test {

/// How a program run ended.
struct ProgramRun {
  int exit_code = -1;  ///< -1: killed by a signal or still running at the deadline
  std::string output;  ///< stdout and stderr, interleaved
};

/// Runs `argv` (argv[0] the program) to its end, at most `limit`.
inline ProgramRun run_program(const std::vector<std::string>& argv,
                              std::chrono::milliseconds limit) {
  ChildProcess p(argv);
  const auto st = p.wait(limit);
  ProgramRun r;
  if (st && WIFEXITED(*st)) r.exit_code = WEXITSTATUS(*st);
  r.output = p.output();
  return r;
}

}  // namespace distgraph::test

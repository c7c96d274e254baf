// Runs one subcommand with the program's error conventions: one-line errors, exit status 2
// for usage mistakes and 1 for everything else.
#pragma once

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "distgraph/core/error.hpp"

namespace distgraph::cli {

inline int run_command(const char* name, Command run, std::vector<std::string> args) {
  try {
    return run(std::move(args));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "distgraph %s\n", e.what());
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "distgraph %s: %s\n", name, e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "distgraph %s: unexpected error: %s\n", name, e.what());
    return 1;
  }
}

/// This program's own path (/proc/self/exe), or `fallback` when it cannot be read.
inline std::string self_program(const char* fallback = "distgraph") {
  char buf[PATH_MAX];
  const auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return fallback;
  return std::string(buf, static_cast<std::size_t>(n));
}

/// The program `name` in the folder of this one (distgraph and distgraph-train are
/// installed side by side).
inline std::string sibling_program(const std::string& name) {
  const auto self = self_program();
  const auto slash = self.rfind('/');
  return slash == std::string::npos ? name : self.substr(0, slash + 1) + name;
}

}  // namespace distgraph::cli

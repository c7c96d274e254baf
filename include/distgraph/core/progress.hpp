// Stage progress for command-line tools: a live line on a terminal, plain lines otherwise.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "distgraph/core/timer.hpp"

namespace distgraph {

/// Reports named stages to a FILE* (stderr by default). On a terminal each stage
/// shows "... " while running and its time when done; otherwise one line per
/// finished stage. `quiet` prints nothing. Not thread-safe.
class Progress {
 public:
  struct Stage {
    std::string name;
    double seconds = 0;
  };

  explicit Progress(bool quiet = false, std::FILE* out = stderr)
      : out_(out), quiet_(quiet), tty_(out != nullptr && isatty(fileno(out)) != 0) {}

  /// Starts stage `name`, finishing the current one if any.
  void begin(std::string_view name) {
    end();
    current_ = std::string(name);
    clock_.reset();
    if (!quiet_ && tty_) {
      std::fprintf(out_, "  %-28s ...", current_.c_str());
      std::fflush(out_);
    }
  }
  /// Finishes the current stage and records its time.
  void end() {
    if (current_.empty()) return;
    const double s = clock_.seconds();
    stages_.push_back({current_, s});
    if (!quiet_) {
      if (tty_) std::fprintf(out_, "\r");
      std::fprintf(out_, "  %-28s %8.3f s\n", current_.c_str(), s);
      std::fflush(out_);
    }
    current_.clear();
  }
  const std::vector<Stage>& stages() const noexcept { return stages_; }

 private:
  std::FILE* out_;
  bool quiet_, tty_;
  std::string current_;
  Stopwatch clock_;
  std::vector<Stage> stages_;
};

}  // namespace distgraph

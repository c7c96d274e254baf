// Test helper: a child process with its output readable line by line under a deadline.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

// The free ports and the loopback ip_config that the started servers listen on, for the
// programs that take them from here (bench_sampling).
#include "free_port.hpp"

extern char** environ;

namespace distgraph::test {

/// A process started with posix_spawn; stdout and stderr go to one pipe read by
/// read_line(). The destructor SIGKILLs and reaps it if still running, so a failing
/// test never leaves a process behind.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv,
               const std::vector<std::string>& extra_env = {}) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> env_store;
    for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
    for (const auto& e : extra_env) env_store.push_back(e);
    std::vector<char*> env;
    for (auto& e : env_store) env.push_back(e.data());
    env.push_back(nullptr);
    const int rc = posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), env.data());
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    out_ = fds[0];
    if (rc != 0) {
      ::close(out_);
      throw std::runtime_error("posix_spawn " + argv[0] + " failed: " + std::to_string(rc));
    }
  }
  ~ChildProcess() {
    if (!exited_) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
    ::close(out_);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }

  /// The next output line, or nullopt at end of output or when `timeout` passes.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        output_ += line + "\n";
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      // Poll even when no time is left: output already in the pipe (a process that just
      // exited) must still be read.
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::max<long long>(left.count(), 0))) <= 0) {
        if (left.count() <= 0) return std::nullopt;
        continue;
      }
      char chunk[4096];
      const auto n = ::read(out_, chunk, sizeof chunk);
      if (n <= 0) {
        if (buf_.empty()) return std::nullopt;
        buf_ += '\n';
        continue;
      }
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  /// Reads lines until one contains `needle` (true) or output ends / time runs out.
  bool wait_for_line(const std::string& needle, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (auto line = read_line(std::chrono::duration_cast<std::chrono::milliseconds>(
               deadline - std::chrono::steady_clock::now())))
      if (line->find(needle) != std::string::npos) return true;
    return false;
  }
  /// Everything read so far (for failure messages).
  const std::string& output() const noexcept { return output_; }

  /// Waits up to `timeout` for the exit; returns the wait status (again on later calls), or
  /// nullopt if still running. Drains output meanwhile so the child never blocks on a full
  /// pipe.
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    if (exited_) return status_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int st = 0;
      const pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        status_ = st;
        while (read_line(std::chrono::milliseconds(0))) {
        }
        return st;
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      // Block on output (or 20 ms) rather than spinning: the exit closes the pipe.
      if (!read_line(std::chrono::milliseconds(20))) {
        pollfd p{out_, POLLIN, 0};
        ::poll(&p, 1, 20);
      }
    }
  }
  /// Sends `sig` unless the process was already reaped (its pid may be another's by now).
  void signal(int sig) {
    if (!exited_) ::kill(pid_, sig);
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  bool exited_ = false;
  int status_ = 0;  ///< the wait status, once exited_
  std::string buf_, output_;
};

}  // namespace distgraph::test

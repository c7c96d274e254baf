// The testbed (scripts/testbed.sh: separate hosts in network namespaces, each with its own
// sshd, /dev/shm and workspace) as a benchmark drives it: hosts up, links shaped, commands
// run on a host with their output read line by line.
#pragma once

#include <sys/wait.h>

#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

#ifndef DISTGRAPH_SOURCE_DIR
#define DISTGRAPH_SOURCE_DIR "."
#endif

namespace distgraph::bench {

/// Hosts host1..hostN (198.51.100.1..N) under a folder and namespace prefix of the
/// benchmarks' own (a testbed made by hand is left alone, but not its addresses: one
/// testbed at a time). Brought down on destruction.
class Testbed {
 public:
  /// "" when this computer can run a testbed, else the script's one line saying why not.
  static std::string unavailable() {
    std::string why;
    const int st = run_lines(shell({"check"}), [&](const std::string& l) { why += l; });
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? std::string() : why;
  }

  /// `up hosts` (unshaped); throws std::runtime_error with the script's output on failure.
  explicit Testbed(int hosts) : hosts_(hosts) { checked({"up", std::to_string(hosts)}); }
  ~Testbed() { run_lines(shell({"down"}), [](const std::string&) {}); }
  Testbed(const Testbed&) = delete;
  Testbed& operator=(const Testbed&) = delete;

  int hosts() const noexcept { return hosts_; }
  static std::string address(int i) { return "198.51.100." + std::to_string(i); }
  static std::string ssh() { return std::string(dir) + "/ssh"; }
  static std::string rsync() { return std::string(dir) + "/rsync"; }
  /// The same path on every host, a tmpfs of its own on each.
  static std::string workspace() { return std::string(dir) + "/workspace"; }

  /// Every link at `rate` (tc's spelling: 1gbit, 2500mbit), or "unshaped".
  void shape(const std::string& rate) const {
    checked({"shape", rate == "unshaped" ? "none" : rate});
  }
  void cut(int i) const { checked({"cut", std::to_string(i)}); }
  void heal(int i) const { checked({"heal", std::to_string(i)}); }
  /// Waits (at most `seconds`) until host i runs nothing but its sshd; false if it still does.
  bool idle(int i, int seconds) const {
    const int st = run_lines(shell({"idle", std::to_string(i), std::to_string(seconds)}),
                             [](const std::string&) {});
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }

  /// Runs `argv` on host i to its end, its stdout and stderr together line by line to
  /// `on_line`; returns the exit status (-1 when it did not exit). `tail` keeps the last
  /// lines for an error message.
  int run_on(int i, const std::vector<std::string>& argv,
             const std::function<void(const std::string&)>& on_line,
             std::deque<std::string>* tail = nullptr) const {
    std::vector<std::string> a = shell({"exec", std::to_string(i), "/bin/sh", "-c",
                                        "exec \"$@\" 2>&1", "sh"});
    a.insert(a.end(), argv.begin(), argv.end());
    const int st = run_lines(a, [&](const std::string& l) {
      if (tail != nullptr) {
        tail->push_back(l);
        if (tail->size() > 30) tail->pop_front();
      }
      on_line(l);
    });
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  /// run_on that throws std::runtime_error naming the command and its last lines unless it
  /// exits 0.
  void run_checked(int i, const std::vector<std::string>& argv) const {
    std::deque<std::string> tail;
    if (run_on(i, argv, [](const std::string&) {}, &tail) != 0)
      throw std::runtime_error(failure("host " + std::to_string(i) + ": " + join(argv), tail));
  }

  /// "`what` failed: " and the last lines of its output.
  static std::string failure(const std::string& what, const std::deque<std::string>& tail) {
    std::string s = "`" + what + "` failed; its last lines:";
    for (const auto& l : tail) s += "\n  " + l;
    return s;
  }
  static std::string join(const std::vector<std::string>& argv) {
    std::string s;
    for (const auto& w : argv) s += (s.empty() ? "" : " ") + w;
    return s;
  }

 private:
  static constexpr const char* dir = "/tmp/distgraph-bench-testbed";
  static std::vector<std::string> shell(const std::vector<std::string>& args) {
    std::vector<std::string> a{"/usr/bin/env",
                               std::string("TESTBED_DIR=") + dir,
                               "TESTBED_PREFIX=dgbench",
                               "/bin/sh",
                               "-c",
                               "exec /bin/bash \"$0\" \"$@\" 2>&1",
                               DISTGRAPH_SOURCE_DIR "/scripts/testbed.sh"};
    a.insert(a.end(), args.begin(), args.end());
    return a;
  }
  void checked(const std::vector<std::string>& args) const {
    std::deque<std::string> tail;
    const int st = run_lines(shell(args), [&](const std::string& l) {
      tail.push_back(l);
      if (tail.size() > 30) tail.pop_front();
    });
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      throw std::runtime_error(failure("testbed.sh " + join(args), tail));
  }

  int hosts_;
};

}  // namespace distgraph::bench

// A testbed (scripts/testbed.sh) for one test: separate hosts in network namespaces, each
// with its own sshd, /dev/shm and workspace; brought down when the test ends, passed or not.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/program_run.hpp"
#include "support/temp_dir.hpp"

namespace distgraph::test {

/// Hosts host1..hostN (198.51.100.1..N) made by scripts/testbed.sh under a folder and a
/// namespace prefix of their own (so a testbed someone made by hand is left alone). The
/// destructor runs `down`: every process in the hosts' namespaces is killed and their
/// private /dev/shm and workspaces go with them.
class Testbed {
 public:
  /// "" when this computer can run a testbed, else why not (one line, from the script).
  static std::string unavailable() {
    const ProgramRun r = run_program({"/bin/bash", script(), "check"}, std::chrono::seconds(30));
    if (r.exit_code == 0) return {};
    return r.output.empty() ? "scripts/testbed.sh check failed" : r.output;
  }

  /// Runs `up hosts up_args...`; `started()` says whether it worked, `output()` why not.
  explicit Testbed(int hosts, std::vector<std::string> up_args = {}) : hosts_(hosts) {
    std::vector<std::string> argv{"up", std::to_string(hosts)};
    argv.insert(argv.end(), up_args.begin(), up_args.end());
    const ProgramRun r = command(argv, std::chrono::seconds(60));
    started_ = r.exit_code == 0;
    output_ = r.output;
  }
  ~Testbed() { command({"down"}, std::chrono::seconds(60)); }
  Testbed(const Testbed&) = delete;
  Testbed& operator=(const Testbed&) = delete;

  bool started() const noexcept { return started_; }
  const std::string& output() const noexcept { return output_; }
  int hosts() const noexcept { return hosts_; }

  /// Host i's address (1-based).
  static std::string address(int i) { return "198.51.100." + std::to_string(i); }
  /// The ssh and rsync wrappers that use the testbed's keys and ssh config.
  std::string ssh() const { return (dir_.path() / "ssh").string(); }
  std::string rsync() const { return (dir_.path() / "rsync").string(); }
  /// The workspace folder: the same path on every host, a tmpfs of its own on each.
  std::string workspace() const { return (dir_.path() / "workspace").string(); }

  /// Runs `argv` on host i to its end (at most `limit`).
  ProgramRun exec(int i, const std::vector<std::string>& argv,
                  std::chrono::milliseconds limit) const {
    std::vector<std::string> a{"exec", std::to_string(i)};
    a.insert(a.end(), argv.begin(), argv.end());
    return command(a, limit);
  }
  /// Starts `argv` on host i and returns at once (for a job a test disturbs).
  std::vector<std::string> exec_argv(int i, const std::vector<std::string>& argv) const {
    std::vector<std::string> a = prefix();
    a.insert(a.end(), {"exec", std::to_string(i)});
    a.insert(a.end(), argv.begin(), argv.end());
    return a;
  }
  /// Unplugs / replugs host i's cable at the switch.
  bool cut(int i) const {
    return command({"cut", std::to_string(i)}, std::chrono::seconds(10)).exit_code == 0;
  }
  bool heal(int i) const {
    return command({"heal", std::to_string(i)}, std::chrono::seconds(10)).exit_code == 0;
  }

  /// The pid of host i's sshd (its namespaces' anchor), or -1.
  int sshd_pid(int i) const {
    std::ifstream in(dir_.path() / ("host" + std::to_string(i)) / "sshd.pid");
    int pid = -1;
    in >> pid;
    return pid;
  }

  /// Processes in host i's network namespace other than its sshd and the sessions sshd
  /// runs: what a job left there.
  std::vector<int> leftovers(int i) const {
    std::vector<int> out;
    const auto ns = net_namespace(sshd_pid(i));
    if (ns.empty()) return out;
    DIR* d = ::opendir("/proc");
    if (d == nullptr) return out;
    while (dirent* e = ::readdir(d)) {
      const int pid = std::atoi(e->d_name);
      if (pid <= 0 || net_namespace(pid) != ns) continue;
      std::ifstream comm(std::string("/proc/") + e->d_name + "/comm");
      std::string name;
      std::getline(comm, name);
      if (name != "sshd") out.push_back(pid);
    }
    ::closedir(d);
    return out;
  }

  /// Waits (bounded, polling /proc) until host i has no leftovers; true when it has none.
  bool none_left_on(int i, std::chrono::milliseconds within) const {
    const auto until = std::chrono::steady_clock::now() + within;
    while (!leftovers(i).empty()) {
      if (std::chrono::steady_clock::now() > until) return false;
      ::usleep(50'000);
    }
    return true;
  }

  /// The entries of host i's /dev/shm ("" entries never appear; a failure to look gives
  /// one entry naming it).
  std::set<std::string> shm(int i) const {
    const ProgramRun r = exec(i, {"/bin/ls", "-A", "/dev/shm"}, std::chrono::seconds(10));
    std::set<std::string> out;
    if (r.exit_code != 0) return {"(ls failed: " + r.output + ")"};
    std::string line;
    for (char c : r.output + "\n")
      if (c == '\n') {
        if (!line.empty()) out.insert(line);
        line.clear();
      } else {
        line += c;
      }
    return out;
  }

  static std::string script() { return DISTGRAPH_SOURCE_DIR "/scripts/testbed.sh"; }

 private:
  std::vector<std::string> prefix() const {
    return {"/usr/bin/env", "TESTBED_DIR=" + dir_.path().string(),
            std::string("TESTBED_PREFIX=") + ns_prefix, "/bin/bash", script()};
  }
  ProgramRun command(const std::vector<std::string>& args, std::chrono::milliseconds limit) const {
    std::vector<std::string> a = prefix();
    a.insert(a.end(), args.begin(), args.end());
    return run_program(a, limit);
  }
  static std::string net_namespace(int pid) {
    if (pid <= 0) return {};
    char buf[64] = {};
    const auto n =
        ::readlink(("/proc/" + std::to_string(pid) + "/ns/net").c_str(), buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }

  static constexpr const char* ns_prefix = "dgtest";
  TempDir dir_;
  int hosts_;
  bool started_ = false;
  std::string output_;
};

}  // namespace distgraph::test

/// Skips the current test unless a testbed can run here, and then starts one as `tb`.
#define DISTGRAPH_REQUIRE_TESTBED(tb, ...)                                               \
  if (const std::string why = ::distgraph::test::Testbed::unavailable(); !why.empty()) { \
    WARN("SKIPPED: no testbed on this computer: " << why);                               \
    return;                                                                              \
  }                                                                                      \
  ::distgraph::test::Testbed tb(__VA_ARGS__);                                            \
  INFO(tb.output());                                                                     \
  REQUIRE(tb.started())

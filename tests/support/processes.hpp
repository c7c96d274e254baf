// Finding a test's processes by a marker (a unique temporary path) in their command
// line or environment: how tests prove that nothing was left running.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace distgraph::test {

/// Pids of our processes whose command line or environment mentions `marker`.
inline std::vector<int> processes_mentioning(const std::string& marker) {
  std::vector<int> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == ::getpid()) continue;
    for (const char* f : {"cmdline", "environ"}) {
      std::ifstream in(std::string("/proc/") + e->d_name + "/" + f, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      if (ss.str().find(marker) != std::string::npos) {
        out.push_back(pid);
        break;
      }
    }
  }
  ::closedir(d);
  return out;
}

/// Waits (bounded, polling /proc) until no process mentions `marker`.
inline bool none_left(const std::string& marker, std::chrono::seconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!processes_mentioning(marker).empty()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    // Processes reparented to init are reaped asynchronously; re-check shortly.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

/// SIGKILLs, when destroyed, every process that still mentions `marker`. Declared before a
/// test's ChildProcesses, it runs after their destructors: mpirun and torchrun start their
/// workers in process groups of their own, so killing the scheduler alone (a failed
/// REQUIRE) would leave its workers running.
class KillLeftovers {
 public:
  explicit KillLeftovers(std::string marker) : marker_(std::move(marker)) {}
  ~KillLeftovers() {
    for (const int pid : processes_mentioning(marker_)) ::kill(pid, SIGKILL);
  }
  KillLeftovers(const KillLeftovers&) = delete;
  KillLeftovers& operator=(const KillLeftovers&) = delete;

 private:
  std::string marker_;
};

}  // namespace distgraph::test

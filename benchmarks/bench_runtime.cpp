// bench_runtime: job start-up time, `distgraph launch` to every trainer past initialize().
//
//   bench_runtime [--machines M] [--servers S] [--trainers T] [--runs R] [--json]
//
// startup_time  seconds from starting `distgraph launch` (M machines x (S servers + T
//               trainers) on 127.0.0.1, a 20,000-node partitioned graph) until the last
//               trainer returned from initialize() (connected to every server, attached
//               the machine's shared storage, passed the start barrier). Bound: the
//               process-spawn floor, fork/exec + wait of M x (S + T) `/bin/true`.
//               ratio = bound / value.
// This program is also its own trainer: with DISTGRAPH_ROLE=trainer it initialises,
// prints "ready", and exits.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/runtime/initialize.hpp"
#include "distgraph/runtime/launcher.hpp"
#include "support/flags.hpp"
#include "support/report.hpp"
#include "support/subprocess.hpp"
// The tests' loopback ip config, on ports found as the tests find them.
#include "../tests/support/free_port.hpp"

#ifndef DISTGRAPH_CLI
#define DISTGRAPH_CLI "distgraph"
#endif

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// Runs argv to completion with stdout captured; returns (seconds until `lines` lines
/// containing `needle` were seen, exit status).
std::pair<double, int> run_and_time(const std::vector<std::string>& argv, const std::string& needle,
                                    int lines) {
  const auto start = std::chrono::steady_clock::now();
  int seen = 0;
  double at = -1;
  const int status = distgraph::bench::run_lines(argv, [&](const std::string& line) {
    if (line.find(needle) != std::string::npos && ++seen == lines) at = seconds_since(start);
  });
  return {at, status};
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* role = std::getenv("DISTGRAPH_ROLE"); role && std::string(role) == "trainer") {
    const auto ctx = distgraph::initialize();
    std::printf("ready rank %d\n", ctx.rank());
    std::fflush(stdout);
    ctx.barrier("bench-done");
    return 0;
  }
  int machines = 2, servers = 1, trainers = 1, runs = 3;
  distgraph::bench::Flags("bench_runtime")
      .add("--machines", machines, 1, 16)
      .add("--servers", servers, 1, 8)
      .add("--trainers", trainers, 1, 16)
      .add("--runs", runs, 1, 100)
      .parse(argc, argv);
  distgraph::bench::Reporter rep(argc, argv, "bench_runtime");
  const auto dir = std::filesystem::temp_directory_path() /
                   ("distgraph-bench-runtime-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  distgraph::SbmOptions o;
  o.num_nodes = 20'000;
  o.feat_dim = 32;
  distgraph::partition_dataset(distgraph::sbm_dataset(o), "rt", machines, dir,
                               {.method = distgraph::PartMethod::random, .seed = 1});
  // Free again once written: every run's launcher starts its servers on them.
  distgraph::test::write_loopback_ip_config(dir / "ip_config.txt", machines, servers).release();
  rep.header({{"machines", std::to_string(machines)},
              {"servers_per_machine", std::to_string(servers)},
              {"trainers_per_machine", std::to_string(trainers)},
              {"graph", "SBM 20,000 nodes, 32-dim features, random partition"},
              {"runs", std::to_string(runs) + " (best kept)"}});
  char self[4096];
  const auto n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = '\0';
  const std::vector<std::string> launch{DISTGRAPH_CLI,
                                        "launch",
                                        "--ip-config",
                                        (dir / "ip_config.txt").string(),
                                        "--part-config",
                                        (dir / "rt.json").string(),
                                        "--servers",
                                        std::to_string(servers),
                                        "--trainers",
                                        std::to_string(trainers),
                                        "--",
                                        self};
  const int total = machines * (servers + trainers);
  double best = 1e300, floor = 1e300;
  for (int r = 0; r < runs; ++r) {
    const auto [t, st] = run_and_time(launch, "ready rank", machines * trainers);
    if (t < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::fprintf(stderr, "bench_runtime: the launch failed (status %d)\n", st);
      std::filesystem::remove_all(dir);
      return 1;
    }
    best = std::min(best, t);
    const auto start = std::chrono::steady_clock::now();
    std::vector<pid_t> pids;
    for (int i = 0; i < total; ++i) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::execl("/bin/true", "true", static_cast<char*>(nullptr));
        ::_exit(127);
      }
      pids.push_back(pid);
    }
    for (auto p : pids) ::waitpid(p, nullptr, 0);
    floor = std::min(floor, seconds_since(start));
  }
  rep.add({"startup_time",
           best,
           "s",
           floor,
           "spawn_floor",
           distgraph::bench::Kind::time,
           {{"machines", machines}, {"servers", servers}, {"trainers", trainers}}});
  std::filesystem::remove_all(dir);
  return 0;
}

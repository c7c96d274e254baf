// `distgraph lease`, the remote end of a launch, on this computer: heartbeats on its input
// keep a program running; silence or the end of the input stops its whole tree.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "support/child_process.hpp"
#include "support/processes.hpp"
#include "support/temp_dir.hpp"

namespace test_runtime_lease {

using namespace std::chrono_literals;
using distgraph::test::ChildProcess;
using distgraph::test::none_left;
using distgraph::test::TempDir;

#ifdef DISTGRAPH_CLI

namespace {

struct Ended {
  int code = -1;  ///< exit status, -1 when it did not exit within the limit
  double seconds = 0;
  std::string output;
};

/// Runs `sh -c script` (which execs or pipes into `distgraph lease`) to its end.
Ended run_sh(const std::string& script) {
  const auto t0 = std::chrono::steady_clock::now();
  ChildProcess p({"/bin/sh", "-c", script});
  const auto st = p.wait(60s);
  Ended e;
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (st && WIFEXITED(*st)) e.code = WEXITSTATUS(*st);
  e.output = p.output();
  return e;
}

const std::string lease = std::string(DISTGRAPH_CLI) + " lease";

}  // namespace

TEST_CASE("a lease whose heartbeats stop ends its program's tree after the lease and the grace",
          "[integration][launch][fault]") {
  TempDir tmp;
  const std::string fifo = (tmp / "beats").string();
  // The writer holds the input open and sends nothing, as a launcher behind a cut link.
  const Ended e =
      run_sh("mkfifo " + fifo + " && { (exec 3>" + fifo +
             "; sleep 2) >/dev/null 2>&1 & } && exec " + lease +
             " --lease-ms 500 --grace-ms 500 --label 'server 1.0' -- env M=" + tmp.path().string() +
             " sh -c 'trap \"\" TERM; sleep 30' < " + fifo);
  INFO(e.output);
  CHECK(e.code == 1);
  CHECK_THAT(e.output, Catch::Contains("distgraph lease of server 1.0: no heartbeat from the "
                                       "launcher for 500 ms; stopping env"));
  CHECK(e.seconds < 5);  // 0.5 s lease + 0.5 s grace, then SIGKILL of the tree
  CHECK(none_left(tmp.path().string(), 10s));
}

TEST_CASE("a lease that hears heartbeats keeps its program and passes its exit status on",
          "[integration][launch]") {
  // The program outlives two leases of 1 s: only the heartbeats keep it.
  const Ended e = run_sh("while :; do printf .; sleep 0.2; done | " + lease +
                         " --lease-ms 1000 -- sh -c 'sleep 2.5; echo done; exit 3'");
  INFO(e.output);
  CHECK(e.code == 3);
  CHECK_THAT(e.output, Catch::Contains("done"));
  CHECK(e.output.find("no heartbeat") == std::string::npos);
}

TEST_CASE("a lease whose input ends (the launcher's ssh went away) stops its program at once",
          "[integration][launch][fault]") {
  TempDir tmp;
  const Ended e =
      run_sh("true | " + lease + " --lease-ms 60000 -- env M=" + tmp.path().string() + " sleep 30");
  INFO(e.output);
  CHECK(e.code == 1);
  CHECK_THAT(e.output, Catch::Contains("the launcher's connection closed"));
  CHECK(e.seconds < 5);
  CHECK(none_left(tmp.path().string(), 10s));
}

#endif

}  // namespace test_runtime_lease

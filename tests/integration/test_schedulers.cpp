// Trainers started by the schedulers users already have (Open MPI's mpirun, torch's
// torchrun) against servers started with `distgraph serve` on 127.0.0.1: ranks, world size,
// the barrier and a clean end; and the world-size check that stops a trainer whose job size
// differs from the servers' --trainers at start instead of at a barrier's deadline.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "support/child_process.hpp"
#include "support/free_port.hpp"
#include "support/processes.hpp"
#include "support/temp_dir.hpp"

namespace test_integration_schedulers {

using namespace distgraph;
using namespace std::chrono_literals;
using distgraph::test::ChildProcess;
using distgraph::test::KillLeftovers;
using distgraph::test::none_left;
using distgraph::test::port_listening;
using distgraph::test::PortBlock;
using distgraph::test::TempDir;

#if defined(DISTGRAPH_CLI) && defined(DISTGRAPH_EXAMPLE_SCHEDULER_TRAINER)

namespace {

constexpr int machines = 2;

/// The full path of `name` on PATH, or "" when it is not installed.
std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const auto p = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

/// Runs `argv` to its end (bounded); true when it exits 0 and its output holds `needle`.
bool runs_and_says(const std::vector<std::string>& argv, const std::string& needle) {
  ChildProcess p(argv);
  const auto st = p.wait(60s);
  return st && WIFEXITED(*st) && WEXITSTATUS(*st) == 0 &&
         p.output().find(needle) != std::string::npos;
}

/// Debian's Open MPI mpirun (openmpi-bin), or "" when absent (or another MPI's: the flags
/// and the OMPI_* variables below are Open MPI's).
std::string open_mpi_mpirun() {
  const auto mpirun = on_path("mpirun");
  return !mpirun.empty() && runs_and_says({mpirun, "--version"}, "Open MPI") ? mpirun : "";
}

/// torch's torchrun (python3-torch), or "" when absent or torch does not import.
std::string torchrun() {
  const auto t = on_path("torchrun");
  return !t.empty() && runs_and_says({t, "--help"}, "--nproc_per_node") ? t : "";
}

/// `argv` run through `env`, with the rank variables of every family removed and then
/// `assignments` (NAME=VALUE) set: a test run inside a scheduler's job (CI under Slurm or
/// torchrun) must not pass its own rank on.
std::vector<std::string> with_ranks(const std::vector<std::string>& assignments,
                                    const std::vector<std::string>& argv) {
  std::vector<std::string> out{"/usr/bin/env"};
  for (const char* v :
       {"RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"})
    out.insert(out.end(), {"-u", v});
  out.insert(out.end(), assignments.begin(), assignments.end());
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

/// A 2-machine loopback cluster: a partitioned SBM graph, an ip config on free ports, and
/// one `distgraph serve` per machine started for `job_trainers` trainers, listening.
struct ServedJob {
  TempDir tmp;
  // Before the servers (and any scheduler a test starts): destroyed after them, it kills
  // whatever a failed test left running.
  KillLeftovers leftovers{tmp.path().string()};
  std::filesystem::path config, ip_path;
  std::vector<std::uint16_t> ports;
  std::vector<std::unique_ptr<ChildProcess>> servers;

  explicit ServedJob(int job_trainers) {
    SbmOptions o;
    o.num_nodes = 1200;
    o.num_classes = 3;
    o.avg_degree = 6;
    o.feat_dim = 4;
    o.seed = 7;
    partition_dataset(sbm_dataset(o), "sched", machines, tmp.path(),
                      {.method = PartMethod::metis, .seed = 1});
    config = tmp / "sched.json";
    ip_path = tmp / "ip_config.txt";
    ports = distgraph::test::write_loopback_ip_config(ip_path, machines, 1).bases;
    for (int m = 0; m < machines; ++m)
      servers.push_back(std::make_unique<ChildProcess>(
          std::vector<std::string>{DISTGRAPH_CLI, "serve", "--ip-config", ip_path.string(),
                                   "--part-config", config.string(), "--machine", std::to_string(m),
                                   "--trainers", std::to_string(job_trainers), "--threads", "2"}));
    for (auto& s : servers) REQUIRE(s->wait_for_line("listening on", 60s));
  }

  /// A test that failed half-way still stops its servers with SIGTERM, so they remove their
  /// /dev/shm folders (a SIGKILL, the ChildProcess default, would leave them there).
  ~ServedJob() {
    for (auto& s : servers) s->signal(SIGTERM);
    for (auto& s : servers) s->wait(5s);
  }
  ServedJob(const ServedJob&) = delete;
  ServedJob& operator=(const ServedJob&) = delete;

  /// What every trainer needs besides its rank (which the scheduler sets) and its machine
  /// (derived from the rank by the wrapper below).
  std::vector<std::string> trainer_env(int trainers_per_machine) const {
    return {"DISTGRAPH_ROLE=trainer",
            "DISTGRAPH_IP_CONFIG=" + ip_path.string(),
            "DISTGRAPH_PART_CONFIG=" + config.string(),
            "DISTGRAPH_NUM_SERVERS=1",
            "DISTGRAPH_NUM_TRAINERS=" + std::to_string(trainers_per_machine),
            "DISTGRAPH_CONNECT_TIMEOUT_MS=20000"};
  }

  /// Checks every server exits 0 within `within` (shut down by a trainer or a signal).
  void expect_servers_exit_cleanly(std::chrono::seconds within) {
    for (auto& s : servers) {
      const auto st = s->wait(within);
      INFO(s->output());
      REQUIRE(st.has_value());
      CHECK(WIFEXITED(*st));
      CHECK(WEXITSTATUS(*st) == 0);
    }
  }

  /// What a job with nobody to shut the servers down ends with: SIGTERM (they exit 0).
  void stop_servers() {
    for (auto& s : servers) s->signal(SIGTERM);
    expect_servers_exit_cleanly(15s);
  }

  /// Nothing of the job runs or listens any more.
  void expect_nothing_left() {
    CHECK(none_left(tmp.path().string(), 10s));
    for (const auto port : ports) CHECK_FALSE(port_listening(port));
  }
};

/// A wrapper that sets a trainer's machine from its rank (machine-major ranks,
/// `per_machine` trainers each) and execs the trainer program: the RUNTIME.md recipe.
std::vector<std::string> trainer_command(const std::string& rank_variable, int per_machine) {
  return {"/bin/sh", "-c",
          "DISTGRAPH_MACHINE_ID=$((" + rank_variable + " / " + std::to_string(per_machine) +
              ")) exec \"$0\"",
          DISTGRAPH_EXAMPLE_SCHEDULER_TRAINER};
}

/// `mpirun -np N` of the scheduler_trainer, as RUNTIME.md gives it (root needs
/// --allow-run-as-root; --oversubscribe lets 4 ranks share 2 cores).
std::vector<std::string> mpirun_command(const std::string& mpirun, const ServedJob& job, int np,
                                        int per_machine) {
  std::vector<std::string> a{mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                             "-np",  std::to_string(np)};
  // -x exports each variable to every rank (what a multi-host job needs; local ranks
  // would inherit it anyway).
  for (const auto& kv : job.trainer_env(per_machine))
    a.insert(a.end(), {"-x", kv.substr(0, kv.find('='))});
  for (auto& c : trainer_command("OMPI_COMM_WORLD_RANK", per_machine)) a.push_back(c);
  return with_ranks({}, a);
}

/// Checks the scheduler_trainer's lines of a job of `world` trainers, `per_machine` per
/// machine, all on this computer (so the local rank is the rank).
void expect_every_rank(const std::string& output, int world, int per_machine,
                       const std::string& source) {
  for (int r = 0; r < world; ++r)
    CHECK_THAT(output,
               Catch::Contains("trainer " + std::to_string(r) + " of " + std::to_string(world) +
                               ": ranks from " + source + ", local rank " + std::to_string(r) +
                               ", machine " + std::to_string(r / per_machine)));
  CHECK_THAT(output,
             Catch::Contains("all " + std::to_string(world) + " trainers passed the barrier"));
}

}  // namespace

TEST_CASE(
    "mpirun starts the trainers of a loopback job against distgraph serve: ranks, world size, "
    "barrier and a clean end",
    "[integration][net][scheduler][mpirun]") {
  const auto mpirun = open_mpi_mpirun();
  if (mpirun.empty()) {
    WARN("SKIPPED: Open MPI's mpirun is not installed (Debian: openmpi-bin)");
    return;
  }
  ServedJob job(4);
  ChildProcess run(mpirun_command(mpirun, job, 4, 2), job.trainer_env(2));
  const auto st = run.wait(120s);
  INFO(run.output());
  REQUIRE(st.has_value());
  CHECK(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);
  expect_every_rank(run.output(), 4, 2, "OMPI");
  // Rank 0 shut the servers down over the wire.
  job.expect_servers_exit_cleanly(15s);
  job.expect_nothing_left();
}

TEST_CASE(
    "torchrun starts the trainers of a loopback job against distgraph serve: ranks, world "
    "size, barrier and a clean end",
    "[integration][net][scheduler][torchrun]") {
  const auto torch = torchrun();
  if (torch.empty()) {
    WARN("SKIPPED: torchrun is not installed or torch does not import (Debian: python3-torch)");
    return;
  }
  ServedJob job(4);
  // torchrun's own rendezvous store takes --master_port; --standalone would use the fixed
  // port 29400, which parallel runs share. `--redirects 9:0 --tee 9:0` (a setting for a local
  // rank that does not exist) keeps torch 1.13 on Python 3.11 from failing on the default
  // "0" (AttributeError: 'NoneType' object has no attribute 'get').
  PortBlock store;
  std::vector<std::string> a{torch, "--nnodes", "1", "--nproc_per_node", "4"};
  a.insert(a.end(), {"--master_addr", "127.0.0.1", "--master_port", std::to_string(store.base())});
  // --monitor_interval: how often torchrun looks at its workers (default 5 s).
  a.insert(a.end(), {"--monitor_interval", "1", "--redirects", "9:0", "--tee", "9:0"});
  a.push_back("--no_python");
  for (auto& c : trainer_command("RANK", 2)) a.push_back(c);
  store.release();
  ChildProcess run(with_ranks({}, a), job.trainer_env(2));
  const auto st = run.wait(120s);
  INFO(run.output());
  REQUIRE(st.has_value());
  CHECK(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);
  expect_every_rank(run.output(), 4, 2, "RANK");
  job.expect_servers_exit_cleanly(15s);
  job.expect_nothing_left();
}

TEST_CASE(
    "a trainer whose world size differs from the servers' --trainers stops at start, naming "
    "both numbers and where each came from",
    "[integration][net][scheduler][fault]") {
  ServedJob job(2);
  struct Case {
    std::vector<std::string> env;
    std::string names;
  };
  const std::vector<Case> cases{
      {{"RANK=0", "WORLD_SIZE=3"},
       "trainer 0 has 3 (WORLD_SIZE, set by torchrun or distgraph launch)"},
      {{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=3"},
       "trainer 1 has 3 (OMPI_COMM_WORLD_SIZE, set by mpirun)"},
      {{"SLURM_PROCID=0", "SLURM_NTASKS=5"}, "trainer 0 has 5 (SLURM_NTASKS, set by srun)"},
      {{}, "trainer 0 has 1 (no RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID set"}};
  for (const auto& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    // Before the check, a trainer counting more trainers than exist waited at the first
    // barrier until the call deadline (60 s); one counting fewer ran a job of another size.
    ChildProcess trainer(with_ranks(c.env, {DISTGRAPH_EXAMPLE_SCHEDULER_TRAINER}),
                         job.trainer_env(1));
    const auto st = trainer.wait(30s);
    INFO(trainer.output());
    REQUIRE(st.has_value());
    CHECK(WEXITSTATUS(*st) == 1);
    CHECK(std::chrono::steady_clock::now() - start < 15s);
    CHECK_THAT(trainer.output(),
               Catch::Contains("world size: " + c.names) &&
                   Catch::Contains("but server 0.0 (partition 0) was started with --trainers 2"));
  }
  // The refused trainers left the servers as they were.
  job.stop_servers();
  job.expect_nothing_left();
}

TEST_CASE(
    "mpirun with more ranks than the servers' --trainers fails fast naming both counts, and "
    "the same servers then run the right job",
    "[integration][net][scheduler][mpirun][fault]") {
  const auto mpirun = open_mpi_mpirun();
  if (mpirun.empty()) {
    WARN("SKIPPED: Open MPI's mpirun is not installed (Debian: openmpi-bin)");
    return;
  }
  ServedJob job(4);
  {
    const auto start = std::chrono::steady_clock::now();
    ChildProcess wrong(mpirun_command(mpirun, job, 3, 2), job.trainer_env(2));
    const auto st = wrong.wait(60s);
    INFO(wrong.output());
    REQUIRE(st.has_value());
    CHECK(WEXITSTATUS(*st) != 0);
    CHECK(std::chrono::steady_clock::now() - start < 30s);
    CHECK_THAT(wrong.output(),
               Catch::Contains("has 3 (OMPI_COMM_WORLD_SIZE, set by mpirun) but server 0.0 "
                               "(partition 0) was started with --trainers 4") &&
                   Catch::Contains("start 4 trainers, or the servers with --trainers 3"));
  }
  ChildProcess right(mpirun_command(mpirun, job, 4, 2), job.trainer_env(2));
  const auto st = right.wait(120s);
  INFO(right.output());
  REQUIRE(st.has_value());
  CHECK(WEXITSTATUS(*st) == 0);
  expect_every_rank(right.output(), 4, 2, "OMPI");
  job.expect_servers_exit_cleanly(15s);
  job.expect_nothing_left();
}

#else
TEST_CASE("scheduler tests need the distgraph program and the scheduler_trainer example",
          "[integration]") {
  WARN("SKIPPED: built without the distgraph program or the examples");
}
#endif

}  // namespace test_integration_schedulers

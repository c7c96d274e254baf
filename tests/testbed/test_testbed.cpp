// distgraph across separate hosts (scripts/testbed.sh: network namespaces, a real sshd
// each, private /dev/shm and workspace), driven by the commands a user types: partition on
// host 1, copy over ssh + rsync, launch over ssh; then the faults a network brings.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "distgraph/io/npy.hpp"
#include "support/child_process.hpp"
#include "support/program_run.hpp"
#include "support/temp_dir.hpp"
#include "support/testbed.hpp"

namespace test_testbed_testbed {

using namespace std::chrono_literals;
using distgraph::test::ChildProcess;
using distgraph::test::ProgramRun;
using distgraph::test::Testbed;
namespace fs = std::filesystem;

#ifdef DISTGRAPH_CLI

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// `distgraph ARGS` on host i, to its end.
ProgramRun distgraph_on(const Testbed& tb, int i, std::vector<std::string> args,
                        std::chrono::milliseconds limit = 120s) {
  args.insert(args.begin(), DISTGRAPH_CLI);
  return tb.exec(i, args, limit);
}

/// A shell command on host i, to its end.
ProgramRun sh_on(const Testbed& tb, int i, const std::string& command) {
  return tb.exec(i, {"/bin/sh", "-c", command}, 30s);
}

/// Writes the ip config of hosts 1..n (port 30050 each) into host 1's workspace.
std::string write_ip_config(const Testbed& tb, int n) {
  std::string lines;
  for (int h = 1; h <= n; ++h) lines += Testbed::address(h) + " 30050\n";
  const std::string path = tb.workspace() + "/ip_config.txt";
  REQUIRE(sh_on(tb, 1, "printf '" + lines + "' > " + path).exit_code == 0);
  return path;
}

/// Partitions `input` into one part per host in host 1's workspace and copies each host
/// its share with `distgraph copy` (real ssh and rsync); returns the partition config.
std::string partition_and_copy(const Testbed& tb, const std::string& input, const std::string& name,
                               std::vector<std::string> extra = {}) {
  const std::string ws = tb.workspace();
  std::vector<std::string> args{
      "partition", "--input", input, "--name", name, "--parts", std::to_string(tb.hosts()),
      "--out",     ws};
  args.insert(args.end(), extra.begin(), extra.end());
  const ProgramRun part = distgraph_on(tb, 1, args);
  INFO(part.output);
  REQUIRE(part.exit_code == 0);
  const std::string ip = write_ip_config(tb, tb.hosts());
  const std::string config = ws + "/" + name + ".json";
  const ProgramRun copy =
      distgraph_on(tb, 1,
                   {"copy", "--ip-config", ip, "--part-config", config, "--workspace", ws, "--ssh",
                    tb.ssh(), "--rsync", tb.rsync()});
  INFO(copy.output);
  REQUIRE(copy.exit_code == 0);
  return config;
}

/// The arguments of `distgraph launch` over the testbed's ssh, with the job's files in the
/// workspace (the same path on every host).
std::vector<std::string> launch_args(const Testbed& tb, const std::string& config,
                                     const std::vector<std::string>& extra,
                                     const std::vector<std::string>& program) {
  std::vector<std::string> a{"launch",        "--ip-config", tb.workspace() + "/ip_config.txt",
                             "--part-config", config,        "--ssh",
                             tb.ssh(),        "--workspace", tb.workspace()};
  a.insert(a.end(), extra.begin(), extra.end());
  a.push_back("--");
  a.insert(a.end(), program.begin(), program.end());
  return a;
}

nlohmann::json json_on(const Testbed& tb, int i, const std::string& path) {
  const ProgramRun r = tb.exec(i, {"/bin/cat", path}, 10s);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.output);
}

/// One recipe trained twice on host 1's partition with the same seed: as a loopback cluster
/// on host 1 (`distgraph train DATASET --part-config`), and across the hosts (`distgraph
/// launch` over ssh with `distgraph train` as the trainers); each run's result.json.
struct Trained {
  nlohmann::json loopback, across;
  double across_s = 0;  ///< the launch across the hosts, start to end
  std::string output;   ///< the launch's output
};

Trained train_both(const Testbed& tb, const std::string& dataset, const std::string& config,
                   const std::vector<std::string>& recipe) {
  const std::string ws = tb.workspace();
  std::vector<std::string> loop{"train", dataset, "--part-config", config, "--out", ws + "/loop"};
  loop.insert(loop.end(), recipe.begin(), recipe.end());
  const ProgramRun l = distgraph_on(tb, 1, loop, 180s);
  INFO(l.output);
  REQUIRE(l.exit_code == 0);
  std::vector<std::string> program{DISTGRAPH_CLI, "train", "--out", ws + "/run"};
  program.insert(program.end(), recipe.begin(), recipe.end());
  const auto started = Clock::now();
  const ProgramRun r = distgraph_on(tb, 1, launch_args(tb, config, {}, program), 180s);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return {json_on(tb, 1, ws + "/loop/result.json"), json_on(tb, 1, ws + "/run/result.json"),
          seconds_since(started), r.output};
}

/// Every host has no process of the job left (within `within`) and an empty /dev/shm.
void check_clean(const Testbed& tb, std::chrono::milliseconds within) {
  for (int h = 1; h <= tb.hosts(); ++h) {
    INFO("host " << h);
    CHECK(tb.none_left_on(h, within));
    CHECK(tb.shm(h).empty());
  }
}

/// The trainer command of a run that trains until it is stopped.
std::vector<std::string> endless_training(const Testbed& tb) {
  return {DISTGRAPH_CLI, "train",  "--epochs", "100000",
          "--patience",  "100000", "--out",    tb.workspace() + "/run"};
}

/// Starts `distgraph launch ... -- program` on host 1 and returns once rank 0 reported its
/// third epoch: every server and trainer is then at work, mid-training.
std::unique_ptr<ChildProcess> start_training(const Testbed& tb, const std::string& config,
                                             const std::vector<std::string>& program) {
  auto a = launch_args(tb, config, {}, program);
  a.insert(a.begin(), DISTGRAPH_CLI);
  auto job = std::make_unique<ChildProcess>(tb.exec_argv(1, a));
  INFO(job->output());
  REQUIRE(job->wait_for_line("[trainer 0.0] epoch 3/", 120s));
  return job;
}

}  // namespace

TEST_CASE(
    "Cora across 3 hosts: copy puts each partition on its own host only, and training "
    "reaches the loopback run's test accuracy with the same seed",
    "[testbed][net][data]") {
  DISTGRAPH_REQUIRE_DATASET(cora, "cora");
  DISTGRAPH_REQUIRE_TESTBED(tb, 3);
  const std::string ws = tb.workspace();
  const std::string config = partition_and_copy(tb, cora.string(), "cora");
  // Host h holds the configs and part<h-1>, byte for byte as host 1 wrote it, and nothing
  // else; the workspaces are tmpfs of their own, so nothing came by a shared disk.
  for (int h = 2; h <= 3; ++h) {
    const std::string part = "part" + std::to_string(h - 1);
    const ProgramRun ls = sh_on(tb, h, "cd " + ws + " && ls -A");
    CHECK(ls.output == "cora.json\nip_config.txt\n" + part + "\n");
    const std::string sums = "cd " + ws + " && find " + part + " -type f | sort | xargs md5sum";
    const ProgramRun here = sh_on(tb, h, sums), source = sh_on(tb, 1, sums);
    CHECK(here.exit_code == 0);
    CHECK(here.output == source.output);
  }
  const std::vector<std::string> recipe{"--seed", "3", "--epochs", "20"};
  const Trained t = train_both(tb, cora.string(), config, recipe);
  CHECK_THAT(t.output, Catch::Contains("server 2.0 listening on 198.51.100.3 port 30050"));
  const double across = t.across["test"].get<double>(), loopback = t.loopback["test"].get<double>();
  const double secs = t.across_s;
  std::printf("testbed: Cora 3 hosts test accuracy %.4f (loopback %.4f), job %.1f s\n", across,
              loopback, secs);
  CHECK(across == Approx(loopback).margin(0.005));
  CHECK(across > 0.7);
  check_clean(tb, 10s);

  // Inference across the hosts: every trainer loads the model, so the run folder goes to
  // every host first (distgraph copy moves partitions only); rank 0 gathers and writes.
  for (int h = 2; h <= 3; ++h)
    REQUIRE(
        tb.exec(1, {tb.rsync(), "-a", ws + "/run/", Testbed::address(h) + ":" + ws + "/run/"}, 60s)
            .exit_code == 0);
  const ProgramRun dist = distgraph_on(
      tb, 1,
      launch_args(tb, config, {},
                  {DISTGRAPH_CLI, "infer", "--checkpoint", ws + "/run", "--out", ws + "/dist"}));
  INFO(dist.output);
  REQUIRE(dist.exit_code == 0);
  const ProgramRun alone = distgraph_on(tb, 1,
                                        {"infer", "--checkpoint", ws + "/run", "--part-config",
                                         config, "--standalone", "--out", ws + "/alone"});
  INFO(alone.output);
  REQUIRE(alone.exit_code == 0);
  // Host 1's workspace is its own; /tmp is the computer's: bring the files out to compare.
  distgraph::test::TempDir out;
  for (const char* run : {"dist", "alone"})
    REQUIRE(sh_on(tb, 1,
                  "mkdir " + (out / run).string() + " && cp " + ws + "/" + run + "/*.npy " +
                      (out / run).string())
                .exit_code == 0);
  const auto a_emb = distgraph::read_npy_float32(out / "alone" / "embeddings.npy");
  const auto d_emb = distgraph::read_npy_float32(out / "dist" / "embeddings.npy");
  REQUIRE(a_emb.size() == d_emb.size());
  REQUIRE(a_emb.size() > 2708);
  double worst = 0;
  for (std::size_t i = 0; i < a_emb.size(); ++i)
    worst = std::max(worst, std::fabs(double(a_emb[i]) - d_emb[i]));
  CHECK(worst <= 1e-5);
  const auto a_pred = distgraph::read_npy_int64(out / "alone" / "predictions.npy");
  const auto d_pred = distgraph::read_npy_int64(out / "dist" / "predictions.npy");
  CHECK(std::equal(a_pred.begin(), a_pred.end(), d_pred.begin(), d_pred.end()));
  check_clean(tb, 10s);
}

TEST_CASE(
    "DBLP (typed) across 2 hosts reaches the loopback run's test accuracy with the same "
    "seed",
    "[testbed][net][data][hetero]") {
  DISTGRAPH_REQUIRE_DATASET(dblp, "dblp");
  DISTGRAPH_REQUIRE_TESTBED(tb, 2);
  const std::string ws = tb.workspace();
  const std::string config =
      partition_and_copy(tb, dblp.string(), "dblp", {"--balance-ntypes", "train"});
  const std::vector<std::string> recipe{"--target-ntype", "author", "--model",  "rgcn",
                                        "--seed",         "2",      "--epochs", "5"};
  const Trained t = train_both(tb, dblp.string(), config, recipe);
  const auto& across = t.across;
  const auto& loopback = t.loopback;
  std::printf("testbed: DBLP 2 hosts test accuracy %.4f (loopback %.4f)\n",
              across["test"].get<double>(), loopback["test"].get<double>());
  CHECK(across["test"].get<double>() == Approx(loopback["test"].get<double>()).margin(0.005));
  CHECK(across["test"].get<double>() > 0.85);
  check_clean(tb, 10s);
}

TEST_CASE(
    "host names that resolve to 127.0.1.1 (as Debian writes them): the gradient group "
    "binds the ip config's address, and a loopback interface is refused with one clear "
    "error",
    "[testbed][net]") {
  DISTGRAPH_REQUIRE_TESTBED(tb, 2, {"--names", "127.0.1.1"});
  const ProgramRun names = sh_on(tb, 2, "getent hosts host2");
  CHECK_THAT(names.output, Catch::StartsWith("127.0.1.1"));
  const std::string ws = tb.workspace();
  const std::string config = partition_and_copy(tb, "sbm", "sbm");
  const std::vector<std::string> program{DISTGRAPH_CLI, "train", "--epochs",
                                         "3",           "--out", ws + "/run"};
  const ProgramRun r = distgraph_on(tb, 1, launch_args(tb, config, {}, program), 120s);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(json_on(tb, 1, ws + "/run/result.json")["epochs"] == 3);
  check_clean(tb, 10s);
  // PyTorch's way of choosing (the name, here loopback) made trainer 0 fail with
  // "connect [127.0.0.1]:...: Connection refused"; a loopback choice is now named.
  const ProgramRun lo = distgraph_on(
      tb, 1, launch_args(tb, config, {"--gloo-interface", "lo", "--grace-ms", "1000"}, program),
      120s);
  INFO(lo.output);
  CHECK(lo.exit_code == 1);
  CHECK_THAT(lo.output, Catch::Contains("GLOO_SOCKET_IFNAME=lo names a loopback interface, but "
                                        "the job spans hosts"));
  check_clean(tb, 10s);
}

TEST_CASE(
    "a host whose link is cut mid-epoch: the launcher names it and stops within 25 s, "
    "and the cut-off host ends its own processes within 30 s, leaving no /dev/shm",
    "[testbed][net][fault]") {
  DISTGRAPH_REQUIRE_TESTBED(tb, 2);
  const std::string config = partition_and_copy(tb, "sbm", "sbm");
  auto job = start_training(tb, config, endless_training(tb));
  REQUIRE(tb.cut(2));
  const auto cut = Clock::now();
  const auto st = job->wait(60s);
  const double launcher_s = seconds_since(cut);
  INFO(job->output());
  REQUIRE(st.has_value());
  CHECK((WIFEXITED(*st) && WEXITSTATUS(*st) == 1));
  CHECK_THAT(job->output(), Catch::Contains("machine 1 (198.51.100.2): lost"));
  CHECK(launcher_s < 25);
  // Host 2 hears nothing more: its leases run out (12 s) and stop its tree (grace 5 s).
  CHECK(tb.none_left_on(
      2, std::chrono::duration_cast<std::chrono::milliseconds>(cut + 30s - Clock::now())));
  const double remote_s = seconds_since(cut);
  std::printf(
      "testbed: link cut mid-epoch: launcher exited after %.1f s, host 2 empty after %.1f s\n",
      launcher_s, remote_s);
  check_clean(tb, 5s);
}

TEST_CASE(
    "a 3 s flap of a host's link mid-epoch: the job survives and ends with the "
    "undisturbed run's result",
    "[testbed][net][fault]") {
  DISTGRAPH_REQUIRE_TESTBED(tb, 2);
  const std::string ws = tb.workspace();
  const std::string config = partition_and_copy(tb, "sbm", "sbm");
  const auto program = [&](const std::string& out) {
    return std::vector<std::string>{DISTGRAPH_CLI, "train", "--epochs", "30",
                                    "--seed",      "5",     "--out",    ws + "/" + out};
  };
  const ProgramRun calm = distgraph_on(tb, 1, launch_args(tb, config, {}, program("calm")), 120s);
  INFO(calm.output);
  REQUIRE(calm.exit_code == 0);
  auto job = start_training(tb, config, program("flap"));
  REQUIRE(tb.cut(2));
  ::usleep(3'000'000);  // the flap itself: 3 s without a link, below every deadline
  REQUIRE(tb.heal(2));
  const auto st = job->wait(120s);
  INFO(job->output());
  REQUIRE(st.has_value());
  CHECK((WIFEXITED(*st) && WEXITSTATUS(*st) == 0));
  const auto a = json_on(tb, 1, ws + "/calm/result.json");
  const auto b = json_on(tb, 1, ws + "/flap/result.json");
  CHECK(b["epochs"] == a["epochs"]);
  CHECK(b["test"] == a["test"]);
  CHECK(b["val"] == a["val"]);
  check_clean(tb, 10s);
}

TEST_CASE(
    "the launcher's own host is cut off: every other host ends its processes within "
    "30 s, and so does the launcher's",
    "[testbed][net][fault]") {
  DISTGRAPH_REQUIRE_TESTBED(tb, 3);
  const std::string config = partition_and_copy(tb, "sbm", "sbm");
  auto job = start_training(tb, config, endless_training(tb));
  REQUIRE(tb.cut(1));
  const auto cut = Clock::now();
  const auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(cut + 30s - Clock::now());
  };
  for (int h : {2, 3}) {
    INFO("host " << h);
    CHECK(tb.none_left_on(h, left()));
  }
  const double others_s = seconds_since(cut);
  const auto st = job->wait(left());
  const double launcher_s = seconds_since(cut);
  INFO(job->output());
  REQUIRE(st.has_value());
  CHECK((WIFEXITED(*st) && WEXITSTATUS(*st) == 1));
  CHECK_THAT(job->output(), Catch::Contains(": lost: the ssh of"));
  std::printf(
      "testbed: launcher's host cut: hosts 2-3 empty after %.1f s, launcher exited after %.1f s\n",
      others_s, launcher_s);
  check_clean(tb, 5s);
}

namespace {

/// The pid of `distgraph serve` on host i (the server itself, not the lease above it), or -1.
int server_pid(const Testbed& tb, int i) {
  for (const int pid : tb.leftovers(i)) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    std::string program, command;
    std::getline(in, program, '\0');
    std::getline(in, command, '\0');
    if (command == "serve") return pid;
  }
  return -1;
}

/// Whether `pid` runs (exists and is not a zombie waiting to be reaped).
bool running(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

}  // namespace

TEST_CASE(
    "a paused server (SIGSTOP): the trainer that asks it fails at its request deadline, "
    "the launcher stops the job, nothing is left, and a later SIGCONT wakes nothing",
    "[testbed][net][fault]") {
  DISTGRAPH_REQUIRE_TESTBED(tb, 2);
  const std::string config = partition_and_copy(tb, "sbm", "sbm");
  // A 5 s request deadline instead of the default 60 s (the same path, a shorter test);
  // no row cache, so trainer 0 reads host 2's rows from its server.
  std::vector<std::string> program{"/usr/bin/env", "DISTGRAPH_CALL_TIMEOUT_MS=5000"};
  for (const auto& w : endless_training(tb)) program.push_back(w);
  program.insert(program.end(), {"--cache-mb", "0"});
  auto job = start_training(tb, config, program);
  const int server = server_pid(tb, 2);
  REQUIRE(server > 0);
  REQUIRE(::kill(server, SIGSTOP) == 0);
  const auto paused = Clock::now();
  // Bound: the 5 s deadline + the 5 s grace period + 1 s.
  const auto st = job->wait(60s);
  const double launcher_s = seconds_since(paused);
  INFO(job->output());
  REQUIRE(st.has_value());
  CHECK((WIFEXITED(*st) && WEXITSTATUS(*st) == 1));
  CHECK_THAT(job->output(), Catch::Contains("no reply within the deadline"));
  CHECK(launcher_s < 11);
  check_clean(tb, 5s);
  // The stopped server was woken to handle its SIGTERM, and is gone: nothing to resume.
  ::kill(server, SIGCONT);
  CHECK_FALSE(running(server));
  CHECK(tb.leftovers(2).empty());
  std::printf("testbed: paused server: launcher exited after %.1f s, nothing left\n", launcher_s);
}

TEST_CASE(
    "launch refuses before starting anything: sshd down on a host, a program missing "
    "on a host, an address no host answers, a duplicate address and port",
    "[testbed][net][fault]") {
  DISTGRAPH_REQUIRE_TESTBED(tb, 3);
  const std::string ws = tb.workspace();
  const std::string config = ws + "/job.json";  // never read: nothing starts
  const auto refused = [&](const std::string& ip_lines, const std::vector<std::string>& program,
                           const std::string& needle) {
    REQUIRE(sh_on(tb, 1, "printf '" + ip_lines + "' > " + ws + "/ip_config.txt").exit_code == 0);
    const auto t0 = Clock::now();
    const ProgramRun r = distgraph_on(tb, 1, launch_args(tb, config, {}, program), 60s);
    const double secs = seconds_since(t0);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains(needle));
    CHECK(r.output.find("[server") == std::string::npos);  // nothing was started
    CHECK(secs < 16);
    for (int h = 1; h <= 2; ++h) CHECK(tb.leftovers(h).empty());
    std::printf("testbed: refused in %.1f s: %s\n", secs, needle.c_str());
  };
  // Checked in this order: the last one takes host 3's sshd away.
  refused("198.51.100.1 30050\n198.51.100.2 30050\n198.51.100.2 30050\n", {"/bin/true"},
          "collides with line 2");
  REQUIRE(sh_on(tb, 1, "mkdir -p " + ws + "/bin && cp /bin/true " + ws + "/bin/prog").exit_code ==
          0);
  refused("198.51.100.1 30050\n198.51.100.2 30050\n", {ws + "/bin/prog"},
          "machine 1 (198.51.100.2): program " + ws + "/bin/prog not found there");
  refused("198.51.100.1 30050\n198.51.100.99 30050\n", {"/bin/true"},
          "machine 1 (198.51.100.99): ");
  REQUIRE(::kill(tb.sshd_pid(3), SIGKILL) == 0);
  refused("198.51.100.1 30050\n198.51.100.2 30050\n198.51.100.3 30050\n", {"/bin/true"},
          "distgraph launch: machine 2 (198.51.100.3): ssh failed");
}

TEST_CASE(
    "mpirun across 3 hosts: each host writes its own Cora partition into its workspace with "
    "PT-Scotch, and training across the hosts runs on it without a copy",
    "[testbed][net][data][mpi]") {
  DISTGRAPH_REQUIRE_DATASET(cora, "cora");
  if (::access("/usr/bin/mpirun", X_OK) != 0) {
    WARN("SKIPPED: no /usr/bin/mpirun (package openmpi-bin)");
    return;
  }
  DISTGRAPH_REQUIRE_TESTBED(tb, 3);
  const std::string ws = tb.workspace();
  // The chunks on a disk every host sees (as NFS would be); the output in each host's own.
  const distgraph::test::TempDir shared;
  const ProgramRun chunk = distgraph::test::run_program(
      {DISTGRAPH_CLI, "chunk", cora.string(), "--chunks", "3", "--out", (shared / "c").string()},
      60s);
  REQUIRE(chunk.exit_code == 0);
  const ProgramRun part =
      tb.exec(1,
              {"/usr/bin/mpirun",
               "--allow-run-as-root",
               "--oversubscribe",
               "--bind-to",
               "none",
               "--host",
               Testbed::address(1) + "," + Testbed::address(2) + "," + Testbed::address(3),
               "-n",
               "3",
               "--mca",
               "plm_rsh_agent",
               tb.ssh(),
               DISTGRAPH_CLI,
               "partition",
               "--distributed",
               "--input",
               (shared / "c").string(),
               "--parts",
               "3",
               "--out",
               ws},
              180s);
  INFO(part.output);
  if (part.output.find("built without MPI") != std::string::npos) {
    WARN("SKIPPED: this distgraph was built without MPI and 64-bit PT-Scotch");
    return;
  }
  REQUIRE(part.exit_code == 0);
  // Host h holds the config and part<h-1>, written there by its own rank.
  for (int h = 1; h <= 3; ++h) {
    const ProgramRun ls = sh_on(tb, h, "cd " + ws + " && ls -A");
    CHECK(ls.output == "cora.json\npart" + std::to_string(h - 1) + "\n");
  }
  for (int h = 1; h <= 3; ++h)
    REQUIRE(sh_on(tb, h,
                  "printf '" + Testbed::address(1) + " 30050\n" + Testbed::address(2) + " 30050\n" +
                      Testbed::address(3) + " 30050\n' > " + ws + "/ip_config.txt")
                .exit_code == 0);
  const ProgramRun r = distgraph_on(
      tb, 1,
      launch_args(tb, ws + "/cora.json", {},
                  {DISTGRAPH_CLI, "train", "--out", ws + "/run", "--seed", "3", "--epochs", "20"}),
      180s);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const double test = json_on(tb, 1, ws + "/run/result.json")["test"].get<double>();
  std::printf("testbed: Cora partitioned by mpirun over 3 hosts, test accuracy %.4f\n", test);
  CHECK(test > 0.7);
  check_clean(tb, 10s);
}

#else
TEST_CASE("testbed tests need the distgraph program", "[testbed]") {
  WARN("SKIPPED: built without the distgraph program");
}
#endif

}  // namespace test_testbed_testbed

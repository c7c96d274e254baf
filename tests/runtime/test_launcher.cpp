// `distgraph launch` / `copy` with real processes on 127.0.0.1: a full job, failures,
// signals, and no process or listening port left behind.
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/runtime/launcher.hpp"
#include "support/child_process.hpp"
#include "support/free_port.hpp"
#include "support/machine_storage.hpp"
#include "support/processes.hpp"
#include "support/temp_dir.hpp"

namespace test_runtime_launcher {

using namespace distgraph;
using namespace std::chrono_literals;
using distgraph::test::ChildProcess;
using distgraph::test::none_left;
using distgraph::test::port_listening;
using distgraph::test::processes_mentioning;
using distgraph::test::TempDir;

#if defined(DISTGRAPH_CLI) && defined(DISTGRAPH_EXAMPLE_CHECKSUM)

namespace {

struct Job {
  static constexpr int machines = 2;
  TempDir tmp;
  std::filesystem::path config, ip_path;
  distgraph::test::LoopbackIpConfig ports;  // held until launch()
  explicit Job(int servers) {
    SbmOptions o;
    o.num_nodes = 1500;
    o.num_classes = 3;
    o.avg_degree = 6;
    o.feat_dim = 8;
    o.seed = 5;
    partition_dataset(sbm_dataset(o), "job", machines, tmp.path(),
                      {.method = PartMethod::metis, .seed = 1});
    config = tmp / "job.json";
    ip_path = tmp / "ip_config.txt";
    ports = distgraph::test::write_loopback_ip_config(ip_path, machines, servers);
  }
  ~Job() { distgraph::test::remove_machine_storage("job", ports.bases); }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  /// The launch command; the servers it starts may take the ip config's ports from now on.
  std::vector<std::string> launch(int servers, int trainers, std::vector<std::string> program) {
    ports.release();
    std::vector<std::string> a{DISTGRAPH_CLI,
                               "launch",
                               "--ip-config",
                               ip_path.string(),
                               "--part-config",
                               config.string(),
                               "--servers",
                               std::to_string(servers),
                               "--trainers",
                               std::to_string(trainers),
                               "--grace-ms",
                               "2000",
                               "--"};
    a.insert(a.end(), program.begin(), program.end());
    return a;
  }
  std::string marker() const { return tmp.path().string(); }
  /// True when nothing listens on any of the first `servers` ports of every machine.
  bool ports_closed(int servers) const {
    for (auto base : ports.bases)
      for (int s = 0; s < servers; ++s)
        if (port_listening(static_cast<std::uint16_t>(base + s))) return false;
    return true;
  }
};

std::string checksum_line(const std::string& output) {
  std::smatch m;
  static const std::regex re("checksum (-?[0-9]+)");
  return std::regex_search(output, m, re) ? m[1].str() : "";
}

}  // namespace

TEST_CASE("a 2 x (2 servers + 2 trainers) loopback job runs to the end and leaves nothing behind",
          "[integration][net][launch]") {
  Job job(2);
  ChildProcess standalone({DISTGRAPH_EXAMPLE_CHECKSUM, job.config.string()});
  REQUIRE(standalone.wait(60s).value_or(-1) == 0);
  const auto expected = checksum_line(standalone.output());
  REQUIRE(!expected.empty());

  ChildProcess launcher(job.launch(2, 2, {DISTGRAPH_EXAMPLE_CHECKSUM}));
  const auto st = launcher.wait(120s);
  INFO(launcher.output());
  REQUIRE(st.has_value());
  CHECK(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);
  CHECK_THAT(launcher.output(), Catch::Contains("[trainer 0.0] trainers 4"));
  CHECK_THAT(launcher.output(), Catch::Contains("[server 1.1] server 1.1 listening"));
  CHECK(checksum_line(launcher.output()) == expected);
  CHECK(none_left(job.marker(), 10s));
  CHECK(job.ports_closed(2));
}

TEST_CASE("the launch report names every process with its exit and its own peak memory",
          "[integration][net][launch]") {
  Job job(1);
  const auto report = job.tmp / "report.json";
  // Trainer 0.0 holds a 96 MB string (bash's command substitution) before it exits; the
  // other trainer holds nothing: the report must tell them apart, process by process.
  auto argv =
      job.launch(1, 1,
                 {"/bin/bash", "-c",
                  "if [ \"$RANK\" = 0 ]; then x=$(head -c 96000000 /dev/zero | tr '\\0' a); "
                  "echo held ${#x}; fi"});
  argv.insert(argv.begin() + 2, {"--report", report.string()});
  ChildProcess launcher(argv);
  const auto st = launcher.wait(60s);
  INFO(launcher.output());
  REQUIRE(st.has_value());
  REQUIRE(WEXITSTATUS(*st) == 0);
  CHECK_THAT(launcher.output(), Catch::Contains("held 96000000"));
  std::ifstream in(report);
  REQUIRE(in);
  const auto j = nlohmann::json::parse(in);
  INFO(j.dump());
  CHECK(j["exit"] == 0);
  std::map<std::string, nlohmann::json> by_label;
  for (const auto& p : j["processes"]) by_label[p["label"].get<std::string>()] = p;
  REQUIRE(by_label.size() == 4);  // 2 machines x (1 server + 1 trainer)
  for (const auto& [label, p] : by_label) {
    CHECK(p["status"] == "exited with status 0");
    CHECK(p["seconds"].get<double>() >= 0);
    CHECK(p["peak_rss_bytes"].get<std::int64_t>() > 0);
  }
  CHECK(by_label["server 0.0"]["server"] == true);
  CHECK(by_label["trainer 0.0"]["peak_rss_bytes"].get<std::int64_t>() >= 96'000'000);
  CHECK(by_label["trainer 1.0"]["peak_rss_bytes"].get<std::int64_t>() < 48'000'000);
}

TEST_CASE("a failing trainer stops the whole job and is named",
          "[integration][net][launch][fault]") {
  Job job(1);
  // Rank 1 fails at once; the others would run for a minute.
  ChildProcess launcher(job.launch(
      1, 2, {"/bin/sh", "-c", "if [ \"$RANK\" = 1 ]; then echo dying; exit 3; fi; exec sleep 60"}));
  const auto start = std::chrono::steady_clock::now();
  const auto st = launcher.wait(60s);
  INFO(launcher.output());
  REQUIRE(st.has_value());
  CHECK(WEXITSTATUS(*st) == 1);
  CHECK(std::chrono::steady_clock::now() - start < 30s);
  CHECK_THAT(launcher.output(), Catch::Contains("trainer 0.1"));
  CHECK_THAT(launcher.output(), Catch::Contains("exited with status 3"));
  CHECK(none_left(job.marker(), 10s));
}

TEST_CASE("SIGTERM and SIGKILL to the launcher leave no process behind",
          "[integration][net][launch][fault]") {
  const int sig = GENERATE(SIGTERM, SIGKILL);
  Job job(1);
  ChildProcess launcher(job.launch(1, 1, {"/bin/sh", "-c", "echo started; exec sleep 60"}));
  // Both trainers running means every process was started.
  REQUIRE(launcher.wait_for_line("[trainer 1.0] started", 60s));
  REQUIRE((launcher.output().find("[trainer 0.0] started") != std::string::npos ||
           launcher.wait_for_line("[trainer 0.0] started", 60s)));
  REQUIRE(processes_mentioning(job.marker()).size() >= 4);
  launcher.signal(sig);
  const auto st = launcher.wait(30s);
  REQUIRE(st.has_value());
  if (sig == SIGTERM) {
    CHECK(WIFEXITED(*st));
    CHECK(WEXITSTATUS(*st) == 128 + SIGTERM);
  }
  CHECK(none_left(job.marker(), 15s));
}

namespace {

/// The launch command with the launcher's default grace period (Job::launch shortens it).
std::vector<std::string> with_default_grace(std::vector<std::string> cmd) {
  const auto at = std::find(cmd.begin(), cmd.end(), "--grace-ms");
  if (at != cmd.end()) cmd.erase(at, at + 2);
  return cmd;
}

/// Reads the launcher's output until `count` trainers printed "started <pid>"; returns
/// each trainer label's pid ("trainer 1.0" -> pid).
std::map<std::string, int> started_trainers(ChildProcess& launcher, std::size_t count) {
  std::map<std::string, int> pids;
  static const std::regex re(R"(\[(trainer [0-9]+\.[0-9]+)\] started ([0-9]+))");
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (pids.size() < count && std::chrono::steady_clock::now() < deadline) {
    const auto line = launcher.read_line(1000ms);
    std::smatch m;
    if (line && std::regex_search(*line, m, re)) pids[m[1].str()] = std::stoi(m[2].str());
  }
  return pids;
}

}  // namespace

TEST_CASE("a killed trainer whose child ignores SIGTERM and holds its output ends the job",
          "[integration][net][launch][fault]") {
  // The reproduction from the hardening issue: the trainer's sh is SIGKILLed while its own
  // child (which ignores SIGTERM, as does the sh of every other trainer) keeps the trainer's
  // output pipe open. The job must end within 15 s with the default grace period.
  Job job(2);
  ChildProcess launcher(with_default_grace(
      job.launch(2, 2, {"/bin/sh", "-c", "trap '' TERM; echo started $$; sleep 300; true"})));
  const auto pids = started_trainers(launcher, 4);
  REQUIRE(pids.size() == 4);
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(::kill(pids.at("trainer 1.1"), SIGKILL) == 0);
  const auto st = launcher.wait(60s);
  const auto took = std::chrono::steady_clock::now() - start;
  INFO(launcher.output());
  REQUIRE(st.has_value());
  CHECK(WEXITSTATUS(*st) == 1);
  CHECK(took < 15s);
  CHECK_THAT(launcher.output(),
             Catch::Contains("trainer 1.1 (pid " + std::to_string(pids.at("trainer 1.1")) +
                             ") was killed by signal 9"));
  // The launcher returns once every tree is reaped: nothing is left even momentarily.
  CHECK(processes_mentioning(job.marker()).empty());
  CHECK(job.ports_closed(2));
}

TEST_CASE("SIGKILL to the launcher takes every descendant, in other sessions too",
          "[integration][net][launch][fault]") {
  Job job(1);
  // Each trainer leaves a grandchild that ignores SIGTERM and one in a session of its own
  // (outside the trainer's process group), then waits.
  ChildProcess launcher(with_default_grace(job.launch(
      1, 1,
      {"/bin/sh", "-c", "trap '' TERM; setsid sleep 301 & sleep 302 & echo started $$; wait"})));
  REQUIRE(started_trainers(launcher, 2).size() == 2);
  // 2 servers, 2 trainers, 4 grandchildren (and the keepers, which carry the launcher's
  // arguments).
  REQUIRE(processes_mentioning(job.marker()).size() >= 8);
  const auto start = std::chrono::steady_clock::now();
  launcher.signal(SIGKILL);
  REQUIRE(launcher.wait(30s).has_value());
  CHECK(none_left(job.marker(), 15s));
  CHECK(std::chrono::steady_clock::now() - start < 15s);
  CHECK(job.ports_closed(1));
}

TEST_CASE("a trainer that succeeds but leaves a child behind still ends the job cleanly",
          "[integration][net][launch][fault]") {
  Job job(1);
  ChildProcess launcher(with_default_grace(
      job.launch(1, 1, {"/bin/sh", "-c", "(trap '' TERM; exec sleep 303) & echo started $$"})));
  const auto start = std::chrono::steady_clock::now();
  const auto st = launcher.wait(60s);
  INFO(launcher.output());
  REQUIRE(st.has_value());
  CHECK(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);
  CHECK(std::chrono::steady_clock::now() - start < 15s);
  CHECK(processes_mentioning(job.marker()).empty());
}

TEST_CASE("launch refuses bad configurations with a message naming the problem",
          "[integration][launch][bad_input]") {
  Job job(1);
  SECTION("a malformed ip config names file and line") {
    std::ofstream(job.ip_path) << "127.0.0.1 30050\n127.0.0.1 port\n";
    ChildProcess l(job.launch(1, 1, {"/bin/true"}));
    const auto st = l.wait(30s);
    REQUIRE(st.has_value());
    CHECK(WEXITSTATUS(*st) == 1);
    CHECK_THAT(l.output(), Catch::Contains("ip_config.txt:2"));
  }
  SECTION("a duplicate machine entry") {
    std::ofstream(job.ip_path) << "127.0.0.1 30050\n127.0.0.1 30050\n";
    ChildProcess l(job.launch(1, 1, {"/bin/true"}));
    REQUIRE(l.wait(30s).value_or(0) != 0);
    CHECK_THAT(l.output(), Catch::Contains("collides with line 1"));
  }
  SECTION("a partition count that differs from the machine count") {
    distgraph::test::write_loopback_ip_config(job.ip_path, 3, 1).release();
    // The trainer outlives the failing server: a trainer that exited at once would have
    // the launcher stop the servers, racing the one about to report the mismatch.
    ChildProcess l(job.launch(1, 1, {"/bin/sleep", "60"}));
    const auto st = l.wait(60s);
    REQUIRE(st.has_value());
    CHECK(WEXITSTATUS(*st) == 1);
    CHECK_THAT(l.output(), Catch::Contains("2 partitions but"));
    CHECK(none_left(job.marker(), 10s));
  }
  SECTION("no program after --") {
    ChildProcess l({DISTGRAPH_CLI, "launch", "--ip-config", job.ip_path.string(), "--part-config",
                    job.config.string()});
    CHECK(WEXITSTATUS(l.wait(30s).value_or(0)) == 2);
  }
}

TEST_CASE("remote machines go through ssh: dry runs print the commands and start nothing",
          "[integration][launch]") {
  Job job(1);
  // 192.0.2.0/24 is TEST-NET-1: never this machine, never contacted (dry run only).
  std::ofstream(job.ip_path) << "127.0.0.1 30050\n192.0.2.7 30050\n";
  ChildProcess dry({DISTGRAPH_CLI, "launch", "--ip-config", job.ip_path.string(), "--part-config",
                    job.config.string(), "--servers", "2", "--dry-run", "--", "/bin/echo", "hi"});
  REQUIRE(dry.wait(30s).value_or(-1) == 0);
  const std::string out = dry.output();
  CHECK_THAT(out, Catch::Contains("[server 1.1] (ssh) 'ssh'"));
  CHECK_THAT(out, Catch::Contains("192.0.2.7"));
  CHECK_THAT(out, Catch::Contains("DISTGRAPH_MACHINE_ID=1"));
  CHECK_THAT(out, Catch::Contains("[trainer 0.0] 'DISTGRAPH_ROLE=trainer'"));
  CHECK(out.find("[server 0.0] (ssh)") == std::string::npos);
  CHECK(out.find("DISTGRAPH_NO_TLS") == std::string::npos);       // TLS unless asked otherwise
  CHECK(out.find("DISTGRAPH_SCHED_BATCH") == std::string::npos);  // the default needs none
  // TLS settings reach every server and trainer, as paths.
  ChildProcess certs({DISTGRAPH_CLI, "launch", "--ip-config", job.ip_path.string(), "--part-config",
                      job.config.string(), "--tls-cert", "/etc/dg/node.crt", "--tls-key",
                      "/etc/dg/node.key", "--tls-ca", "/etc/dg/ca.crt", "--dry-run", "--",
                      "/bin/echo", "hi"});
  REQUIRE(certs.wait(30s).value_or(-1) == 0);
  for (const char* who : {"[server 1.0]", "[trainer 1.0]", "[server 0.0]"}) {
    const auto line = certs.output().find(who);
    REQUIRE(line != std::string::npos);
    const std::string text = certs.output().substr(line, certs.output().find('\n', line) - line);
    CHECK_THAT(text, Catch::Contains("DISTGRAPH_TLS_CERT=/etc/dg/node.crt") &&
                         Catch::Contains("DISTGRAPH_TLS_CA=/etc/dg/ca.crt"));
  }
  ChildProcess plain({DISTGRAPH_CLI, "launch", "--ip-config", job.ip_path.string(), "--part-config",
                      job.config.string(), "--no-tls", "--dry-run", "--", "/bin/echo", "hi"});
  REQUIRE(plain.wait(30s).value_or(-1) == 0);
  CHECK_THAT(plain.output(), Catch::Contains("DISTGRAPH_NO_TLS=1"));
  // DISTGRAPH_SCHED_BATCH=0 in the launching shell reaches every process, remote ones too.
  ::setenv("DISTGRAPH_SCHED_BATCH", "0", 1);
  ChildProcess unbatched({DISTGRAPH_CLI, "launch", "--ip-config", job.ip_path.string(),
                          "--part-config", job.config.string(), "--dry-run", "--", "/bin/echo",
                          "hi"});
  ::unsetenv("DISTGRAPH_SCHED_BATCH");
  REQUIRE(unbatched.wait(30s).value_or(-1) == 0);
  for (const char* who : {"[server 1.0]", "[trainer 1.0]", "[server 0.0]", "[trainer 0.0]"}) {
    const std::string& o = unbatched.output();
    const auto line = o.find(who);
    REQUIRE(line != std::string::npos);
    CHECK_THAT(o.substr(line, o.find('\n', line) - line),
               Catch::Contains("DISTGRAPH_SCHED_BATCH=0"));
  }
  ChildProcess copy({DISTGRAPH_CLI, "copy", "--ip-config", job.ip_path.string(), "--part-config",
                     job.config.string(), "--workspace", "/srv/job", "--dry-run"});
  REQUIRE(copy.wait(30s).value_or(-1) == 0);
  CHECK_THAT(copy.output(), Catch::Contains("192.0.2.7:/srv/job/part1/"));
  CHECK(copy.output().find("part0") == std::string::npos);
}

TEST_CASE("a trainer whose servers never come up fails within its connect deadline",
          "[integration][net][fault]") {
  Job job(1);
  const auto start = std::chrono::steady_clock::now();
  ChildProcess trainer({DISTGRAPH_EXAMPLE_CHECKSUM},
                       {"DISTGRAPH_ROLE=trainer", "DISTGRAPH_IP_CONFIG=" + job.ip_path.string(),
                        "DISTGRAPH_PART_CONFIG=" + job.config.string(),
                        "DISTGRAPH_CONNECT_TIMEOUT_MS=1500", "RANK=0", "WORLD_SIZE=2"});
  const auto st = trainer.wait(30s);
  REQUIRE(st.has_value());
  CHECK(WEXITSTATUS(*st) == 1);
  CHECK(std::chrono::steady_clock::now() - start < 15s);
  CHECK_THAT(trainer.output(), Catch::Contains("127.0.0.1"));
}

#else
TEST_CASE("launch tests need the distgraph program and the examples", "[integration]") {
  WARN("SKIPPED: built without DISTGRAPH_BUILD_TOOLS or DISTGRAPH_BUILD_EXAMPLES");
}
#endif

TEST_CASE("the trainers' meeting port is never one of the servers' ports", "[runtime]") {
  // The servers listen only once launched, so the system may offer one of their ports as
  // free: give the servers every port it hands out, and no port may come back.
  if (std::getenv("MASTER_PORT") != nullptr) {
    WARN("SKIPPED: MASTER_PORT is set, and it wins over any port found free");
    return;
  }
  int lo = 32768, hi = 60999;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> lo >> hi;
  LaunchOptions o;
  o.servers = hi - lo + 1;
  const IpConfig all =
      parse_ip_config("127.0.0.1 " + std::to_string(lo) + "\n", "ip.txt", o.servers);
  CHECK_THROWS_AS(detail::master_port(o, all), IoError);
  o.servers = 1;
  const IpConfig one = parse_ip_config("127.0.0.1 " + std::to_string(lo) + "\n", "ip.txt", 1);
  const int port = std::stoi(detail::master_port(o, one));
  CHECK(port > 0);
  CHECK(port != lo);
}

}  // namespace test_runtime_launcher

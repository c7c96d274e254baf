// Every file the programs publish is written durably (core/durable_file.hpp): the
// temporary file fsynced before it is renamed into place, and the folder fsynced after,
// so a machine that loses power finds the previous file or the whole new one. Checked on
// the real programs under strace, every writer of a training job at once: the partition
// (npy files, part folders, the config written last), the servers' shared-memory tensors
// and ready marker, the run log, the checkpoint, the trace, the launcher's report, and
// the inference output.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "distgraph/partition/load_partition.hpp"
#include "support/child_process.hpp"
#include "support/free_port.hpp"
#include "support/machine_storage.hpp"
#include "support/program_run.hpp"
#include "support/temp_dir.hpp"

namespace test_integration_durable_writes {

using namespace std::chrono_literals;
using distgraph::test::ChildProcess;
using distgraph::test::ProgramRun;
using distgraph::test::TempDir;
namespace fs = std::filesystem;

#ifdef DISTGRAPH_CLI

namespace {

constexpr const char* strace = "/usr/bin/strace";

/// One rename the traced program made, and whether the fsyncs around it were there.
struct Publish {
  std::string from, to;
  bool synced_before = false;  ///< the same process fsynced `from` before the rename
  bool folder_after = false;   ///< ... and the folder of `to` after it
};

std::string folder_of(const std::string& p) { return fs::path(p).parent_path().string(); }

/// The successful renames in an `strace -f -y` log, each with its fsyncs checked.
std::vector<Publish> publishes(const fs::path& log) {
  static const std::regex sync_re(R"re(^(\d+)\s+f(?:data)?sync\(\d+<([^>]*)>)re");
  static const std::regex rename_re(
      R"re(^(\d+)\s+rename(?:at2?)?\((?:AT_FDCWD(?:<[^>]*>)?, )?"([^"]*)", )re"
      R"re((?:AT_FDCWD(?:<[^>]*>)?, )?"([^"]*)")re");
  static const std::regex resumed_re(R"re(^(\d+)\s+<\.\.\. rename(?:at2?)? resumed>.*= 0\s*$)re");
  std::ifstream in(log);
  std::vector<Publish> out;
  std::map<std::string, std::set<std::string>> synced;  // pid -> paths fsynced so far
  std::map<std::string, std::vector<std::size_t>>
      open;  // pid -> its renames awaiting a folder sync
  std::map<std::string, Publish> pending;                // pid -> a rename not yet returned
  const auto accept = [&](const std::string& pid, Publish p) {
    p.synced_before = synced[pid].count(p.from) > 0;
    open[pid].push_back(out.size());
    out.push_back(std::move(p));
  };
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, sync_re)) {
      const std::string pid = m[1], path = m[2];
      synced[pid].insert(path);
      for (const std::size_t i : open[pid])
        if (folder_of(out[i].to) == path) out[i].folder_after = true;
    } else if (std::regex_search(line, m, rename_re)) {
      Publish p{.from = m[2], .to = m[3]};
      if (line.find("<unfinished ...>") != std::string::npos)
        pending[m[1]] = p;
      else if (line.find(") = 0") != std::string::npos)
        accept(m[1], p);
    } else if (std::regex_search(line, m, resumed_re) && pending.count(m[1]) > 0) {
      accept(m[1], pending[m[1]]);
      pending.erase(m[1]);
    }
  }
  return out;
}

/// Runs `argv` under strace (fsync, fdatasync and renames of it and its children, with
/// descriptors' paths) to its end, the log in `log`.
ProgramRun traced(const fs::path& log, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {strace, "-f", "-y", "-qq", "--seccomp-bpf", "-e", "signal=none", "-e",
                             "trace=fsync,fdatasync,rename,renameat,renameat2", "-o",
                             log.string()});
  return distgraph::test::run_program(argv, 240s);
}

}  // namespace

TEST_CASE(
    "every file a training job publishes is fsynced before its rename and its folder after "
    "(partition, servers' tensors and marker, run log, checkpoint, trace, report, inference)",
    "[integration][durable]") {
  if (::access(strace, X_OK) != 0) {
    WARN("SKIPPED: no " << strace << " (package strace)");
    return;
  }
  const TempDir tmp;
  const fs::path run = tmp / "run";
  // Training on a loopback cluster of the built-in SBM graph, partitioned into the run.
  const ProgramRun train = traced(tmp / "train.log", {DISTGRAPH_CLI, "train", "--epochs", "2",
                                                      "--out", run.string(), "--trace",
                                                      (tmp / "trace.json").string()});
  INFO(train.output);
  REQUIRE(train.exit_code == 0);
  fs::path config;
  for (const auto& e : fs::directory_iterator(run / "partition"))
    if (e.path().extension() == ".json") config = e.path();
  REQUIRE(!config.empty());
  // Inference on the trained model, standalone.
  const ProgramRun infer =
      traced(tmp / "infer.log", {DISTGRAPH_CLI, "infer", "--checkpoint", run.string(),
                                 "--part-config", config.string(), "--standalone", "--out",
                                 (tmp / "emb").string()});
  INFO(infer.output);
  REQUIRE(infer.exit_code == 0);
  // A launch with a process report (the trainers do nothing; the servers load and serve).
  const auto bases = distgraph::test::write_loopback_ip_config(tmp / "ip.txt", 2, 1).bases;
  const ProgramRun launch = traced(
      tmp / "launch.log", {DISTGRAPH_CLI, "launch", "--ip-config", (tmp / "ip.txt").string(),
                           "--part-config", config.string(), "--report",
                           (tmp / "report.json").string(), "--", "/bin/true"});
  distgraph::test::remove_machine_storage(config.stem().string(), bases);
  INFO(launch.output);
  REQUIRE(launch.exit_code == 0);

  std::set<std::string> seen;  // the published names, for the coverage check below
  for (const char* log : {"train.log", "infer.log", "launch.log"}) {
    for (const Publish& p : publishes(tmp / log)) {
      INFO(log << ": rename " << p.from << " -> " << p.to);
      // A folder moved into place holds files published durably into it; the move itself
      // needs the folder sync.
      const bool folder = fs::is_directory(p.to);
      CHECK((p.synced_before || folder));
      CHECK(p.folder_after);
      seen.insert(fs::path(p.to).filename().string());
      if (p.to.rfind("/dev/shm/", 0) == 0 && fs::path(p.to).extension() == ".npy")
        seen.insert("(a shared-memory tensor)");
    }
  }
  for (const std::string& name :
       {config.filename().string(), std::string("part0"), std::string("metrics.csv"),
        std::string("checkpoint.pt"), std::string("result.json"), std::string("trace.json"),
        std::string("READY"), std::string("(a shared-memory tensor)"), std::string("report.json"),
        std::string("infer.json"), std::string("embeddings.npy")}) {
    INFO("published: " << name);
    CHECK(seen.count(name) == 1);
  }
}

TEST_CASE(
    "a partitioning SIGKILLed at any point leaves a complete partition or an 'incomplete' "
    "error, never a torn one, and the next run leaves no staging folder behind",
    "[integration][durable]") {
  using Clock = std::chrono::steady_clock;
  const TempDir tmp;
  const fs::path out = tmp / "part";
  const fs::path config = out / "sbm.json";
  const std::vector<std::string> argv{DISTGRAPH_CLI, "partition", "--input", "sbm", "--name",
                                      "sbm",         "--parts",   "2",       "--out", out.string()};
  // One undisturbed run: the reference, and its time spreads the kill points over a run.
  const auto t0 = Clock::now();
  const ProgramRun whole = distgraph::test::run_program(argv, 120s);
  const auto run_us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
  INFO(whole.output);
  REQUIRE(whole.exit_code == 0);
  std::int64_t reference[2];
  for (int p = 0; p < 2; ++p) reference[p] = distgraph::load_partition(config, p).num_inner_nodes;
  constexpr int iterations = 16;
  int complete = 0, incomplete = 0;
  for (int i = 0; i < iterations; ++i) {
    ChildProcess job(argv);
    // The kill point: spread evenly over an undisturbed run's time (start-up included).
    ::usleep(static_cast<useconds_t>(run_us.count() * (2 * i + 1) / (2 * iterations)));
    job.signal(SIGKILL);
    REQUIRE(job.wait(30s).has_value());
    try {
      for (int p = 0; p < 2; ++p) {
        const std::int64_t owned = distgraph::load_partition(config, p).num_inner_nodes;
        CHECK(owned == reference[p]);
      }
      ++complete;
    } catch (const distgraph::IoError& e) {
      INFO("kill " << i << ": " << e.what());
      CHECK_THAT(e.what(), Catch::Contains("incomplete partition"));
      ++incomplete;
    }
  }
  CHECK(complete + incomplete == iterations);
  std::printf("durable: %d kills left a complete partition, %d an 'incomplete' error\n", complete,
              incomplete);
  // A run after the kills cleans what they left.
  REQUIRE(distgraph::test::run_program(argv, 120s).exit_code == 0);
  for (const auto& e : fs::directory_iterator(out)) {
    INFO(e.path());
    CHECK(e.path().filename().string().rfind(".staging-", 0) != 0);
  }
}

#else
TEST_CASE("durable-write tests need the distgraph program", "[integration][durable]") {
  WARN("SKIPPED: built without the distgraph program");
}
#endif

}  // namespace test_integration_durable_writes

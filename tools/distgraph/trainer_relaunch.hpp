// How `distgraph train` and `distgraph infer` run distributed on one computer: the command
// starts a loopback cluster whose trainers are this program again, in the trainer role,
// and reads back the result file their rank 0 writes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "cli.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/runtime/launcher.hpp"
#include "distgraph/runtime/loopback_cluster.hpp"
#include "run_command.hpp"

namespace distgraph::cli {

/// True in a process the launcher started (DISTGRAPH_ROLE is set): a launched run's server
/// or trainer, not the user's command.
inline bool launched_in_a_role() {
  const char* role = std::getenv("DISTGRAPH_ROLE");
  return role != nullptr && *role != '\0';
}

/// Servers and trainers per loopback machine (--servers, --trainers).
struct LoopbackSize {
  std::int32_t servers = 1, trainers = 1;
};

/// --servers and --trainers, checked (UsageError naming the flag otherwise).
inline LoopbackSize loopback_size(const Args& args) {
  return {static_cast<std::int32_t>(args.get_int("servers", 1, 1, 64)),
          static_cast<std::int32_t>(args.get_int("trainers", 1, 1, 1024))};
}

/// Throws UsageError when --standalone comes with --servers or --trainers: a standalone run
/// has neither. `command` ("train", "infer") opens the message.
inline void check_standalone_size(const Args& args, const std::string& command) {
  if (args.has("standalone") && (args.has("servers") || args.has("trainers")))
    throw UsageError(command +
                     ": --servers and --trainers need a distributed run (drop --standalone)");
}

/// What relaunch_as_trainers needs besides the cluster's launch options.
struct TrainerRelaunch {
  std::string command;                    // "train" or "infer": names the failed run
  std::vector<std::string> trainer_args;  // the trainers' arguments after this program's path
  std::filesystem::path out;              // processes.json and the result file go here
  std::string result_file;                // what rank 0 writes last, in `out`
  bool json = false;                      // stdout carries JSON only (processes: stderr)
  bool out_kept = false;                  // a failure leaves `out` for the user to read
};

/// How a relaunch ended: the launcher's exit status and, when 0, the result file's object.
struct RelaunchResult {
  int exit_code = 0;
  nlohmann::json result;
};

/// Runs the job `lo` describes (loopback_launch's cluster plus the command's own settings)
/// with `distgraph serve` as every server and this program, given `r.trainer_args`, as
/// every trainer. Blocks until every process ends. When the launch fails, prints one line
/// to stderr and returns its exit status; otherwise returns the result file the trainers
/// wrote during this run (IoError when there is none, or only an older one).
inline RelaunchResult relaunch_as_trainers(LaunchOptions lo, const TrainerRelaunch& r) {
  namespace fs = std::filesystem;
  lo.distgraph_program = sibling_program("distgraph");  // servers: no libtorch to load
  lo.report = r.out / "processes.json";                 // each process's time and peak RSS
  lo.program = {self_program()};
  lo.program.insert(lo.program.end(), r.trainer_args.begin(), r.trainer_args.end());
  const auto started = fs::file_time_type::clock::now();
  // With --json stdout carries only JSON lines: the processes' output goes to stderr.
  const int rc = distgraph::run_launch(lo, r.json ? stderr : stdout);
  if (rc != 0) {
    const std::string kept = r.out_kept ? "; " + r.out.string() + " kept" : "";
    std::fprintf(stderr, "distgraph %s: the distributed run failed (see above)%s\n",
                 r.command.c_str(), kept.c_str());
    return {rc, {}};
  }
  const fs::path file = r.out / r.result_file;
  std::error_code ec;
  const auto written = fs::last_write_time(file, ec);
  std::ifstream rf(file);
  if (ec || written < started || !rf) throw IoError(file.string(), "the trainers wrote no result");
  return {0, nlohmann::json::parse(rf)};
}

}  // namespace distgraph::cli

// `distgraph launch` and `distgraph copy`: start a job on the machines of an ip config,
// and put each remote machine's partition files in place; `distgraph lease`, the launch's
// remote end.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "distgraph/runtime/copy.hpp"
#include "distgraph/runtime/launcher.hpp"
#include "distgraph/runtime/lease.hpp"
#include "run_command.hpp"
#include "tls_flags.hpp"

namespace distgraph::cli {

namespace {

/// Removes "--" and everything after it from `argv` and returns what followed: a program
/// and its arguments, untouched by our parser.
std::vector<std::string> split_program(std::vector<std::string>& argv) {
  std::vector<std::string> program;
  for (std::size_t i = 0; i < argv.size(); ++i)
    if (argv[i] == "--") {
      program.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
      argv.resize(i);
      break;
    }
  return program;
}

}  // namespace

int run_launch(std::vector<std::string> argv) {
  std::vector<std::string> program = split_program(argv);
  Args args("launch", std::move(argv));
  args.option("ip-config", "the cluster's ip_config.txt (machine i serves partition i)")
      .option("part-config", "the partition config (<name>.json)")
      .option("servers", "servers per machine: 1 main + backups (default 1)")
      .option("trainers", "trainer processes per machine (default 1)")
      .option("workspace", "working folder of every process (default: the current one)")
      .option("secret-file", "file with the shared secret servers require (chmod 600)")
      .option("checkpoint-dir",
              "servers' checkpoint folder, on each machine (default: serve's default)")
      .option("server-program",
              "run this program (with the trainer command's arguments) as every server "
              "instead of `distgraph serve`: a program built with its own composition")
      .option("ssh", "program used to reach remote machines (default ssh)")
      .option("trace",
              "every process records its timeline; merged at the end into this Chrome "
              "trace-event file (Perfetto, chrome://tracing)")
      .option("lease-ms",
              "remote machines: their processes stop this long after the launcher's last "
              "heartbeat, and the launcher gives a silent machine up (default 12000)")
      .option("gloo-interface",
              "network interface of the trainers' gradient group (GLOO_SOCKET_IFNAME; "
              "default: each machine's address in the ip config)")
      .option("grace-ms", "SIGTERM to SIGKILL grace period in ms (default 5000)")
      .option("report",
              "write a JSON summary of every process here at the end (exit status, seconds, "
              "peak RSS)")
      .flag("dry-run", "print every command with its environment and start nothing");
  add_tls_flags(args);
  args.parse(0);
  if (args.help()) {
    args.print_help(
        "distgraph launch --ip-config F --part-config C [--servers S] [--trainers T]\n"
        "                 [--workspace DIR] [--secret-file P] [--server-program P]\n"
        "                 [--no-tls | --tls-cert F --tls-key F --tls-ca F]\n"
        "                 [--lease-ms L] [--gloo-interface IF] [--report FILE] [--dry-run]\n"
        "                 -- PROGRAM ARGS...");
    return 0;
  }
  LaunchOptions o;
  const auto ip = args.get("ip-config");
  const auto part = args.get("part-config");
  if (!ip) throw UsageError("launch: --ip-config is required (see --help)");
  if (!part) throw UsageError("launch: --part-config is required (see --help)");
  if (program.empty()) throw UsageError("launch: no trainer program; put it after '--'");
  o.ip_config = *ip;
  o.part_config = *part;
  o.servers = static_cast<std::int32_t>(args.get_int("servers", 1, 1, 64));
  o.trainers = static_cast<std::int32_t>(args.get_int("trainers", 1, 1, 1024));
  o.workspace = args.get_or("workspace", "");
  o.secret_file = args.get_or("secret-file", "");
  o.checkpoint_dir = args.get_or("checkpoint-dir", "");
  o.ssh = args.get_or("ssh", "ssh");
  o.server_program = args.get_or("server-program", "");
  o.grace = std::chrono::milliseconds(args.get_int("grace-ms", 5000, 0, 600'000));
  o.lease = std::chrono::milliseconds(args.get_int("lease-ms", 12000, 1000, 3'600'000));
  o.gloo_interface = args.get_or("gloo-interface", "");
  o.dry_run = args.has("dry-run");
  o.report = args.get_or("report", "");
  o.trace = args.get_or("trace", "");
  o.distgraph_program = self_program();
  o.program = std::move(program);
  o.tls = tls_from_flags(args);
  // Certificates are read here too (the launcher asks the servers to stop): fail early.
  if (tls_mode(o.tls, "") == TlsMode::certificates && !o.dry_run)
    detail::TlsContext(TlsMode::certificates, false, o.tls, "");
  if (!o.secret_file.empty()) read_secret_file(o.secret_file);  // fail early, clearly
  return distgraph::run_launch(o);
}

int run_copy(std::vector<std::string> argv) {
  Args args("copy", std::move(argv));
  args.option("ip-config", "the cluster's ip_config.txt")
      .option("part-config", "the partition config (<name>.json)")
      .option("workspace", "folder on every remote machine to copy into")
      .option("ssh", "ssh program (default ssh)")
      .option("rsync", "rsync program (default rsync)")
      .flag("dry-run", "print the commands and run nothing");
  args.parse(0);
  if (args.help()) {
    args.print_help("distgraph copy --ip-config F --part-config C --workspace DIR [--dry-run]");
    return 0;
  }
  CopyOptions o;
  const auto ip = args.get("ip-config");
  const auto part = args.get("part-config");
  const auto ws = args.get("workspace");
  if (!ip) throw UsageError("copy: --ip-config is required (see --help)");
  if (!part) throw UsageError("copy: --part-config is required (see --help)");
  if (!ws) throw UsageError("copy: --workspace is required (see --help)");
  o.ip_config = *ip;
  o.part_config = *part;
  o.workspace = *ws;
  o.ssh = args.get_or("ssh", "ssh");
  o.rsync = args.get_or("rsync", "rsync");
  o.dry_run = args.has("dry-run");
  const auto n = distgraph::run_copy(o);
  std::fprintf(stderr, "distgraph copy: %zu command(s)%s\n", n, o.dry_run ? " (dry run)" : "");
  return 0;
}

int run_lease(std::vector<std::string> argv) {
  std::vector<std::string> program = split_program(argv);
  Args args("lease", std::move(argv));
  args.option("lease-ms", "stop the program after this long without a heartbeat (default 12000)")
      .option("grace-ms", "SIGTERM to SIGKILL grace period in ms (default 5000)")
      .option("label", "the process's name in messages (e.g. 'server 1.0')");
  args.parse(0);
  if (args.help()) {
    args.print_help(
        "distgraph lease [--lease-ms L] [--grace-ms G] [--label NAME] -- PROGRAM ARGS...\n"
        "  (the launcher runs it on remote machines; heartbeats are bytes on stdin)");
    return 0;
  }
  if (program.empty()) throw UsageError("lease: no program; put it after '--'");
  LeaseOptions o;
  o.program = std::move(program);
  o.lease = std::chrono::milliseconds(args.get_int("lease-ms", 12000, 100, 3'600'000));
  o.grace = std::chrono::milliseconds(args.get_int("grace-ms", 5000, 0, 600'000));
  o.label = args.get_or("label", "");
  return distgraph::run_lease(o);
}

}  // namespace distgraph::cli

// distgraph copy: puts each remote machine's partition files into its workspace.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/partition/partition_config.hpp"
#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/runtime/launcher.hpp"

namespace distgraph {

struct CopyOptions {
  std::filesystem::path ip_config, part_config, workspace;
  bool dry_run = false;
  std::string ssh = "ssh", rsync = "rsync";
};

/// The commands that copy, for every machine that is not this computer, the partition
/// config, the ip config and that machine's `part<m>/` folder (only those: a machine
/// never receives other partitions) into `workspace` on it, keeping the file names.
/// Throws FormatError/IoError for unreadable configs.
inline std::vector<std::vector<std::string>> plan_copy(const CopyOptions& o) {
  if (o.workspace.empty()) throw InvalidArgument("copy: --workspace is required");
  const IpConfig ip = read_ip_config(o.ip_config);
  const PartitionConfig cfg = read_partition_config(o.part_config);
  if (cfg.num_parts != ip.num_machines())
    throw PartitionError(o.part_config.string() + ": " + std::to_string(cfg.num_parts) +
                         " partitions but " + o.ip_config.string() + " lists " +
                         std::to_string(ip.num_machines()) + " machines");
  const auto dir = o.part_config.parent_path().empty() ? std::filesystem::path(".")
                                                       : o.part_config.parent_path();
  const std::string ws = o.workspace.string();
  std::vector<std::vector<std::string>> cmds;
  for (std::int32_t m = 0; m < ip.num_machines(); ++m) {
    const auto& host = ip.machines[static_cast<std::size_t>(m)].ip;
    if (is_local_address(host)) continue;
    const std::string part = "part" + std::to_string(m);
    const std::string target =
        (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":";
    // A host that does not answer fails here, within ssh's ConnectTimeout.
    cmds.push_back({o.ssh, "-o", "BatchMode=yes", "-o",
                    "ConnectTimeout=" + std::to_string(detail::remote_connect_timeout.count()),
                    host, "mkdir -p " + shell_quote(ws + "/" + part)});
    cmds.push_back(
        {o.rsync, "-a", o.part_config.string(), o.ip_config.string(), target + ws + "/"});
    cmds.push_back(
        {o.rsync, "-a", "--delete", (dir / part).string() + "/", target + ws + "/" + part + "/"});
  }
  return cmds;
}

/// Runs (or with dry_run prints) plan_copy's commands one by one; the first failure
/// throws IoError naming the command and its exit status. Returns the number of
/// commands.
inline std::size_t run_copy(const CopyOptions& o, std::FILE* out = stdout) {
  const auto cmds = plan_copy(o);
  for (const auto& c : cmds) {
    std::string line;
    for (const auto& a : c) {
      if (!line.empty()) line += ' ';
      line += shell_quote(a);
    }
    std::fprintf(out, "%s\n", line.c_str());
    std::fflush(out);
    if (o.dry_run) continue;
    const pid_t pid = ::fork();
    if (pid < 0) throw IoError("fork", std::strerror(errno));
    if (pid == 0) {
      std::vector<char*> args;
      for (const auto& a : c) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
      ::_exit(127);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
      throw IoError(c[0], "'" + line + "' " + detail::describe_status(st));
  }
  return cmds.size();
}

}  // namespace distgraph

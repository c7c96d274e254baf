// `distgraph serve`: one server process of a cluster machine (what the launcher starts).

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli.hpp"
#include "distgraph/core/memory.hpp"
#include "distgraph/runtime/environment.hpp"
#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/runtime/secret.hpp"
#include "distgraph/runtime/server_process.hpp"
#include "tls_flags.hpp"

namespace distgraph::cli {

int run_serve(std::vector<std::string> argv) {
  retain_freed_memory();  // each request's frames are allocated and freed
  Args args("serve", std::move(argv));
  args.option("ip-config", "the cluster's ip_config.txt (machine i serves partition i)")
      .option("part-config", "the partition config (<name>.json)")
      .option("machine", "this machine's index in the ip config")
      .option("server-id", "0 = main server (loads the data), 1.. = backup servers (default 0)")
      .option("servers", "servers on this machine (default 1)")
      .option("trainers", "trainers in the whole job (sizes the barrier threads; default 1)")
      .option("bind", "address to listen on (default: the machine's address in the ip config)")
      .option("storage-dir", "folder the machine's servers share (default under /dev/shm)")
      .option("secret-file", "file holding the shared secret clients must prove")
      .option("checkpoint-dir",
              "folder where trainers' save requests write this server's rows "
              "(default ./distgraph-checkpoints)")
      .option("threads", "handler threads (default: all cores, at least 2)");
  add_tls_flags(args);
  args.parse(0);
  if (args.help()) {
    args.print_help(
        "distgraph serve --ip-config F --part-config C --machine M [--server-id S] [--servers N]\n"
        "                [--secret-file P] [--no-tls | --tls-cert F --tls-key F --tls-ca F]");
    return 0;
  }
  const auto ip = args.get("ip-config");
  const auto part = args.get("part-config");
  if (!ip) throw UsageError("serve: --ip-config is required (see --help)");
  if (!part) throw UsageError("serve: --part-config is required (see --help)");
  if (!args.has("machine")) throw UsageError("serve: --machine is required (see --help)");
  ServeOptions o;
  o.tls = tls_from_flags(args);
  o.num_servers = static_cast<std::int32_t>(args.get_int("servers", 1, 1, 64));
  o.ip_config = read_ip_config(*ip, o.num_servers);
  o.part_config = *part;
  o.machine = static_cast<std::int32_t>(args.get_int("machine", 0, 0, 1 << 20));
  o.server_id = static_cast<std::int32_t>(args.get_int("server-id", 0, 0, o.num_servers - 1));
  o.num_trainers = static_cast<std::int32_t>(args.get_int("trainers", 1, 1, 1 << 16));
  o.bind_address = args.get_or("bind", "");
  o.storage_dir = args.get_or("storage-dir", "");
  o.checkpoint_dir = args.get_or("checkpoint-dir", "distgraph-checkpoints");
  o.io_threads = static_cast<unsigned>(args.get_int("threads", 0, 0, 1024));
  read_sched_batch_environment();  // a malformed DISTGRAPH_SCHED_BATCH fails here, named
  std::string secret_file = args.get_or("secret-file", "");
  if (secret_file.empty())
    if (const char* env = std::getenv("DISTGRAPH_SECRET_FILE")) secret_file = env;
  if (!secret_file.empty()) o.secret = read_secret_file(secret_file);

  serve_until_stopped(std::move(o));
  return 0;
}

}  // namespace distgraph::cli

// The process's role and place in a job, read from environment variables.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/thread_priority.hpp"
#include "distgraph/transport/tls.hpp"

namespace distgraph {

/// What a process of a job is.
enum class Role { standalone, server, trainer };

/// Settings a launcher (or scheduler) passes through the environment; see
/// docs/RUNTIME.md for the variables and which source of ranks wins.
struct Environment {
  Role role = Role::standalone;
  std::filesystem::path ip_config, part_config, secret_file;
  /// DISTGRAPH_NO_TLS=1, DISTGRAPH_TLS_CERT, DISTGRAPH_TLS_KEY, DISTGRAPH_TLS_CA
  /// (read_tls_environment).
  TlsOptions tls;
  std::filesystem::path checkpoint_dir;  ///< server role: DISTGRAPH_CHECKPOINT_DIR
  std::int32_t machine_id = 0;
  std::int32_t server_id = 0;
  std::int32_t num_servers = 1;   ///< per machine
  std::int32_t num_trainers = 1;  ///< per machine
  std::int32_t rank = 0, world_size = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  std::int32_t master_port = 0;
  std::string rank_source = "default";  ///< "RANK", "OMPI", "SLURM" or "default"
  /// DISTGRAPH_SCHED_BATCH (0 or 1, default 1): the threads distgraph starts to serve a
  /// training step run under SCHED_BATCH (schedule_as_batch, core/thread_priority.hpp,
  /// which reads the variable itself; here it is validated).
  bool sched_batch = true;
};

namespace detail {
inline std::optional<std::string> env_text(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}
inline std::optional<std::int32_t> env_int(const char* name, std::int32_t lo, std::int32_t hi) {
  const auto t = env_text(name);
  if (!t) return std::nullopt;
  std::size_t used = 0;
  long v = 0;
  try {
    v = std::stol(*t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != t->size() || v < lo || v > hi)
    throw InvalidArgument(std::string("environment variable ") + name + "='" + *t +
                          "'; expected an integer in [" + std::to_string(lo) + ", " +
                          std::to_string(hi) + "]");
  return static_cast<std::int32_t>(v);
}

/// One family of rank variables and who sets them; the first family whose rank variable
/// is set decides (docs/RUNTIME.md, "Which rank wins").
struct RankSource {
  const char *rank, *size, *local, *name, *set_by;
};
inline constexpr RankSource rank_sources[] = {
    {"RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK", "torchrun or distgraph launch"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI",
     "mpirun"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM", "srun"}};
}  // namespace detail

/// TLS settings from DISTGRAPH_NO_TLS (1 = plaintext), DISTGRAPH_TLS_CERT, DISTGRAPH_TLS_KEY
/// and DISTGRAPH_TLS_CA (docs/RUNTIME.md, "TLS"). Throws InvalidArgument for a
/// DISTGRAPH_NO_TLS other than 0 or 1.
inline TlsOptions read_tls_environment() {
  TlsOptions t;
  if (const auto v = detail::env_text("DISTGRAPH_NO_TLS")) {
    if (*v != "0" && *v != "1")
      throw InvalidArgument("environment variable DISTGRAPH_NO_TLS='" + *v + "'; expected 0 or 1");
    t.enabled = *v == "0";
  }
  if (auto v = detail::env_text("DISTGRAPH_TLS_CERT")) t.cert_file = *v;
  if (auto v = detail::env_text("DISTGRAPH_TLS_KEY")) t.key_file = *v;
  if (auto v = detail::env_text("DISTGRAPH_TLS_CA")) t.ca_file = *v;
  return t;
}

/// DISTGRAPH_SCHED_BATCH: 0 = every thread distgraph would put under SCHED_BATCH (servers'
/// socket and handler threads, clients' I/O threads, prefetch threads asked to) keeps the
/// policy of the thread that started it; 1 or unset = SCHED_BATCH. schedule_as_batch()
/// honours it in any process; this validates it. Throws InvalidArgument for another value.
inline bool read_sched_batch_environment() {
  const auto v = detail::env_text(sched_batch_variable);
  if (!v) return true;
  if (*v != "0" && *v != "1")
    throw InvalidArgument("environment variable DISTGRAPH_SCHED_BATCH='" + *v +
                          "'; expected 0 or 1");
  return *v == "1";
}

/// `t` as the environment read_tls_environment() reads ("NAME=value" entries, only those
/// that differ from the default), for a child process. Paths travel, never keys.
inline std::vector<std::string> tls_environment(const TlsOptions& t) {
  std::vector<std::string> env;
  if (!t.enabled) env.push_back("DISTGRAPH_NO_TLS=1");
  if (!t.cert_file.empty()) env.push_back("DISTGRAPH_TLS_CERT=" + t.cert_file.string());
  if (!t.key_file.empty()) env.push_back("DISTGRAPH_TLS_KEY=" + t.key_file.string());
  if (!t.ca_file.empty()) env.push_back("DISTGRAPH_TLS_CA=" + t.ca_file.string());
  return env;
}

/// Reads the environment. Ranks: RANK/WORLD_SIZE/LOCAL_RANK (distgraph launch, torchrun)
/// win over OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK (mpirun), which win over
/// SLURM_PROCID/NTASKS/LOCALID (srun). Throws InvalidArgument naming a variable with a
/// malformed value, or an unknown DISTGRAPH_ROLE.
inline Environment read_environment() {
  using detail::env_int;
  using detail::env_text;
  Environment e;
  if (const auto role = env_text("DISTGRAPH_ROLE")) {
    if (*role == "server")
      e.role = Role::server;
    else if (*role == "trainer")
      e.role = Role::trainer;
    else if (*role == "standalone")
      e.role = Role::standalone;
    else
      throw InvalidArgument("environment variable DISTGRAPH_ROLE='" + *role +
                            "'; expected server, trainer or standalone");
  }
  if (auto v = env_text("DISTGRAPH_IP_CONFIG")) e.ip_config = *v;
  if (auto v = env_text("DISTGRAPH_PART_CONFIG")) e.part_config = *v;
  if (auto v = env_text("DISTGRAPH_SECRET_FILE")) e.secret_file = *v;
  if (auto v = env_text("DISTGRAPH_CHECKPOINT_DIR")) e.checkpoint_dir = *v;
  e.tls = read_tls_environment();
  e.sched_batch = read_sched_batch_environment();
  constexpr std::int32_t big = 1 << 24;
  e.machine_id = env_int("DISTGRAPH_MACHINE_ID", 0, big).value_or(0);
  e.server_id = env_int("DISTGRAPH_SERVER_ID", 0, big).value_or(0);
  e.num_servers = env_int("DISTGRAPH_NUM_SERVERS", 1, 1024).value_or(1);
  e.num_trainers = env_int("DISTGRAPH_NUM_TRAINERS", 1, 1 << 16).value_or(1);
  for (const detail::RankSource& s : detail::rank_sources) {
    const auto r = env_int(s.rank, 0, big);
    if (!r) continue;
    e.rank = *r;
    e.world_size = env_int(s.size, 1, big).value_or(1);
    e.local_rank = env_int(s.local, 0, big).value_or(0);
    e.rank_source = s.name;
    if (e.rank >= e.world_size)
      throw InvalidArgument(std::string(s.rank) + "=" + std::to_string(e.rank) + " is not below " +
                            s.size + "=" + std::to_string(e.world_size));
    break;
  }
  if (auto v = env_text("MASTER_ADDR")) e.master_addr = *v;
  e.master_port = env_int("MASTER_PORT", 0, 65535).value_or(0);
  return e;
}

/// Where `e.world_size` came from, for messages: the variable and who sets it, e.g.
/// "OMPI_COMM_WORLD_SIZE, set by mpirun", or why it is 1 when no rank variable was set.
inline std::string world_size_origin(const Environment& e) {
  for (const detail::RankSource& s : detail::rank_sources)
    if (e.rank_source == s.name) return std::string(s.size) + ", set by " + s.set_by;
  return "no RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID set: a world of 1";
}

}  // namespace distgraph

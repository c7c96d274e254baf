// initialize(): turns the process into a server, a trainer or a standalone run, as the
// environment says, so one program runs alone or under `distgraph launch` unchanged.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "distgraph/core/memory.hpp"
#include "distgraph/core/trace.hpp"
#include "distgraph/distributed/dist_graph.hpp"
#include "distgraph/distributed/standalone.hpp"
#include "distgraph/runtime/environment.hpp"
#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/runtime/secret.hpp"
#include "distgraph/runtime/server_process.hpp"
#include "distgraph/storage/mmap_storage.hpp"
#include "distgraph/transport/any_transport.hpp"
#include "distgraph/transport/asio_transport.hpp"

namespace distgraph {

/// The graph type a runtime-initialised program of the default composition uses in either
/// mode: the partition's own book (range or basic), the transport chosen at run time
/// (in-process or TCP), the machine's shared memory, the built-in samplers.
using RuntimeGraph = DistGraph<DefaultPolicies>;
using RuntimeClient = RuntimeGraph::client_type;

/// What initialize needs beyond the environment.
struct InitOptions {
  /// Partition config for standalone runs (the environment's DISTGRAPH_PART_CONFIG wins
  /// when set).
  std::filesystem::path part_config;
  std::chrono::milliseconds connect_timeout{60'000};  ///< trainers: servers must answer by then
  std::chrono::milliseconds call_timeout{60'000};     ///< deadline of every later request
  /// Standalone runs: where the in-process servers save tensors on request (as
  /// `distgraph serve --checkpoint-dir`).
  std::filesystem::path checkpoint_dir = "distgraph-checkpoints";
  /// Keep freed memory in the process for reuse (retain_freed_memory(), core/memory.hpp):
  /// faster batches, at the price of never returning the peak heap. Every role.
  bool retain_freed_memory = true;
};

template <Composition P>
class BasicContext;
template <Composition P = DefaultPolicies>
BasicContext<P> make_context(Environment, const InitOptions&);

/// A trainer's (or standalone run's) place in the job and its connection to the data,
/// under composition P (its transport must be AnyTransport: initialize() picks in-process
/// or TCP at run time).
template <Composition P>
class BasicContext {
 public:
  using graph_type = BasicDistGraph<P>;
  using client_type = typename graph_type::client_type;

  Role role() const noexcept { return env_.role; }
  bool is_server() const noexcept { return env_.role == Role::server; }
  bool standalone() const noexcept { return env_.role == Role::standalone; }
  std::int32_t rank() const noexcept { return env_.rank; }
  std::int32_t world_size() const noexcept { return env_.world_size; }
  std::int32_t local_rank() const noexcept { return env_.local_rank; }
  std::int32_t machine_id() const noexcept { return env_.machine_id; }
  const Environment& environment() const noexcept { return env_; }
  std::shared_ptr<client_type> client() const { return client_; }
  /// The graph: co-located seeds are sampled and co-located rows read in this process.
  graph_type graph() const { return graph_type(client_, local_); }
  /// Waits for every trainer of the job (a barrier on server 0).
  void barrier(const std::string& name) const { client_->barrier(name); }
  /// Compute threads this process should use: the computer's cores divided by the trainers
  /// that share it (the ip_config's machines on this computer times trainers per machine),
  /// at least 1; every core standalone. Give it to set_intra_op_threads (train/threads.hpp):
  /// left at their defaults, OpenBLAS's pools take every core in every trainer.
  int intra_op_threads() const noexcept { return intra_op_threads_; }

 private:
  friend BasicContext make_context<P>(Environment, const InitOptions&);
  Environment env_;
  std::shared_ptr<BasicStandaloneCluster<P>> standalone_;
  std::shared_ptr<client_type> client_;
  std::shared_ptr<const Partition> local_;
  int intra_op_threads_ = 1;
};

namespace detail {

/// Runs the server role of composition P until a shutdown request or SIGINT/SIGTERM.
template <Composition P>
void run_server_role(const Environment& e) {
  if (e.ip_config.empty() || e.part_config.empty())
    throw InvalidArgument("server role needs DISTGRAPH_IP_CONFIG and DISTGRAPH_PART_CONFIG");
  ServeOptions o;
  o.num_servers = e.num_servers;
  o.ip_config = read_ip_config(e.ip_config, e.num_servers);
  o.part_config = e.part_config;
  o.machine = e.machine_id;
  o.server_id = e.server_id;
  o.num_trainers = e.num_trainers * o.ip_config.num_machines();
  if (!e.secret_file.empty()) o.secret = read_secret_file(e.secret_file);
  o.tls = e.tls;
  if (!e.checkpoint_dir.empty()) o.checkpoint_dir = e.checkpoint_dir;
  serve_until_stopped<P>(std::move(o));
}

/// Checks that server `who` (metadata `md`) was started for as many trainers as this
/// trainer's world size; servers that publish no count (`num_trainers`) pass. Throws
/// WorldSizeMismatch naming both numbers and where each came from.
inline void check_server_world_size(const nlohmann::json& md, const std::string& who,
                                    const Environment& env) {
  if (!md.contains("num_trainers")) return;
  if (!md["num_trainers"].is_number_integer())
    throw ProtocolError(who + ": metadata num_trainers is " + md["num_trainers"].dump() +
                        "; expected an integer");
  const auto theirs = md["num_trainers"].get<std::int32_t>();
  if (theirs == env.world_size) return;
  const std::string mine = std::to_string(env.world_size), served = std::to_string(theirs);
  throw WorldSizeMismatch("world size: trainer " + std::to_string(env.rank) + " has " + mine +
                              " (" + world_size_origin(env) + ") but " + who +
                              " was started with --trainers " + served +
                              " (for a server program: DISTGRAPH_NUM_TRAINERS x machines); "
                              "start " +
                              served + " trainers, or the servers with --trainers " + mine,
                          env.world_size, theirs);
}

/// Checks that server `who` (metadata `md`) was built with a composition this trainer's
/// can talk to: the same book assignment (`fingerprint`, book_fingerprint of the trainer's
/// `book`) and every sampler of the trainer's set. Throws CompositionMismatch naming the
/// server and what differs.
template <Composition P, class Book>
void check_server_composition(const nlohmann::json& md, const std::string& who, const Book& book,
                              const std::string& fingerprint) {
  if (md.contains("book_fingerprint") &&
      md["book_fingerprint"].template get<std::string>() != fingerprint)
    throw CompositionMismatch(
        who + ": its " + md.value("book", std::string("?")) +
        " book assigns IDs differently from this trainer's " + book_kind_name(book) +
        " book; start trainers and servers with the same composition and partition config");
  if (!md.contains("samplers")) return;
  std::vector<std::string> theirs = md["samplers"].template get<std::vector<std::string>>();
  for (auto n : P::sampler_set::names)
    if (std::find(theirs.begin(), theirs.end(), std::string(n)) == theirs.end()) {
      std::string list;
      for (const auto& t : theirs) list += (list.empty() ? "" : ", ") + t;
      throw CompositionMismatch(who + ": sampler set [" + list + "] lacks '" + std::string(n) +
                                "', which this trainer's composition has; start the servers "
                                "with this program (distgraph launch --server-program)");
    }
}

/// Asks every machine's main server for its metadata before the first barrier and checks
/// it against this trainer: the job's size (check_server_world_size) and the composition
/// (check_server_composition). A mismatch throws at start instead of a barrier waiting
/// until its deadline or rows going to the wrong owner.
template <Composition P, class Client>
void check_servers(Client& client, const Environment& env) {
  const std::string fingerprint = std::to_string(book_fingerprint(client.book()));
  for (std::int32_t m = 0; m < client.layout().num_machines; ++m) {
    const auto md = client.metadata(client.server_for(m, true));
    const std::string who =
        "server " + std::to_string(m) + ".0 (partition " + std::to_string(m) + ")";
    check_server_world_size(md, who, env);
    check_server_composition<P>(md, who, client.book(), fingerprint);
  }
}

}  // namespace detail

/// Builds the context for `e` (see initialize); exposed for tests.
template <Composition P>
BasicContext<P> make_context(Environment e, const InitOptions& opts) {
  using Client = typename BasicContext<P>::client_type;
  using Book = typename P::book_type;
  using S = typename P::storage_type;
  static_assert(std::same_as<typename P::transport_type, AnyTransport>,
                "initialize(): the composition's transport must be AnyTransport (chosen at run "
                "time); build other transports' clients by hand");
  if (opts.retain_freed_memory) retain_freed_memory();
  BasicContext<P> c;
  c.env_ = std::move(e);
  auto& env = c.env_;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  c.intra_op_threads_ = cores;
  if (env.role == Role::server) {
    detail::run_server_role<P>(env);
    return c;
  }
  const ClientOptions copts{.timeout = opts.call_timeout};
  if (env.role == Role::standalone) {
    const auto config = env.part_config.empty() ? opts.part_config : env.part_config;
    if (config.empty())
      throw InvalidArgument(
          "standalone run without a partition config (set "
          "DISTGRAPH_PART_CONFIG or pass InitOptions::part_config)");
    c.standalone_ = std::make_shared<BasicStandaloneCluster<P>>(config, opts.checkpoint_dir);
    auto transport = std::make_shared<AnyTransport>(InProcessTransport(c.standalone_->handlers()));
    ClusterLayout layout{.num_machines = c.standalone_->num_parts(),
                         .servers_per_machine = 1,
                         .machine_id = -1,
                         .preferred_server = 0,
                         .num_trainers = 1};
    env.rank = 0;
    env.world_size = 1;
    // Keep the cluster alive as long as the client: the client's transport calls it.
    auto cluster = c.standalone_;
    c.client_ = std::shared_ptr<Client>(
        new Client(transport, partition_book<Book>(c.standalone_->server(0).partition()), layout,
                   nullptr, copts),
        [cluster](Client* p) { delete p; });
    return c;
  }
  // Trainer.
  if (env.ip_config.empty() || env.part_config.empty())
    throw InvalidArgument("trainer role needs DISTGRAPH_IP_CONFIG and DISTGRAPH_PART_CONFIG");
  const IpConfig ip = read_ip_config(env.ip_config, env.num_servers);
  c.intra_op_threads_ =
      std::max(1, cores / std::max(1, local_machine_count(ip) * std::max(1, env.num_trainers)));
  auto local = std::make_shared<Partition>(load_partition(env.part_config, env.machine_id));
  if (local->config.num_parts != ip.num_machines())
    throw PartitionError(env.part_config.string() + ": " + std::to_string(local->config.num_parts) +
                         " partitions but " + env.ip_config.string() + " lists " +
                         std::to_string(ip.num_machines()) + " machines");
  Book book = partition_book<Book>(*local);
  AsioTransportOptions to;
  to.connect_timeout = opts.connect_timeout;
  to.call_timeout = opts.call_timeout;
  if (!env.secret_file.empty()) to.secret = read_secret_file(env.secret_file);
  to.tls = env.tls;
  auto transport =
      std::make_shared<AnyTransport>(AsioTransport(ip.all_servers(env.num_servers), to));
  std::shared_ptr<S> storage;
  if constexpr (SharedStorage<S>) {
    const auto dir = machine_storage_dir(local->config.graph_name,
                                         ip.machines.at(static_cast<std::size_t>(env.machine_id)));
    wait_for_storage(dir, deadline_in(opts.connect_timeout));
    storage = std::make_shared<S>(S::attach(dir));
  }
  ClusterLayout layout{.num_machines = ip.num_machines(),
                       .servers_per_machine = env.num_servers,
                       .machine_id = env.machine_id,
                       .preferred_server = env.local_rank,
                       .num_trainers = env.world_size};
  c.client_ = std::make_shared<Client>(transport, std::move(book), layout, storage, copts);
  c.local_ = std::move(local);
  detail::check_servers<P>(*c.client_, env);
  c.client_->barrier("distgraph:initialize");
  return c;
}

/// Reads the role from the environment (docs/RUNTIME.md), for composition P (a user's
/// program built with its own composition is then its own server: `distgraph launch
/// --server-program`). Server role: serves P's way until told to shut down, then returns
/// a context whose is_server() is true (the program should exit). Trainer role: connects to every
/// server (retrying within connect_timeout), attaches the machine's shared storage, waits for all
/// trainers, and returns. Standalone (no role): loads every partition in this process; no servers
/// needed.
template <Composition P = DefaultPolicies>
BasicContext<P> initialize(const InitOptions& opts = {}) {
  InitOptions o = opts;
  // `distgraph launch --trace` asks each process it starts for its timeline.
  trace::start_trace_from_environment("distgraph process " + std::to_string(::getpid()));
  // Tests and impatient users shorten the deadlines without recompiling.
  if (const auto ms = detail::env_int("DISTGRAPH_CONNECT_TIMEOUT_MS", 1, 3'600'000))
    o.connect_timeout = std::chrono::milliseconds(*ms);
  if (const auto ms = detail::env_int("DISTGRAPH_CALL_TIMEOUT_MS", 1, 3'600'000))
    o.call_timeout = std::chrono::milliseconds(*ms);
  return make_context<P>(read_environment(), o);
}

/// The context of the default composition.
using Context = BasicContext<DefaultPolicies>;

}  // namespace distgraph

// ServerProcess: one server of a cluster machine (main or backup), listening over TCP.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "distgraph/core/deadline.hpp"
#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/trace.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/partition/partition_config.hpp"
#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/server/graph_server.hpp"
#include "distgraph/server/policies.hpp"
#include "distgraph/storage/mmap_storage.hpp"
#include "distgraph/transport/asio_server.hpp"
#include "distgraph/transport/tls.hpp"

namespace distgraph {

/// The folder a machine's servers and co-located trainers share for partition data:
/// under /dev/shm (RAM) when present, else the temp folder; named after the user, the
/// graph and the machine's first server port, so two jobs on one computer never meet.
inline std::filesystem::path machine_storage_dir(const std::string& graph_name,
                                                 const MachineEntry& machine) {
  const std::filesystem::path base = std::filesystem::is_directory("/dev/shm")
                                         ? "/dev/shm"
                                         : std::filesystem::temp_directory_path();
  return base / ("distgraph-" + std::to_string(::getuid()) + "-" + graph_name + "-" +
                 std::to_string(machine.port));
}

/// The file a main server creates in the storage folder once every tensor is loaded;
/// backup servers and co-located trainers wait for it before attaching.
inline std::filesystem::path storage_ready_marker(const std::filesystem::path& dir) {
  return dir / "READY";
}

/// Waits until `dir` holds a ready marker, checking with a bounded backoff; throws
/// TimeoutError naming the folder at `deadline`.
inline void wait_for_storage(const std::filesystem::path& dir, Deadline deadline) {
  auto pause = std::chrono::milliseconds(1);
  // Ready = the marker exists and the main server that wrote it (its pid) is alive: a
  // marker left by a killed run does not count.
  auto ready = [&] {
    std::ifstream in(storage_ready_marker(dir));
    long pid = 0;
    return in && (in >> pid) && pid > 0 &&
           (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
  };
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw TimeoutError(dir.string() + ": the main server did not publish its data in time");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

/// What one server needs to know.
struct ServeOptions {
  std::filesystem::path part_config;  ///< the partition config (<name>.json)
  IpConfig ip_config;                 ///< machine i serves partition i
  std::int32_t machine = 0;           ///< which machine (and partition) this is
  std::int32_t server_id = 0;         ///< 0 = main; backups 1..num_servers-1
  std::int32_t num_servers = 1;       ///< servers on this machine
  /// Trainers in the whole job: each barrier holds one handler thread per trainer, so
  /// the server runs this many threads on top of its io threads. Published in metadata
  /// (`num_trainers`); trainers of another world size refuse to start.
  std::int32_t num_trainers = 1;
  std::string bind_address;           ///< default: the machine's address from the ip config
  std::filesystem::path storage_dir;  ///< default: machine_storage_dir(...)
  /// Where save_tensors requests write (relative: to the working folder). Clients name
  /// only a tag below it.
  std::filesystem::path checkpoint_dir = "distgraph-checkpoints";
  std::string secret;  ///< shared secret clients must prove ("" = none)
  /// TLS for every connection (default: a PSK from the secret when there is one).
  TlsOptions tls;
  /// Handler threads before the trainers' (one each, for barriers); 0 = max(2, cores).
  unsigned io_threads = 0;
  /// The socket and handler threads under SCHED_BATCH (AsioServerOptions::sched_batch).
  bool sched_batch = true;
  std::chrono::milliseconds startup_timeout{120'000};  ///< backups wait this for the main
  std::function<void(std::string_view)> log;           ///< default: stderr
};

/// Whether storage S can be shared between the processes of a machine (a folder that
/// backup servers and co-located trainers attach to, as MmapStorage does).
template <class S>
concept SharedStorage = Storage<S> && requires(const std::filesystem::path& dir) {
  { S::create_dir(dir) } -> std::same_as<S>;
  { S::attach(dir) } -> std::same_as<S>;
};

/// One server process's work under composition P: loads partition `machine`, builds P's
/// book for it and serves it with P's sampler set, and answers requests on port
/// ip_config[machine].port + server_id until a shutdown request or stop(). With a
/// SharedStorage (MmapStorage, the default) it shares its data through a folder with the
/// machine's other servers and trainers; any other storage is private to the process, so
/// the machine may have no backup servers and its trainers read rows by request.
template <Composition P = DefaultPolicies>
class BasicServerProcess {
 public:
  using storage_type = typename P::storage_type;
  using server_type = BasicGraphServer<P>;

  /// Loads and binds; throws PartitionError/FormatError for bad files, IoError naming the
  /// port when it is taken, TimeoutError when a backup's main never publishes.
  explicit BasicServerProcess(ServeOptions o) : options_(std::move(o)) {
    const auto& ipc = options_.ip_config;
    if (options_.machine < 0 || options_.machine >= ipc.num_machines())
      throw IdOutOfRange("machine id", options_.machine, 0, ipc.num_machines());
    if (options_.num_servers < 1 || options_.server_id < 0 ||
        options_.server_id >= options_.num_servers)
      throw IdOutOfRange("server id", options_.server_id, 0, std::max(options_.num_servers, 1));
    if (!options_.log)
      options_.log = [](std::string_view line) {
        std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
      };
    // The main server clears a folder left by a crashed run before anything slow, so a
    // backup never attaches to the old data (wait_for_storage also checks the marker's
    // writer is alive).
    const PartitionConfig cfg = read_partition_config(options_.part_config);
    // Before anything slow, so every server of a mismatched job names the mismatch (not
    // only the ones whose partition happens to exist).
    if (cfg.num_parts != ipc.num_machines())
      throw PartitionError(options_.part_config.string() + ": " + std::to_string(cfg.num_parts) +
                           " partitions but " + ipc.path.string() + " lists " +
                           std::to_string(ipc.num_machines()) +
                           " machines; expected one machine per partition");
    const auto& me0 = ipc.machines.at(static_cast<std::size_t>(options_.machine));
    dir_ = options_.storage_dir.empty() ? machine_storage_dir(cfg.graph_name, me0)
                                        : options_.storage_dir;
    if constexpr (!SharedStorage<storage_type>)
      if (options_.num_servers > 1)
        throw InvalidArgument("server " + std::to_string(options_.machine) + "." +
                              std::to_string(options_.server_id) +
                              ": the composition's storage is private to one process, so a "
                              "machine cannot have backup servers; use --servers 1 or "
                              "MmapStorage");
    if (SharedStorage<storage_type> && options_.server_id == 0) std::filesystem::remove_all(dir_);
    Partition part = load_partition(options_.part_config, options_.machine);

    const auto& me = me0;
    const bool main = options_.server_id == 0;
    if constexpr (SharedStorage<storage_type>) {
      if (main) {
        storage_ = std::make_shared<storage_type>(storage_type::create_dir(dir_));
      } else {
        wait_for_storage(dir_, deadline_in(options_.startup_timeout));
        storage_ = std::make_shared<storage_type>(storage_type::attach(dir_));
      }
    } else {
      storage_ = std::make_shared<storage_type>();
    }
    server_ = std::make_unique<server_type>(std::move(part), storage_,
                                            main ? ServerRole::main : ServerRole::backup);
    if (!options_.checkpoint_dir.empty()) server_->kv().set_checkpoint_dir(options_.checkpoint_dir);
    server_->kv().set_job_trainers(options_.num_trainers);
    AsioServerOptions ao;
    ao.address = options_.bind_address.empty() ? me.ip : options_.bind_address;
    ao.port = static_cast<std::uint16_t>(me.port + options_.server_id);
    ao.secret = options_.secret;
    ao.tls = options_.tls;
    ao.num_threads =
        (options_.io_threads ? options_.io_threads : std::max(2u, default_num_threads())) +
        static_cast<unsigned>(std::max(options_.num_trainers, 1));
    ao.log = options_.log;
    ao.run_inline = quick_request;
    ao.sched_batch = options_.sched_batch;
    // Requests whose replies the transport would refuse are refused before their work.
    server_->kv().set_max_reply_bytes(ao.max_frame_bytes);
    asio_ = std::make_unique<AsioServer>(server_->handler(), ao);
    asio_->start();
    if (SharedStorage<storage_type> && main) {
      write_file_durably(storage_ready_marker(dir_), std::to_string(::getpid()) + "\n");
    }
  }
  BasicServerProcess(const BasicServerProcess&) = delete;
  BasicServerProcess& operator=(const BasicServerProcess&) = delete;
  ~BasicServerProcess() { stop(); }

  std::uint16_t port() const { return asio_->port(); }
  const std::filesystem::path& storage_dir() const noexcept { return dir_; }
  server_type& server() noexcept { return *server_; }

  /// Blocks until a client sends shutdown or stop() is called, then lets replies in
  /// flight go out and closes.
  void run() {
    while (!server_->kv().wait_for_shutdown(deadline_in(std::chrono::hours(1)))) {
    }
    asio_->request_stop();
    asio_->run_until_stopped();
  }
  /// Ends run() (from another thread or a signal watcher). Idempotent.
  void stop() {
    if (server_) server_->kv().request_shutdown();
    if (asio_) asio_->stop();
    if (SharedStorage<storage_type> && options_.server_id == 0 && !dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);  // mappings others hold stay valid
    }
  }

 private:
  ServeOptions options_;
  std::filesystem::path dir_;
  std::shared_ptr<storage_type> storage_;
  std::unique_ptr<server_type> server_;
  std::unique_ptr<AsioServer> asio_;
};

/// The server process of the default composition (what `distgraph serve` runs).
using ServerProcess = BasicServerProcess<DefaultPolicies>;

/// Runs one server of composition P until SIGINT or SIGTERM (a clean stop) or a shutdown
/// over the wire, then returns. The signals go to a watcher thread and are blocked in every
/// other thread, so call this before starting threads of your own. Under `distgraph launch
/// --trace` it records the requests it serves. Once it listens, `out` gets one line:
/// "server M.S listening on IP port N (partition M)". What `distgraph serve` and a
/// program's server role (`initialize()`, `--server-program`) both run.
template <Composition P = DefaultPolicies>
void serve_until_stopped(ServeOptions o, std::FILE* out = stdout) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  trace::start_trace_from_environment("server " + std::to_string(o.machine) + "." +
                                      std::to_string(o.server_id));
  const int machine = o.machine, server_id = o.server_id;
  // The process checks the machine number (IdOutOfRange naming it) before the line uses it.
  const IpConfig ip_config = o.ip_config;
  BasicServerProcess<P> server(std::move(o));
  const std::string& ip = ip_config.machines[static_cast<std::size_t>(machine)].ip;
  if (out) {
    std::fprintf(out, "server %d.%d listening on %s port %u (partition %d)\n", machine, server_id,
                 ip.c_str(), static_cast<unsigned>(server.port()), machine);
    std::fflush(out);
  }
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    server.stop();
  });
  server.run();
  // Wake the watcher if the shutdown came over the wire.
  pthread_kill(watcher.native_handle(), SIGUSR1);
  watcher.join();
}

}  // namespace distgraph

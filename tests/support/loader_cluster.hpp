// Test helper: a 2-machine loopback cluster of `distgraph serve` processes over a partitioned
// SBM graph, with trainer clients that read their machine's rows from shared memory.
#pragma once

#ifdef DISTGRAPH_CLI

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "distgraph/distributed/dist_graph.hpp"
#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/runtime/server_process.hpp"
#include "distgraph/storage/mmap_storage.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "support/child_process.hpp"
#include "support/free_port.hpp"
#include "support/machine_storage.hpp"
#include "support/partitioned_sbm.hpp"

namespace distgraph::test {

using namespace std::chrono_literals;
using Client = KVClient<RangePartitionBook, AsioTransport, MmapStorage>;
using ClusterGraph = DistGraph<RangePartitionBook, AsioTransport, MmapStorage>;

/// 2 machines, one `distgraph serve` each, over a partitioned SBM graph.
struct LoaderCluster {
  static constexpr int machines = 2;
  distgraph::test::PartitionedSbm sbm;
  std::filesystem::path ip_path;
  IpConfig ip;
  std::vector<std::unique_ptr<ChildProcess>> procs;

  ~LoaderCluster() { distgraph::test::remove_machine_storage("loader", ip); }
  LoaderCluster(const LoaderCluster&) = delete;
  LoaderCluster& operator=(const LoaderCluster&) = delete;

  LoaderCluster() : sbm(options(), machines, "loader") {
    ip_path = sbm.tmp / "ip_config.txt";
    auto ports = write_loopback_ip_config(ip_path, machines, 1);
    ip = read_ip_config(ip_path, 1);
    ports.release();
    for (int m = 0; m < machines; ++m)
      procs.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
          DISTGRAPH_CLI, "serve", "--ip-config", ip_path.string(), "--part-config",
          sbm.config.string(), "--machine", std::to_string(m), "--server-id", "0", "--servers", "1",
          "--trainers", "1", "--threads", "2"}));
    for (auto& p : procs) REQUIRE(p->wait_for_line("listening on", 60s));
  }

  static SbmOptions options() {
    SbmOptions o;
    o.num_nodes = 2000;
    o.num_classes = 4;
    o.avg_degree = 8;
    o.feat_dim = 16;
    o.seed = 21;
    return o;
  }

  /// A trainer's client; on `machine` >= 0 it reads that machine's rows from shared memory.
  /// Its collective calls wait for `trainers` trainers.
  std::shared_ptr<Client> client(int machine, std::int32_t trainers = 1) {
    auto transport = std::make_shared<AsioTransport>(ip.all_servers(1),
                                                     AsioTransportOptions{.connect_timeout = 20s});
    std::shared_ptr<MmapStorage> local;
    if (machine >= 0) {
      const auto dir =
          machine_storage_dir("loader", ip.machines[static_cast<std::size_t>(machine)]);
      wait_for_storage(dir, deadline_in(20s));
      local = std::make_shared<MmapStorage>(MmapStorage::attach(dir));
    }
    const Partition p0 = load_partition(sbm.config, 0);
    return std::make_shared<Client>(transport, (*(p0.book).get_if<RangePartitionBook>()),
                                    ClusterLayout{.num_machines = machines,
                                                  .servers_per_machine = 1,
                                                  .machine_id = machine,
                                                  .preferred_server = 0,
                                                  .num_trainers = trainers},
                                    local, ClientOptions{.timeout = 20s});
  }

  /// The trainer's DistGraph; co-located on `machine` it samples that partition's seeds
  /// itself from the mapped partition.
  ClusterGraph graph(int machine, std::int32_t trainers = 1) {
    std::shared_ptr<const Partition> part;
    if (machine >= 0) part = std::make_shared<const Partition>(load_partition(sbm.config, machine));
    return ClusterGraph(client(machine, trainers), part);
  }

  /// Stops every server and checks each exits 0.
  void shutdown() {
    client(-1)->shutdown_servers();
    for (auto& p : procs) {
      const auto st = p->wait(15s);
      REQUIRE(st.has_value());
      CHECK(WIFEXITED(*st));
      CHECK(WEXITSTATUS(*st) == 0);
    }
  }
};


}  // namespace distgraph::test

#endif  // DISTGRAPH_CLI

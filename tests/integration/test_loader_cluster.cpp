// Data loaders over a real 2-machine loopback cluster of `distgraph serve` processes give the
// batches a standalone run gives for the same seed.
#include <catch2/catch.hpp>
#include <fstream>

#include "distgraph/dist/dist_graph.hpp"
#include "distgraph/dist/edge_data_loader.hpp"
#include "distgraph/dist/node_data_loader.hpp"
#include "distgraph/dist/standalone.hpp"
#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/runtime/server_process.hpp"
#include "distgraph/storage/mmap_storage.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "support/child_process.hpp"
#include "support/loader_batches.hpp"
#include "support/partitioned_sbm.hpp"

using namespace distgraph;
using namespace std::chrono_literals;
using distgraph::test::ChildProcess;
using distgraph::test::every;
using distgraph::test::PortBlock;
using distgraph::test::same_batch;
using distgraph::test::whole_epoch;

#ifdef DISTGRAPH_CLI

namespace {

using Client = KVClient<RangePartitionBook, AsioTransport, MmapStorage>;
using ClusterGraph = DistGraph<RangePartitionBook, AsioTransport, MmapStorage>;

/// 2 machines, one `distgraph serve` each, over a partitioned SBM graph.
struct LoaderCluster {
  static constexpr int machines = 2;
  distgraph::test::PartitionedSbm sbm;
  std::filesystem::path ip_path;
  IpConfig ip;
  std::vector<std::unique_ptr<ChildProcess>> procs;

  LoaderCluster() : sbm(options(), machines, "loader") {
    ip_path = sbm.tmp / "ip_config.txt";
    std::vector<std::unique_ptr<PortBlock>> ports;
    {
      std::ofstream f(ip_path);
      for (int m = 0; m < machines; ++m) {
        ports.push_back(std::make_unique<PortBlock>(1));
        f << "127.0.0.1 " << ports.back()->base() << "\n";
      }
    }
    ip = read_ip_config(ip_path, 1);
    for (auto& p : ports) p->release();
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
  std::shared_ptr<Client> client(int machine) {
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
                                                  .num_trainers = 1},
                                    local, ClientOptions{.timeout = 20s});
  }

  /// The trainer's DistGraph; co-located on `machine` it samples that partition's seeds
  /// itself from the mapped partition.
  ClusterGraph graph(int machine) {
    std::shared_ptr<const Partition> part;
    if (machine >= 0) part = std::make_shared<const Partition>(load_partition(sbm.config, machine));
    return ClusterGraph(client(machine), part);
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

}  // namespace

TEST_CASE("loaders over a loopback cluster yield the batches of a standalone run",
          "[integration][net]") {
  LoaderCluster c;
  StandaloneCluster<> standalone(c.sbm.config);
  auto sg = standalone.graph();
  const auto train = every(3, sg.num_nodes());
  const LoaderOptions opts{.batch_size = 64, .seed = 17, .rank = 0};
  NodeDataLoader reference(sg, train, {5, 10}, opts);
  const auto want = whole_epoch(reference, 1);
  REQUIRE(!want.empty());
  for (const int machine : {0, 1, -1}) {
    for (const unsigned threads : {0u, 2u}) {
      INFO("trainer on machine " << machine << ", " << threads << " prefetch threads");
      LoaderOptions o = opts;
      o.num_prefetch_threads = threads;
      NodeDataLoader loader(c.graph(machine), train, {5, 10}, o);
      const auto got = whole_epoch(loader, 1);
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        REQUIRE(got[i].input_nodes == want[i].input_nodes);
        REQUIRE(got[i].blocks.front().eid == want[i].blocks.front().eid);
        REQUIRE(got[i].features == want[i].features);
        REQUIRE(same_batch(got[i], want[i]));
      }
    }
  }

  const auto train_edges = every(11, sg.num_edges());
  const EdgeLoaderOptions eo{.num_negatives = 2, .exclude = ExcludeEdges::self};
  EdgeDataLoader edge_reference(sg, train_edges, {4, 4}, opts, eo);
  const auto want_edges = whole_epoch(edge_reference, 0);
  LoaderOptions o = opts;
  o.num_prefetch_threads = 2;
  EdgeDataLoader edge_loader(c.graph(0), train_edges, {4, 4}, o, eo);
  const auto got_edges = whole_epoch(edge_loader, 0);
  REQUIRE(got_edges.size() == want_edges.size());
  for (std::size_t i = 0; i < got_edges.size(); ++i)
    REQUIRE(same_batch(got_edges[i], want_edges[i]));

  c.shutdown();
}

#endif  // DISTGRAPH_CLI

// A real cluster on loopback: `distgraph serve` processes (main + backup per machine) and
// trainers talking to them over AsioTransport, reading co-located rows from shared memory.
#include <atomic>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>
#include <thread>
#include <tuple>

#include "distgraph/distributed/dist_graph.hpp"
#include "distgraph/distributed/dist_tensor.hpp"
#include "distgraph/distributed/kv_client.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/runtime/server_process.hpp"
#include "distgraph/server/graph_server.hpp"
#include "distgraph/storage/mmap_storage.hpp"
#include "distgraph/transport/asio_transport.hpp"
#include "support/child_process.hpp"
#include "support/free_port.hpp"
#include "support/machine_storage.hpp"
#include "support/temp_dir.hpp"

namespace test_integration_kv_cluster {

using namespace distgraph;
using namespace std::chrono_literals;
using distgraph::test::ChildProcess;
using distgraph::test::TempDir;

#ifdef DISTGRAPH_CLI

namespace {

using Client = KVClient<RangePartitionBook, AsioTransport, MmapStorage>;

/// 2 machines x 2 servers (main + backup) of a partitioned SBM graph, as processes.
struct Cluster {
  static constexpr int machines = 2, servers = 2;
  TempDir tmp;
  Dataset data;
  std::filesystem::path config, ip_path;
  IpConfig ip;
  std::vector<std::unique_ptr<ChildProcess>> procs;  // machine-major
  std::vector<std::int64_t> orig_of;

  ~Cluster() { distgraph::test::remove_machine_storage("kv", ip); }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  explicit Cluster(int trainers = 1) {
    SbmOptions o;
    o.num_nodes = 2000;
    o.num_classes = 4;
    o.avg_degree = 8;
    o.feat_dim = 16;
    o.seed = 21;
    data = sbm_dataset(o);
    partition_dataset(data, "kv", machines, tmp.path(), {.method = PartMethod::metis, .seed = 3});
    config = tmp / "kv.json";
    ip_path = tmp / "ip_config.txt";
    auto ports = distgraph::test::write_loopback_ip_config(ip_path, machines, servers);
    ip = read_ip_config(ip_path, servers);
    ports.release();
    // Main servers first: backups wait for the main's data.
    for (int m = 0; m < machines; ++m)
      for (int s = 0; s < servers; ++s) procs.push_back(start(m, s, trainers));
    for (auto& p : procs) REQUIRE(p->wait_for_line("listening on", 60s));
    orig_of.assign(static_cast<std::size_t>(data.num_nodes), -1);
    for (int m = 0; m < machines; ++m) {
      const Partition part = load_partition(config, m);
      for (std::int64_t v = 0; v < part.num_inner_nodes; ++v)
        orig_of[static_cast<std::size_t>(part.nid[static_cast<std::size_t>(v)])] =
            part.orig_nid[static_cast<std::size_t>(v)];
    }
  }

  std::unique_ptr<ChildProcess> start(int m, int s, int trainers) {
    return std::make_unique<ChildProcess>(std::vector<std::string>{
        DISTGRAPH_CLI, "serve", "--ip-config", ip_path.string(), "--part-config", config.string(),
        "--machine", std::to_string(m), "--server-id", std::to_string(s), "--servers",
        std::to_string(servers), "--trainers", std::to_string(trainers), "--threads", "2"});
  }

  /// A trainer's client; `machine` >= 0 reads that machine's rows from shared memory.
  std::shared_ptr<Client> client(int machine = -1, int preferred = 0, int trainers = 1,
                                 std::chrono::milliseconds timeout = 20s,
                                 std::size_t max_pull_bytes = ClientOptions{}.max_pull_bytes) {
    auto transport = std::make_shared<AsioTransport>(ip.all_servers(servers),
                                                     AsioTransportOptions{.connect_timeout = 20s});
    const Partition p0 = load_partition(config, 0);
    std::shared_ptr<MmapStorage> local;
    if (machine >= 0) {
      const auto dir = machine_storage_dir("kv", ip.machines[static_cast<std::size_t>(machine)]);
      wait_for_storage(dir, deadline_in(20s));
      local = std::make_shared<MmapStorage>(MmapStorage::attach(dir));
    }
    return std::make_shared<Client>(
        transport, (*(p0.book).get_if<RangePartitionBook>()),
        ClusterLayout{.num_machines = machines,
                      .servers_per_machine = servers,
                      .machine_id = machine,
                      .preferred_server = preferred,
                      .num_trainers = trainers},
        local, ClientOptions{.timeout = timeout, .max_pull_bytes = max_pull_bytes});
  }

  /// Asks every server to stop and checks each process exits 0 within the deadline.
  void shutdown(Client& c) {
    c.shutdown_servers();
    for (auto& p : procs) {
      if (!p) continue;
      const auto st = p->wait(15s);
      REQUIRE(st.has_value());
      CHECK(WIFEXITED(*st));
      CHECK(WEXITSTATUS(*st) == 0);
    }
  }
};

std::vector<std::int64_t> shuffled(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  return v;
}

}  // namespace

TEST_CASE("trainers pull the same rows remotely, through backups and from shared memory",
          "[integration][net]") {
  Cluster c;
  const auto ids = shuffled(c.data.num_nodes, 4);
  const auto d = static_cast<std::size_t>(c.data.feat_dim);
  // The last two: pulls cut into pieces of 7 rows' bytes and 1 byte (one row a piece),
  // remote and co-located rows mixed in each, must land exactly where whole pulls put them.
  const std::size_t row_bytes = d * sizeof(float);
  for (const auto& [machine, preferred, piece] :
       std::vector<std::tuple<int, int, std::size_t>>{{-1, 0, ClientOptions{}.max_pull_bytes},
                                                      {-1, 1, ClientOptions{}.max_pull_bytes},
                                                      {0, 1, ClientOptions{}.max_pull_bytes},
                                                      {1, 0, ClientOptions{}.max_pull_bytes},
                                                      {0, 0, 7 * row_bytes},
                                                      {-1, 0, 1}}) {
    INFO("machine " << machine << ", server " << preferred << ", pieces of " << piece << " bytes");
    auto client = c.client(machine, preferred, 1, 20s, piece);
    const auto feat =
        DistTensor<float, Client>::open(client, node_data_name("feat"), RowKind::node);
    const auto rows = feat.pull(ids);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto orig = static_cast<std::size_t>(c.orig_of[static_cast<std::size_t>(ids[i])]);
      for (std::size_t k = 0; k < d; ++k) REQUIRE(rows[i * d + k] == c.data.feat[orig * d + k]);
    }
  }
  auto client = c.client();
  c.shutdown(*client);
}

TEST_CASE("concurrent push_add through main and backup servers and shared memory loses nothing",
          "[integration][net]") {
  constexpr int trainers = 4;
  Cluster c(trainers);
  constexpr int rounds = 30;
  const std::int64_t n = c.data.num_nodes;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < trainers; ++t)
    threads.emplace_back([&, t] {
      try {
        // Trainer t sits on machine t % 2 and prefers server t / 2 (main or backup).
        auto client = c.client(t % 2, t / 2, trainers);
        auto counter =
            DistTensor<std::int64_t, Client>::create(client, "counter", RowKind::node, 2);
        std::mt19937_64 rng(static_cast<std::uint64_t>(t));
        std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
        std::iota(ids.begin(), ids.end(), 0);
        std::vector<std::int64_t> ones(ids.size() * 2, 1);
        for (int r = 0; r < rounds; ++r) {
          std::shuffle(ids.begin(), ids.end(), rng);
          counter.push_add(ids, ones);
        }
        client->barrier("done");
      } catch (const std::exception& e) {
        UNSCOPED_INFO("trainer " << t << ": " << e.what());
        ++failures;
      }
    });
  for (auto& t : threads) t.join();
  REQUIRE(failures == 0);
  auto client = c.client();
  const auto counter = DistTensor<std::int64_t, Client>::open(client, "counter", RowKind::node);
  const auto all = counter.pull(shuffled(n, 1));
  for (auto v : all) REQUIRE(v == trainers * rounds);
  c.shutdown(*client);
}

TEST_CASE("readers never see a torn row while writers replace rows through several servers",
          "[integration][net]") {
  Cluster c(1);
  auto setup = c.client();
  auto t = DistTensor<std::int32_t, Client>::create(setup, "rows", RowKind::node, 64);
  std::atomic<bool> done{false};
  std::atomic<long> checked{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      auto client = c.client(w, w);
      auto tw = DistTensor<std::int32_t, Client>::open(client, "rows", RowKind::node);
      std::vector<std::int64_t> ids(500);
      std::vector<std::int32_t> rows(ids.size() * 64);
      for (int gen = 1; gen <= 40; ++gen) {
        for (std::size_t i = 0; i < ids.size(); ++i)
          ids[i] = static_cast<std::int64_t>((i * 4 + static_cast<std::size_t>(gen)) % 2000);
        std::fill(rows.begin(), rows.end(), w * 1000 + gen);
        tw.push(ids, rows);
      }
    });
  std::thread reader([&] {
    auto client = c.client(1, 1);
    auto tr = DistTensor<std::int32_t, Client>::open(client, "rows", RowKind::node);
    const auto ids = shuffled(c.data.num_nodes, 9);
    while (!done) {
      const auto rows = tr.pull(ids);
      for (std::size_t i = 0; i < ids.size(); ++i)
        for (std::size_t k = 1; k < 64; ++k)
          if (rows[i * 64 + k] != rows[i * 64]) FAIL("torn row " << ids[i]);
      ++checked;
    }
  });
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  CHECK(checked > 0);
  c.shutdown(*setup);
}

TEST_CASE("a pull from a killed server fails with PeerLost within the deadline",
          "[integration][net][fault]") {
  Cluster c;
  auto client = c.client(-1, 0, 1, 5s);
  const auto feat = DistTensor<float, Client>::open(client, node_data_name("feat"), RowKind::node);
  const auto ids = shuffled(c.data.num_nodes, 2);
  REQUIRE(feat.pull(ids).size() == ids.size() * 16);
  c.procs[2]->signal(SIGKILL);  // machine 1's main server
  REQUIRE(c.procs[2]->wait(10s).has_value());
  c.procs[2].reset();
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(feat.pull(ids), PeerLost);
  CHECK(std::chrono::steady_clock::now() - start < 6s);
  // Sampling seeds owned by the dead machine fails the same way.
  const DistGraph<RangePartitionBook, AsioTransport, MmapStorage> g(client);
  const auto sample_start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(g.sample_neighbors(ids, 5, SampleKey{}), PeerLost);
  CHECK(std::chrono::steady_clock::now() - sample_start < 6s);
  // Rows owned by the surviving machine still come back.
  const auto& book = client->book();
  const auto mine = book.owned_nodes(PartId{0});
  CHECK(feat.pull(mine).size() == mine.size() * 16);
  c.shutdown(*client);
}

TEST_CASE("a server that cannot take its port exits 1 naming the port",
          "[integration][net][fault]") {
  Cluster c;
  auto dup = c.start(0, 0, 1);  // machine 0's main port is taken by the running server
  const auto st = dup->wait(30s);
  REQUIRE(st.has_value());
  CHECK(WEXITSTATUS(*st) == 1);
  CHECK_THAT(dup->output(), Catch::Contains(std::to_string(c.ip.machines[0].port)));
  auto client = c.client();
  c.shutdown(*client);
}

#else
TEST_CASE("kv cluster tests need the distgraph program", "[integration]") {
  WARN("SKIPPED: built without DISTGRAPH_BUILD_TOOLS");
}
#endif

}  // namespace test_integration_kv_cluster

// DistTensor, DistEmbedding and sparse optimizers against real in-process servers.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <latch>
#include <numeric>
#include <random>
#include <thread>

#include "distgraph/distributed/dist_embedding.hpp"
#include "distgraph/distributed/dist_tensor.hpp"
#include "distgraph/distributed/node_split.hpp"
#include "distgraph/distributed/remote_traffic.hpp"
#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "support/temp_dir.hpp"

namespace test_distributed_dist_tensor {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

using Client = KVClient<RangePartitionBook, InProcessTransport, InMemoryStorage>;

Dataset small_sbm(std::int64_t n = 500) {
  SbmOptions o;
  o.num_nodes = n;
  o.num_classes = 3;
  o.avg_degree = 6;
  o.feat_dim = 4;
  o.seed = 11;
  return sbm_dataset(o);
}

/// A partitioned SBM graph and the map from relabeled global node IDs to input IDs.
struct Fixture {
  TempDir tmp;
  Dataset data = small_sbm();
  std::vector<std::int64_t> orig_of;  // global -> input node ID
  std::filesystem::path config;

  explicit Fixture(std::int64_t parts = 3) {
    partition_dataset(data, "g", parts, tmp.path(), {.method = PartMethod::metis, .seed = 5});
    config = tmp / "g.json";
    orig_of.assign(static_cast<std::size_t>(data.num_nodes), -1);
    for (std::int64_t p = 0; p < parts; ++p) {
      const Partition part = load_partition(config, p);
      for (std::int64_t v = 0; v < part.num_inner_nodes; ++v)
        orig_of[static_cast<std::size_t>(part.nid[static_cast<std::size_t>(v)])] =
            part.orig_nid[static_cast<std::size_t>(v)];
    }
  }
};

std::vector<std::int64_t> shuffled_ids(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(seed));
  return ids;
}

}  // namespace

TEST_CASE("pulling node features through three servers returns each node's input row", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto client = cluster.client<RangePartitionBook>();
  const auto feat = DistTensor<float, Client>::open(client, node_data_name("feat"), RowKind::node);
  REQUIRE(feat.num_cols() == f.data.feat_dim);
  REQUIRE(feat.num_rows() == f.data.num_nodes);
  const auto ids = shuffled_ids(f.data.num_nodes, 1);
  const auto rows = feat.pull(ids);
  const auto d = static_cast<std::size_t>(f.data.feat_dim);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto orig = static_cast<std::size_t>(f.orig_of[static_cast<std::size_t>(ids[i])]);
    for (std::size_t c = 0; c < d; ++c) REQUIRE(rows[i * d + c] == f.data.feat[orig * d + c]);
  }
  const auto labels =
      DistTensor<std::int64_t, Client>::open(client, node_data_name("label"), RowKind::node);
  const auto lab = labels.pull(ids);
  for (std::size_t i = 0; i < ids.size(); ++i)
    CHECK(lab[i] ==
          f.data.label[static_cast<std::size_t>(f.orig_of[static_cast<std::size_t>(ids[i])])]);
}

TEST_CASE("remote_traffic counts the rows and bytes pulled from other machines only", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  const auto everything = cluster.client<RangePartitionBook>();
  // The same cluster seen from machine 1: its own partition's rows cross no network.
  ClusterLayout layout = everything->layout();
  layout.machine_id = 1;
  const auto on_machine_1 =
      std::make_shared<Client>(cluster.transport(), everything->book(), layout);
  const auto ids = shuffled_ids(f.data.num_nodes, 3);
  std::vector<std::int32_t> owner(ids.size());
  everything->book().node_partition(ids, owner);
  const auto remote_from_1 = std::count_if(owner.begin(), owner.end(), [](std::int32_t p) {
    return p != 1;
  });
  REQUIRE(remote_from_1 > 0);
  REQUIRE(remote_from_1 < static_cast<std::int64_t>(ids.size()));
  const auto row_bytes = static_cast<std::int64_t>(f.data.feat_dim * sizeof(float));
  for (const auto& [client, remote] :
       {std::pair{everything, static_cast<std::int64_t>(ids.size())},
        std::pair{on_machine_1, static_cast<std::int64_t>(remote_from_1)}}) {
    CHECK(client->remote_traffic().rows == 0);
    const auto feat =
        DistTensor<float, Client>::open(client, node_data_name("feat"), RowKind::node);
    (void)feat.pull(ids);
    (void)feat.pull(std::span(ids).first(0));  // nothing requested, nothing counted
    CHECK(client->remote_traffic().rows == remote);
    CHECK(client->remote_traffic().bytes == remote * row_bytes);
  }
}

TEST_CASE("a TrafficScope counts what its own thread pulls, the innermost scope only", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  const auto client = cluster.client<RangePartitionBook>();  // no machine: every row remote
  const auto feat = DistTensor<float, Client>::open(client, node_data_name("feat"), RowKind::node);
  const auto ids = shuffled_ids(f.data.num_nodes, 5);
  const auto n = static_cast<std::int64_t>(ids.size());
  const auto row_bytes = static_cast<std::int64_t>(f.data.feat_dim * sizeof(float));
  RemoteTraffic outer, inner;
  {
    const TrafficScope o(outer);
    {
      const TrafficScope i(inner);
      (void)feat.pull(ids);
      // Another thread's pulls go to its own scopes (none here), not to this thread's.
      std::thread other([&] { (void)feat.pull(ids); });
      other.join();
    }
    (void)feat.pull(std::span(ids).first(7));
  }
  (void)feat.pull(ids);  // no scope left
  CHECK(inner.rows == n);
  CHECK(inner.bytes == n * row_bytes);
  CHECK(outer.rows == 7);
  CHECK(outer.bytes == 7 * row_bytes);
  CHECK(inner.cached_rows == 0);
  CHECK(client->remote_traffic().rows == 3 * n + 7);  // the client's totals count them all
}

TEST_CASE("push replaces rows on their owners and push_add accumulates duplicates", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto client = cluster.client<RangePartitionBook>();
  auto t = DistTensor<double, Client>::create(client, "acc", RowKind::node, 2);
  const auto ids = shuffled_ids(f.data.num_nodes, 2);
  std::vector<double> rows(ids.size() * 2);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    rows[2 * i] = static_cast<double>(ids[i]);
    rows[2 * i + 1] = -static_cast<double>(ids[i]);
  }
  t.push(ids, rows);
  const std::vector<std::int64_t> probe{0, f.data.num_nodes - 1, 7};
  auto got = t.pull(probe);
  CHECK(got == std::vector<double>{0, 0, double(f.data.num_nodes - 1),
                                   -double(f.data.num_nodes - 1), 7, -7});

  const std::vector<std::int64_t> dup{7, 7, 7, 0};
  const std::vector<double> add{1, 10, 1, 10, 1, 10, 5, 5};
  t.push_add(dup, add);
  got = t.pull(std::vector<std::int64_t>{7, 0});
  CHECK(got == std::vector<double>{10, 23, 5, 5});

  SECTION("a row listed twice in one push ends as its last listing") {
    t.push(std::vector<std::int64_t>{3, 3}, std::vector<double>{1, 1, 2, 2});
    CHECK(t.pull(std::vector<std::int64_t>{3}) == std::vector<double>{2, 2});
  }
  SECTION("an out-of-range ID fails before anything is written") {
    const std::vector<std::int64_t> bad{1, f.data.num_nodes};
    CHECK_THROWS_AS(t.push(bad, std::vector<double>{9, 9, 9, 9}), IdOutOfRange);
    CHECK(t.pull(std::vector<std::int64_t>{1}) == std::vector<double>{1, -1});
    CHECK_THROWS_AS(t.pull(std::vector<std::int64_t>{-1}), IdOutOfRange);
  }
  SECTION("rows of the wrong size are a ShapeError") {
    CHECK_THROWS_AS(t.push(std::vector<std::int64_t>{1}, std::vector<double>{1}), ShapeError);
  }
}

TEST_CASE("tensor creation is idempotent and refuses a different layout", "[dist]") {
  Fixture f(2);
  StandaloneCluster<> cluster(f.config);
  auto client = cluster.client<RangePartitionBook>();
  auto a = DistTensor<float, Client>::create(client, "emb", RowKind::node, 3,
                                             {InitKind::uniform, -1, 1, 9});
  const auto before = a.pull(shuffled_ids(f.data.num_nodes, 3));
  for (float v : before) REQUIRE((v >= -1 && v < 1));
  // Reuse: same layout, contents untouched (not re-initialised).
  auto b = DistTensor<float, Client>::create(client, "emb", RowKind::node, 3,
                                             {InitKind::uniform, 5, 6, 1});
  CHECK(b.pull(shuffled_ids(f.data.num_nodes, 3)) == before);
  CHECK_THROWS_AS((DistTensor<float, Client>::create(client, "emb", RowKind::node, 4)),
                  RemoteError);
  CHECK_THROWS_AS((DistTensor<double, Client>::create(client, "emb", RowKind::node, 3)),
                  RemoteError);
  CHECK_THROWS_AS((DistTensor<double, Client>::open(client, "emb", RowKind::node)), DTypeError);
  CHECK_THROWS_AS((DistTensor<float, Client>::open(client, "nope", RowKind::node)), NotFound);
  try {
    DistTensor<float, Client>::create(client, "emb", RowKind::node, 4);
  } catch (const RemoteError& e) {
    CHECK(e.status() == Status::shape_mismatch);
    CHECK_THAT(e.what(), Catch::Contains("emb"));
  }
  client->remove("emb");
  CHECK_THROWS_AS((DistTensor<float, Client>::open(client, "emb", RowKind::node)), NotFound);
}

TEST_CASE("initial values depend on the row's global ID, not on the partitioning", "[dist]") {
  Fixture f2(2), f3(3);
  StandaloneCluster<> c2(f2.config), c3(f3.config);
  auto t2 = DistTensor<float, Client>::create(c2.client<RangePartitionBook>(), "e", RowKind::node,
                                              2, {InitKind::normal, 0, 1, 4});
  auto t3 = DistTensor<float, Client>::create(c3.client<RangePartitionBook>(), "e", RowKind::node,
                                              2, {InitKind::normal, 0, 1, 4});
  const auto ids = shuffled_ids(f2.data.num_nodes, 5);
  CHECK(t2.pull(ids) == t3.pull(ids));
  // Roughly standard normal.
  const auto v = t2.pull(ids);
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  CHECK(std::abs(mean) < 0.15);
}

TEST_CASE("a barrier returns once every trainer arrived and times out otherwise", "[dist]") {
  Fixture f(2);
  StandaloneCluster<> cluster(f.config);
  constexpr int trainers = 4;
  auto client = cluster.client<RangePartitionBook>(trainers);
  std::atomic<int> passed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < trainers; ++i)
    threads.emplace_back([&] {
      client->barrier("b");
      client->barrier("b");  // reusable
      ++passed;
    });
  for (auto& t : threads) t.join();
  CHECK(passed == trainers);

  auto impatient =
      cluster.client<RangePartitionBook>(2, {.timeout = std::chrono::milliseconds(200)});
  const auto start = std::chrono::steady_clock::now();
  try {
    impatient->barrier("lonely");
    FAIL("barrier with one of two trainers returned");
  } catch (const RemoteError& e) {
    CHECK(e.status() == Status::timeout);
    CHECK_THAT(e.what(), Catch::Contains("1 of 2"));
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

namespace {
/// Dense reference of one optimizer step over rows with (already summed) gradients.
struct DenseRef {
  std::vector<double> w, a, b, t;
  std::size_t d;
  void step(bool adam, const std::vector<std::int64_t>& ids, const std::vector<float>& g, double lr,
            double eps, double b1 = 0.9, double b2 = 0.999) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto r = static_cast<std::size_t>(ids[i]);
      if (adam) t[r] += 1;
      for (std::size_t c = 0; c < d; ++c) {
        const double gc = g[i * d + c];
        auto& wc = w[r * d + c];
        if (!adam) {
          a[r * d + c] += gc * gc;
          wc -= lr * gc / (std::sqrt(a[r * d + c]) + eps);
        } else {
          a[r * d + c] = b1 * a[r * d + c] + (1 - b1) * gc;
          b[r * d + c] = b2 * b[r * d + c] + (1 - b2) * gc * gc;
          const double mh = a[r * d + c] / (1 - std::pow(b1, t[r]));
          const double vh = b[r * d + c] / (1 - std::pow(b2, t[r]));
          wc -= lr * mh / (std::sqrt(vh) + eps);
        }
      }
    }
  }
};
}  // namespace

TEST_CASE("sparse Adagrad and Adam on the servers match a dense reference", "[dist]") {
  Fixture f(3);
  StandaloneCluster<> cluster(f.config);
  auto client = cluster.client<RangePartitionBook>();
  const bool adam = GENERATE(false, true);
  const std::int64_t dim = 3;
  auto emb = DistEmbedding<Client>::create(client, adam ? "ea" : "eg", dim);
  auto opt = adam ? SparseAdam<Client>({emb}, 0.05) : SparseAdagrad<Client>({emb}, 0.1);
  const auto all = shuffled_ids(f.data.num_nodes, 0);
  std::vector<std::int64_t> sorted_all(all);
  std::sort(sorted_all.begin(), sorted_all.end());
  const auto init = emb.pull(sorted_all);
  DenseRef ref{std::vector<double>(init.begin(), init.end()), std::vector<double>(init.size(), 0),
               std::vector<double>(init.size(), 0), std::vector<double>(sorted_all.size(), 0),
               static_cast<std::size_t>(dim)};
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<std::int64_t> pick(0, 40);  // few rows: many duplicates
  std::normal_distribution<float> gauss;
  for (int step = 0; step < 4; ++step) {
    std::map<std::int64_t, std::vector<float>> summed;
    for (int rec = 0; rec < 2; ++rec) {
      std::vector<std::int64_t> ids(30);
      std::vector<float> g(30 * dim);
      for (auto& x : ids) x = pick(rng) * 11 % f.data.num_nodes;
      for (auto& x : g) x = gauss(rng);
      emb.record_gradient(ids, g);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        auto& s = summed[ids[i]];
        s.resize(dim, 0);
        for (std::int64_t c = 0; c < dim; ++c) s[c] += g[i * dim + c];
      }
    }
    std::vector<std::int64_t> uid;
    std::vector<float> ug;
    for (auto& [id, g] : summed) {
      uid.push_back(id);
      ug.insert(ug.end(), g.begin(), g.end());
    }
    opt.step();
    ref.step(adam, uid, ug, adam ? 0.05 : 0.1, adam ? 1e-8 : 1e-10);
  }
  const auto got = emb.pull(sorted_all);
  for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(ref.w[i]).margin(1e-4));
  // Rows never touched keep their initial values exactly.
  CHECK(got.back() == init.back());
  CHECK(emb.take_gradients().ids.empty());
}

namespace {
/// Steps `opt` over `emb` with `steps` rounds of gradients drawn from `seed` (repeatable).
void random_steps(DistEmbedding<Client>& emb, SparseOptimizer<Client>& opt, std::int64_t n,
                  std::uint64_t seed, int steps) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> pick(0, n - 1);
  std::normal_distribution<float> gauss;
  for (int s = 0; s < steps; ++s) {
    std::vector<std::int64_t> ids(40);
    std::vector<float> g(ids.size() * static_cast<std::size_t>(emb.dim()));
    for (auto& x : ids) x = pick(rng);
    for (auto& x : g) x = gauss(rng);
    emb.record_gradient(ids, g);
    opt.step();
  }
}

/// Every row of float tensor `name` (rows and Adam state alike), in global ID order.
std::vector<float> all_rows(const std::shared_ptr<Client>& client, const std::string& name,
                            std::int64_t n) {
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  return DistTensor<float, Client>::open(client, name, RowKind::node).pull(ids);
}
}  // namespace

TEST_CASE("servers save their own embedding rows and Adam state and load them back exactly",
          "[dist][checkpoint]") {
  Fixture f(3);
  TempDir ckpt;
  StandaloneCluster<> cluster(f.config, ckpt.path());
  auto client = cluster.client<RangePartitionBook>();
  const std::int64_t n = f.data.num_nodes;
  auto emb = DistEmbedding<Client>::create(client, "emb", 4);
  auto opt = SparseAdam<Client>({emb}, 0.05);
  random_steps(emb, opt, n, 1, 3);
  emb.save("epoch-3");
  const char* tables[] = {"emb", "emb.adam_m", "emb.adam_v", "emb.adam_t"};
  std::vector<std::vector<float>> saved;
  for (const char* t : tables) saved.push_back(all_rows(client, t, n));

  // Each partition's server wrote its own rows, and only those.
  std::int64_t rows = 0;
  for (int p = 0; p < 3; ++p) {
    const auto dir = ckpt / ("epoch-3/part-" + std::to_string(p));
    REQUIRE(std::filesystem::exists(dir / "meta.json"));
    std::vector<std::int64_t> shape;
    read_npy_as<float>(dir / "emb.npy", &shape);
    REQUIRE(shape.size() == 2);
    CHECK(shape[0] == load_partition(f.config, p).num_inner_nodes);
    CHECK(shape[1] == 4);
    CHECK(std::filesystem::exists(dir / "emb%2Eadam_v.npy"));
    rows += shape[0];
  }
  CHECK(rows == n);

  // Training on changes everything; loading brings back every row and state bit.
  random_steps(emb, opt, n, 2, 3);
  const auto drifted = all_rows(client, "emb", n);
  CHECK(drifted != saved[0]);
  emb.load("epoch-3");
  for (std::size_t t = 0; t < 4; ++t) CHECK(all_rows(client, tables[t], n) == saved[t]);
  // ... so the same steps after the load repeat the first continuation bit for bit.
  random_steps(emb, opt, n, 2, 3);
  CHECK(all_rows(client, "emb", n) == drifted);

  // State created after a save is zeroed by a load, as if it had never been made.
  auto fresh = DistEmbedding<Client>::create(client, "fresh", 2);
  auto fresh_opt = SparseAdagrad<Client>({fresh}, 0.1);
  const auto before = all_rows(client, "fresh", n);
  fresh.save("untrained");
  random_steps(fresh, fresh_opt, n, 3, 2);
  fresh.load("untrained");
  CHECK(all_rows(client, "fresh", n) == before);
  const auto sums = all_rows(client, "fresh.adagrad_sum", n);
  CHECK(std::all_of(sums.begin(), sums.end(), [](float v) { return v == 0; }));

  client->remove_checkpoint("epoch-3");
  CHECK_FALSE(std::filesystem::exists(ckpt / "epoch-3"));
  CHECK(std::filesystem::exists(ckpt / "untrained"));
  client->remove_checkpoint("never-saved");  // nothing to remove: not an error
}

TEST_CASE("checkpoint requests with bad tags, tensors or files fail and change nothing",
          "[dist][checkpoint][bad_input]") {
  Fixture f(2);
  TempDir root;
  const auto ckpt = root / "ckpt";
  StandaloneCluster<> cluster(f.config, ckpt);
  auto client = cluster.client<RangePartitionBook>();
  const std::int64_t n = f.data.num_nodes;
  auto emb = DistEmbedding<Client>::create(client, "emb", 3);
  auto opt = SparseAdam<Client>({emb}, 0.05);
  random_steps(emb, opt, n, 4, 2);
  const auto expect_remote = [](auto&& call, Status status, const std::string& text) {
    try {
      call();
      FAIL("no error");
    } catch (const RemoteError& e) {
      CHECK(e.status() == status);
      CHECK_THAT(e.what(), Catch::Contains(text));
    }
  };
  // Tags are one folder name: nothing a client sends may point anywhere else.
  for (const std::string tag : {"", "../escape", "a/b", ".hidden", "/abs", "x y", "-lead"})
    expect_remote([&] { emb.save(tag); }, Status::bad_request, "checkpoint tag");
  expect_remote([&] { client->remove_checkpoint("../.."); }, Status::bad_request, "checkpoint tag");
  CHECK_FALSE(std::filesystem::exists(root / "escape"));
  CHECK_FALSE(std::filesystem::exists(ckpt));  // nothing was written at all

  expect_remote([&] { client->save_tensors("t", {"no-such-table"}); }, Status::not_found,
                "no-such-table");
  expect_remote([&] { emb.load("never-saved"); }, Status::not_found, "never-saved");

  emb.save("good");
  random_steps(emb, opt, n, 5, 1);
  const auto moved = all_rows(client, "emb", n);

  // A truncated state file: partition 1 refuses the whole load before writing anything.
  const auto victim = ckpt / "good/part-1/emb%2Eadam_m.npy";
  std::filesystem::resize_file(victim, std::filesystem::file_size(victim) - 8);
  expect_remote([&] { emb.load("good"); }, Status::internal_error, "emb%2Eadam_m.npy");
  {
    // Partition 0 loaded its rows; partition 1 kept the newer ones untouched.
    const Partition p1 = load_partition(f.config, 1);
    std::vector<std::int64_t> ids(p1.nid.begin(), p1.nid.begin() + p1.num_inner_nodes);
    const auto now = DistTensor<float, Client>::open(client, "emb", RowKind::node).pull(ids);
    const auto d = 3u;
    for (std::size_t i = 0; i < ids.size(); ++i)
      for (std::size_t c = 0; c < d; ++c)
        REQUIRE(now[i * d + c] == moved[static_cast<std::size_t>(ids[i]) * d + c]);
  }

  // Rows saved by another partitioning are refused by name.
  Fixture other(3);
  StandaloneCluster<> cluster3(other.config, ckpt);
  auto client3 = cluster3.client<RangePartitionBook>();
  auto emb3 = DistEmbedding<Client>::create(client3, "emb", 3);
  emb.save("two-parts");
  expect_remote([&] { emb3.load("two-parts"); }, Status::bad_request, "another partitioning");

  // The same name with a different width is refused before any row changes.
  emb.save("three-wide");
  StandaloneCluster<> again(f.config, ckpt);
  auto client_again = again.client<RangePartitionBook>();
  auto wide = DistEmbedding<Client>::create(client_again, "emb", 5);
  const auto wide_rows = all_rows(client_again, "emb", n);
  expect_remote([&] { wide.load("three-wide"); }, Status::shape_mismatch, "tensor 'emb' is");
  CHECK(all_rows(client_again, "emb", n) == wide_rows);

  // A server started without a checkpoint folder says how to give it one.
  KVServer<InMemoryStorage> bare(std::make_shared<InMemoryStorage>(), cluster.book(), 0);
  const Reply r = bare.handle(Request{
      MsgType::save_tensors, 1, Message::owning(TensorCheckpointRequest{"t", {"emb"}}.encode())});
  CHECK(r.status == Status::bad_request);
  CHECK_THAT(r.text(), Catch::Contains("--checkpoint-dir"));
}

TEST_CASE("gradients for rows outside the embedding are refused when recorded", "[dist]") {
  Fixture f(2);
  StandaloneCluster<> cluster(f.config);
  auto emb = DistEmbedding<Client>::create(cluster.client<RangePartitionBook>(), "e", 2);
  CHECK_THROWS_AS(
      emb.record_gradient(std::vector<std::int64_t>{f.data.num_nodes}, std::vector<float>{1, 1}),
      IdOutOfRange);
  CHECK_THROWS_AS(emb.record_gradient(std::vector<std::int64_t>{0}, std::vector<float>{1}),
                  ShapeError);
}

TEST_CASE("node_split gives every trainer the same count, covers the set, prefers own nodes",
          "[dist]") {
  Fixture f(2);
  StandaloneCluster<> cluster(f.config);
  const auto& book = (*(cluster.book()).get_if<RangePartitionBook>());
  std::vector<std::int64_t> train;
  for (std::int64_t v = 0; v < f.data.num_nodes; v += 3) train.push_back(v);  // 167 IDs
  for (const bool even : {true, false}) {
    std::vector<std::int64_t> all;
    std::size_t min_size = SIZE_MAX, max_size = 0;
    const int trainers = 4;
    for (int r = 0; r < trainers; ++r) {
      const auto mine = node_split(std::span<const std::int64_t>(train), book,
                                   {.rank = r, .num_trainers = trainers, .force_even = even});
      min_size = std::min(min_size, mine.size());
      max_size = std::max(max_size, mine.size());
      // Ranks 0-1 sit on machine 0, 2-3 on machine 1: most of their nodes are local.
      std::vector<std::int32_t> owner(mine.size());
      book.node_partition(mine, owner);
      const auto own = std::count(owner.begin(), owner.end(), r / 2);
      CHECK(own * 4 >= static_cast<long>(mine.size()) * 3);
      all.insert(all.end(), mine.begin(), mine.end());
    }
    if (even) {
      CHECK(min_size == max_size);
      CHECK(all.size() == 168);  // ceil(167 / 4) * 4: one repeat
    } else {
      CHECK(max_size - min_size <= 1);
      CHECK(all.size() == train.size());
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    CHECK(all == train);
  }
  CHECK_THROWS_AS(node_split(std::span<const std::int64_t>(), book, {}), InvalidArgument);
  CHECK_THROWS_AS(
      node_split(std::span<const std::int64_t>(train), book, {.rank = 4, .num_trainers = 4}),
      IdOutOfRange);
  const std::vector<std::int64_t> bad{f.data.num_nodes};
  CHECK_THROWS_AS(node_split(std::span<const std::int64_t>(bad), book, {}), IdOutOfRange);
}

TEST_CASE("balance_shares evens out skewed costs, keeps sizes and moves few IDs", "[dist]") {
  // Three shares of 400 IDs; share 0 holds the expensive ones (skewed, like a partition of
  // hubs in an R-MAT graph), the others cheap ones of varied cost.
  std::mt19937_64 rng(7);
  const int t = 3, per = 400;
  std::vector<std::vector<std::int64_t>> shares(t);
  std::vector<double> cost_of(static_cast<std::size_t>(t * per));
  for (int r = 0; r < t; ++r)
    for (int i = 0; i < per; ++i) {
      const std::int64_t id = r * per + i;
      shares[static_cast<std::size_t>(r)].push_back(id);
      const double c = 1.0 + static_cast<double>(rng() % (r == 0 ? 40 : 12));
      cost_of[static_cast<std::size_t>(id)] = c;
    }
  const auto before = shares;
  const auto cost = [&](std::int64_t id) { return cost_of[static_cast<std::size_t>(id)]; };
  const auto totals = [&](const std::vector<std::vector<std::int64_t>>& s) {
    std::vector<double> out;
    for (const auto& share : s) {
      double sum = 0;
      for (const auto id : share) sum += cost(id);
      out.push_back(sum);
    }
    return out;
  };
  const auto spread = [](const std::vector<double>& x) {
    return *std::max_element(x.begin(), x.end()) / *std::min_element(x.begin(), x.end());
  };
  REQUIRE(spread(totals(shares)) > 2.0);

  balance_shares(shares, cost);
  CHECK(spread(totals(shares)) < 1.01);
  std::vector<std::int64_t> all;
  std::size_t moved = 0;
  for (int r = 0; r < t; ++r) {
    const auto& now = shares[static_cast<std::size_t>(r)];
    CHECK(now.size() == static_cast<std::size_t>(per));
    for (std::size_t i = 0; i < now.size(); ++i)
      moved += now[i] != before[static_cast<std::size_t>(r)][i] ? 1 : 0;
    all.insert(all.end(), now.begin(), now.end());
  }
  std::sort(all.begin(), all.end());
  for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i] == static_cast<std::int64_t>(i));
  CHECK(moved < all.size() / 2);  // most IDs stay with their trainer

  // Deterministic: the same input gives the same shares.
  auto again = before;
  balance_shares(again, cost);
  CHECK(again == shares);
  // Already even (equal costs): nothing moves.
  auto flat = before;
  balance_shares(flat, [](std::int64_t) { return 1.0; });
  CHECK(flat == before);
}

TEST_CASE("balance_shares never moves a padding repeat into the share holding its original",
          "[dist]") {
  // node_split with force_even pads the last share with the first IDs of the order: 7 IDs
  // over 2 trainers give share 1 a second copy of share 0's first ID. Share 0's IDs are the
  // expensive ones, so balancing wants to move them, the repeated one included: a swap
  // would leave share 1 with the ID twice (a loader refuses that: "listed twice").
  for (int n = 3; n <= 41; ++n) {
    INFO(n << " IDs over 2 and 3 trainers");
    std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
    std::iota(ids.begin(), ids.end(), 0);
    const RangePartitionBook book(std::vector<std::int64_t>{n}, std::vector<std::int64_t>{4 * n});
    for (const std::int32_t t : {2, 3}) {
      std::vector<std::vector<std::int64_t>> shares;
      for (std::int32_t r = 0; r < t; ++r)
        shares.push_back(node_split(std::span<const std::int64_t>(ids), book,
                                    {.rank = r, .num_trainers = t}));
      const auto before = shares;
      // The lowest IDs (the repeated ones among them) cost the most.
      balance_shares(shares, [&](std::int64_t id) { return 1.0 + 100.0 / (1.0 + id); });
      std::vector<std::int64_t> all_before, all_after;
      for (std::size_t r = 0; r < shares.size(); ++r) {
        auto s = shares[r];
        std::sort(s.begin(), s.end());
        CHECK(std::adjacent_find(s.begin(), s.end()) == s.end());
        CHECK(shares[r].size() == before[r].size());
        all_before.insert(all_before.end(), before[r].begin(), before[r].end());
        all_after.insert(all_after.end(), shares[r].begin(), shares[r].end());
      }
      std::sort(all_before.begin(), all_before.end());
      std::sort(all_after.begin(), all_after.end());
      CHECK(all_after == all_before);  // the same IDs, repeats included
    }
  }
}

}  // namespace test_distributed_dist_tensor

// DistGraph in standalone mode: sizes, data, degrees, find_edges, sampling through servers.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/sampling/labor_sampler.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "support/temp_dir.hpp"

namespace test_distributed_dist_graph {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {
struct Fixture {
  TempDir tmp;
  Dataset data;
  Graph graph;
  std::filesystem::path config;
  std::vector<std::int64_t> orig_of, global_of;  // node ID maps
  int parts = 3;
  explicit Fixture(int halo_hops = 1, int num_parts = 3) : parts(num_parts) {
    SbmOptions o;
    o.num_nodes = 800;
    o.num_classes = 4;
    o.avg_degree = 10;
    o.feat_dim = 6;
    o.seed = 8;
    data = sbm_dataset(o);
    graph = dataset_graph(data);
    partition_dataset(data, "g", parts, tmp.path(),
                      {.method = PartMethod::metis, .halo_hops = halo_hops, .seed = 2});
    config = tmp / "g.json";
    orig_of.assign(static_cast<std::size_t>(data.num_nodes), -1);
    global_of.assign(orig_of.size(), -1);
    for (int p = 0; p < parts; ++p) {
      const Partition part = load_partition(config, p);
      for (std::int64_t v = 0; v < part.num_inner_nodes; ++v) {
        const auto g = part.nid[static_cast<std::size_t>(v)],
                   orig = part.orig_nid[static_cast<std::size_t>(v)];
        orig_of[static_cast<std::size_t>(g)] = orig;
        global_of[static_cast<std::size_t>(orig)] = g;
      }
    }
  }
};
}  // namespace

TEST_CASE("a standalone DistGraph answers sizes, data, degrees and find_edges like the input",
          "[dist]") {
  // Two-hop halos store edges other partitions own: each must still count once.
  const int halo_hops = GENERATE(1, 2);
  INFO("halo_hops " << halo_hops);
  Fixture f(halo_hops);
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  CHECK(g.num_nodes() == f.data.num_nodes);
  CHECK(g.num_edges() == f.graph.num_edges());
  CHECK(g.ntypes() == std::vector<std::string>{"_N"});
  std::vector<std::int64_t> all(static_cast<std::size_t>(g.num_nodes()));
  std::iota(all.begin(), all.end(), 0);
  const auto in = g.in_degrees(all), out = g.out_degrees(all);
  for (std::size_t v = 0; v < all.size(); ++v) {
    REQUIRE(in[v] == f.graph.in.degree(f.orig_of[v]));
    REQUIRE(out[v] == f.graph.out.degree(f.orig_of[v]));
  }
  const auto labels = g.ndata<std::int64_t>("label").pull(all);
  for (std::size_t v = 0; v < all.size(); ++v)
    REQUIRE(labels[v] == f.data.label[static_cast<std::size_t>(f.orig_of[v])]);
  std::vector<std::int64_t> eids(static_cast<std::size_t>(g.num_edges()));
  std::iota(eids.begin(), eids.end(), 0);
  const auto ends = g.find_edges(eids);
  std::multiset<std::pair<std::int64_t, std::int64_t>> want, got;
  for (std::int64_t e = 0; e < f.graph.num_edges(); ++e)
    want.emplace(f.data.src[static_cast<std::size_t>(e)], f.data.dst[static_cast<std::size_t>(e)]);
  for (std::size_t i = 0; i < eids.size(); ++i)
    got.emplace(f.orig_of[static_cast<std::size_t>(ends.src[i])],
                f.orig_of[static_cast<std::size_t>(ends.dst[i])]);
  CHECK(got == want);
  auto h = g.create_ndata<float>("h", 2, {InitKind::normal, 0, 1, 3});
  CHECK(g.ndata<float>("h").pull(all) == h.pull(all));
  CHECK_THROWS_AS(g.ndata<float>("missing"), NotFound);
  CHECK_THROWS_AS(g.in_degrees(std::vector<std::int64_t>{g.num_nodes()}), IdOutOfRange);
}

TEST_CASE("distributed sample_neighbors picks real in-edges, fanout-bounded and reproducible",
          "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  std::vector<std::int64_t> seeds;
  for (std::int64_t v = 0; v < g.num_nodes(); v += 7) seeds.push_back(v);
  const SampleKey key{.seed = 1, .epoch = 2, .rank = 0, .batch = 3, .layer = 1};
  const Frontier fr = g.sample_neighbors(seeds, 4, key);
  std::map<std::int64_t, int> per_seed;
  for (std::size_t i = 0; i < fr.src.size(); ++i) {
    ++per_seed[fr.dst[i]];
    const auto u = f.orig_of[static_cast<std::size_t>(fr.src[i])];
    const auto v = f.orig_of[static_cast<std::size_t>(fr.dst[i])];
    const auto nb = f.graph.in.neighbors(v);
    REQUIRE(std::find(nb.begin(), nb.end(), u) != nb.end());
  }
  for (auto s : seeds)
    CHECK(per_seed[s] ==
          std::min<std::int64_t>(4, f.graph.in.degree(f.orig_of[static_cast<std::size_t>(s)])));
  // Same key: same picks; another epoch: different picks.
  const Frontier again = g.sample_neighbors(seeds, 4, key);
  CHECK(again.eid == fr.eid);
  const Frontier other = g.sample_neighbors(seeds, 4, SampleKey{.seed = 1, .epoch = 3});
  CHECK(other.eid != fr.eid);
  // Full neighbourhood and -1.
  const Frontier full = g.sample_neighbors(seeds, -1, key, sampler_spec<FullNeighborSampler>());
  std::int64_t total = 0;
  for (auto s : seeds) total += f.graph.in.degree(f.orig_of[static_cast<std::size_t>(s)]);
  CHECK(static_cast<std::int64_t>(full.eid.size()) == total);
  CHECK_THROWS_AS(g.sample_neighbors(seeds, -2, key), InvalidArgument);
  CHECK_THROWS_AS(g.sample_neighbors(std::vector<std::int64_t>{-1}, 2, key), IdOutOfRange);
}

TEST_CASE(
    "without edge IDs, distributed sampling gives the same edges from the servers, one owner "
    "or several",
    "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  std::vector<std::int64_t> every, first_owner, last_owner;
  for (std::int64_t v = g.num_nodes() - 1; v >= 0; v -= 3) every.push_back(v);  // descending
  std::vector<std::int32_t> owner(every.size());
  g.book().node_partition(every, owner);
  for (std::size_t i = 0; i < every.size(); ++i) {
    if (owner[i] == 0) first_owner.push_back(every[i]);
    if (owner[i] == f.parts - 1) last_owner.push_back(every[i]);
  }
  REQUIRE_FALSE(first_owner.empty());
  REQUIRE_FALSE(last_owner.empty());
  const SampleKey key{.seed = 6, .epoch = 1, .batch = 4, .layer = 0};
  for (const auto& seeds : {every, first_owner, last_owner}) {
    for (const SamplerSpec& sampler :
         {SamplerSpec{}, sampler_spec<FullNeighborSampler>(), sampler_spec<LaborSampler>()}) {
      INFO(seeds.size() << " seeds, sampler " << sampler.name);
      const Frontier all = g.sample_neighbors(seeds, 4, key, sampler);
      const Frontier bare = g.sample_neighbors(seeds, 4, key, sampler, EdgeIds::omitted);
      REQUIRE(all.num_edges() > 0);
      CHECK(bare.src == all.src);
      CHECK(bare.dst == all.dst);
      CHECK(bare.eid.empty());
      CHECK(all.eid.size() == all.src.size());
    }
  }
  CHECK_THROWS_AS(g.sample_neighbors(every, -2, key, {}, EdgeIds::omitted), InvalidArgument);
  CHECK_THROWS_AS(
      g.sample_neighbors(std::vector<std::int64_t>{g.num_nodes()}, 2, key, {}, EdgeIds::omitted),
      IdOutOfRange);
}

TEST_CASE(
    "a trainer co-located with a partition samples its own seeds without edge IDs itself, the "
    "same edges, and refuses a server's counts that disagree with its sources",
    "[dist][bad_input]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  using Graph = decltype(cluster.graph());
  using Client = typename Graph::client_type;
  // Every partition's handler counts its sample_sources requests and, with `tamper`, adds
  // it to the first positive count of its answer.
  std::int64_t asked[3] = {0, 0, 0};
  std::int64_t tamper = 0;
  std::vector<Handler> handlers = cluster.handlers();
  for (std::size_t p = 0; p < handlers.size(); ++p)
    handlers[p] = [&, p, inner = handlers[p]](const Request& req) {
      Reply r = inner(req);
      if (req.type != MsgType::sample_sources) return r;
      ++asked[p];
      if (tamper == 0 || r.status != Status::ok) return r;
      auto arrays = std::make_shared<std::vector<std::vector<std::int64_t>>>();
      for (const auto part : r.body.parts) {
        const auto* v = reinterpret_cast<const std::int64_t*>(part.data());
        arrays->emplace_back(v, v + part.size() / 8);
      }
      auto& counts = (*arrays)[0];
      const auto first = std::find_if(counts.begin(), counts.end(), [](auto c) { return c > 0; });
      if (first == counts.end()) return r;
      *first += tamper;
      Reply out;
      for (const auto& a : *arrays) out.body.parts.push_back(std::as_bytes(std::span(a)));
      out.body.keep_alive = arrays;
      return out;
    };
  const auto remote_only = cluster.client<RangePartitionBook>();
  ClusterLayout layout = remote_only->layout();
  layout.machine_id = 0;
  // Machine 0's storage, as a co-located trainer shares it (the cluster outlives it).
  const std::shared_ptr<InMemoryStorage> storage0(std::shared_ptr<void>{},
                                                  &cluster.server(0).kv().storage());
  const Graph here(std::make_shared<Client>(std::make_shared<InProcessTransport>(handlers),
                                            remote_only->book(), layout, storage0),
                   std::make_shared<const Partition>(load_partition(f.config, 0)));
  const Graph served = cluster.graph();
  std::vector<std::int64_t> seeds;
  for (std::int64_t v = here.num_nodes() - 1; v >= 0; v -= 3) seeds.push_back(v);
  const SampleKey key{.seed = 2, .epoch = 5, .batch = 1};
  for (const SamplerSpec& sampler : {SamplerSpec{}, sampler_spec<LaborSampler>()}) {
    INFO(sampler.name);
    const Frontier want = served.sample_neighbors(seeds, 4, key, sampler);
    const Frontier got = here.sample_neighbors(seeds, 4, key, sampler, EdgeIds::omitted);
    CHECK(got.src == want.src);
    CHECK(got.dst == want.dst);
    CHECK(got.eid.empty());
  }
  CHECK(asked[0] == 0);  // machine 0's seeds never left the trainer
  CHECK(asked[1] == 2);
  CHECK(asked[2] == 2);
  // Answers are checked in partition order: partition 1's tampered one is refused first.
  const auto refused = [&](std::int64_t by) {
    tamper = by;
    try {
      (void)here.sample_neighbors(seeds, 4, key, {}, EdgeIds::omitted);
    } catch (const ProtocolError& e) {
      return std::string(e.what());
    }
    return std::string("no ProtocolError");
  };
  CHECK_THAT(refused(1), Catch::Contains("sample_sources: partition 1 answered a count of"));
  CHECK_THAT(refused(-1000), Catch::Contains("partition 1 answered a count of -"));
  CHECK_THAT(refused(-1), Catch::Contains("partition 1 answered counts summing to"));
  tamper = 0;
  CHECK(here.sample_neighbors(seeds, 4, key, {}, EdgeIds::omitted).num_edges() > 0);
}

TEST_CASE("labor sampling through the servers picks what it picks on the whole graph", "[dist]") {
  // LABOR's picks depend on the key, the neighbours' global IDs and fanout / degree only,
  // so two partitions served apart pick exactly the edges of the unpartitioned graph
  // viewed under the same global IDs.
  Fixture f(1, 2);
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  std::vector<std::int64_t> global_eid(static_cast<std::size_t>(f.graph.num_edges()), -1);
  for (int p = 0; p < f.parts; ++p) {
    const Partition part = load_partition(f.config, p);
    for (std::size_t i = 0; i < part.eid.size(); ++i)
      global_eid[static_cast<std::size_t>(part.orig_eid[i])] = part.eid[i];
  }
  std::vector<std::int64_t> whole_eid(f.graph.in.edge_ids.span().begin(),
                                      f.graph.in.edge_ids.span().end());
  for (auto& e : whole_eid) e = global_eid[static_cast<std::size_t>(e)];
  const LocalGraphView whole{f.graph.in.indptr.span(), f.graph.in.indices.span(), whole_eid,
                             f.global_of, EdgeDir::in};
  std::vector<std::int64_t> seeds, orig_seeds;
  for (std::int64_t v = 0; v < g.num_nodes(); v += 3) {
    seeds.push_back(v);
    orig_seeds.push_back(f.orig_of[static_cast<std::size_t>(v)]);
  }
  const auto edges = [](const Frontier& fr) {
    std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> e;
    for (std::size_t i = 0; i < fr.src.size(); ++i) e.emplace_back(fr.dst[i], fr.src[i], fr.eid[i]);
    std::sort(e.begin(), e.end());
    return e;
  };
  for (const std::int64_t fanout : {3, 5, -1}) {
    INFO("fanout " << fanout);
    const SampleKey key{.seed = 2, .epoch = 1, .rank = 1, .batch = 4, .layer = 1};
    const Frontier served = g.sample_neighbors(seeds, fanout, key, sampler_spec<LaborSampler>());
    const Frontier local = sample_neighbors_local(whole, orig_seeds, fanout, key, LaborSampler{});
    CHECK(served.num_edges() > 0);
    CHECK(edges(served) == edges(local));
  }
}

TEST_CASE("weighted distributed sampling never picks zero-probability edges", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  auto p = g.create_edata<float>("p", 1);
  std::vector<std::int64_t> eids(static_cast<std::size_t>(g.num_edges()));
  std::iota(eids.begin(), eids.end(), 0);
  std::vector<float> probs(eids.size());
  for (std::size_t e = 0; e < probs.size(); ++e) probs[e] = e % 2 == 0 ? 1.0f : 0.0f;
  p.push(eids, probs);
  std::vector<std::int64_t> seeds(static_cast<std::size_t>(g.num_nodes()));
  std::iota(seeds.begin(), seeds.end(), 0);
  const Frontier fr =
      g.sample_neighbors(seeds, 3, SampleKey{.seed = 4}, WeightedSampler::spec("p"));
  REQUIRE(!fr.eid.empty());
  for (auto e : fr.eid) REQUIRE(e % 2 == 0);
  CHECK_THROWS_AS(g.sample_neighbors(seeds, 3, SampleKey{}, WeightedSampler::spec("nope")),
                  RemoteError);
}

}  // namespace test_distributed_dist_graph

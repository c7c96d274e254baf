// Compositions end to end in one process: a user's sampler in the sampler set, books
// chosen by the composition (basic books of --no-relabel partitions), original IDs, and
// what a server answers for samplers it was not built with.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <numeric>
#include <string>

#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "support/temp_dir.hpp"

namespace test_distributed_policies {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

/// Test sampler: the first min(fanout, k) in-edges of each seed in row order, k from its
/// parameter block; a rule no built-in sampler implements.
class FirstKSampler {
 public:
  using policy_category = sampler_tag;
  static constexpr std::string_view wire_name = "first_k";
  std::int64_t k = 1;

  static SamplerSpec spec(std::int64_t k) {
    HeadWriter w;
    w.put(k);
    return {std::string(wire_name), w.take()};
  }
  static FirstKSampler at_site(HeadReader& params, SamplerSite&) {
    FirstKSampler s;
    s.k = params.get<std::int64_t>();
    if (s.k < 0) throw ProtocolError("first_k: k " + std::to_string(s.k) + "; expected >= 0");
    return s;
  }
  void validate(const LocalGraphView&) const noexcept {}
  void sample(const LocalGraphView& g, std::span<const std::int64_t> seeds, std::int64_t fanout,
              const SampleKey&, Picks& picks) const {
    for (auto v : seeds) {
      std::int64_t n = std::min(g.degree(v), k);
      if (fanout >= 0) n = std::min(n, fanout);
      picks.take_all(g.row_begin(v), n);
    }
  }
};
static_assert(DistributedSampler<FirstKSampler>);

struct WithFirstK : DefaultPolicies {
  using book_type = RangePartitionBook;
  using transport_type = InProcessTransport;
  using storage_type = InMemoryStorage;
  using sampler_set = BuiltinSamplers::with<FirstKSampler>;
};
static_assert(Composition<WithFirstK>);

struct Fixture {
  TempDir tmp;
  Dataset data;
  std::filesystem::path config;
  explicit Fixture(bool relabel = true) {
    SbmOptions o;
    o.num_nodes = 600;
    o.num_classes = 3;
    o.avg_degree = 8;
    o.feat_dim = 4;
    o.seed = 3;
    data = sbm_dataset(o);
    partition_dataset(data, "g", 2, tmp.path(),
                      {.method = PartMethod::metis, .relabel = relabel, .seed = 1});
    config = tmp / "g.json";
  }
};

std::vector<std::int64_t> all_ids(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

}  // namespace

TEST_CASE("a user's sampler in the composition runs on the servers with its parameters", "[dist]") {
  Fixture f;
  StandaloneCluster<WithFirstK> cluster(f.config);
  auto g = cluster.graph();
  const auto seeds = all_ids(g.num_nodes());
  const Frontier fr = g.sample_neighbors(seeds, 5, SampleKey{}, FirstKSampler::spec(2));
  const Frontier full =
      g.sample_neighbors(seeds, -1, SampleKey{}, sampler_spec<FullNeighborSampler>());
  // Per seed: exactly the first min(2, degree) edges of its full row, in row order.
  std::map<std::int64_t, std::vector<std::int64_t>> rows, picked;
  for (std::size_t i = 0; i < full.eid.size(); ++i) rows[full.dst[i]].push_back(full.eid[i]);
  for (std::size_t i = 0; i < fr.eid.size(); ++i) picked[fr.dst[i]].push_back(fr.eid[i]);
  REQUIRE(!picked.empty());
  for (const auto& [v, row] : rows) {
    const std::vector<std::int64_t> want(row.begin(),
                                         row.begin() + std::min<std::ptrdiff_t>(2, row.size()));
    CHECK(picked[v] == want);
  }
}

TEST_CASE(
    "a server answers a sampler outside its set and malformed parameters with bad_request "
    "and keeps serving",
    "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);  // built-in samplers only
  auto& server = cluster.server(0);
  const std::vector<std::int64_t> seeds = {server.partition().nid[0]};
  auto request = [&](SamplerSpec spec) {
    Request req;
    req.type = MsgType::sample_neighbors;
    auto head = SampleRequest{SampleKey{}, 3, std::move(spec), 1}.encode();
    req.body = Message::owning(std::move(head));
    req.body.parts.push_back(std::as_bytes(std::span(seeds)));
    return server.handle(req);
  };
  const Reply unknown = request(FirstKSampler::spec(2));
  CHECK(unknown.status == Status::bad_request);
  CHECK_THAT(
      unknown.text(),
      Catch::Contains("first_k") &&
          Catch::Contains("[uniform, uniform_replace, full, weighted, per_relation, labor]"));
  SamplerSpec truncated = WeightedSampler::spec("p");
  truncated.params.resize(3);
  const Reply bad = request(truncated);
  CHECK(bad.status == Status::bad_request);
  CHECK_THAT(bad.text(), Catch::Contains("sampler 'weighted' parameters"));
  SamplerSpec trailing = sampler_spec<UniformSampler>();
  trailing.params.push_back(std::byte{1});
  CHECK(request(trailing).status == Status::bad_request);
  CHECK(request(SamplerSpec{}).status == Status::ok);

  // A trainer whose composition has a sampler the servers lack: the server names it.
  BasicDistGraph<WithFirstK> mismatched(cluster.client<RangePartitionBook>());
  CHECK_THROWS_WITH(mismatched.sample_neighbors(seeds, 2, SampleKey{}, FirstKSampler::spec(1)),
                    Catch::Contains("first_k"));
  // And a sampler outside the trainer's own set never leaves the trainer.
  auto g = cluster.graph();
  CHECK_THROWS_AS(g.sample_neighbors(seeds, 2, SampleKey{}, FirstKSampler::spec(1)),
                  InvalidArgument);
}

TEST_CASE("DistGraph maps its node and edge IDs back to the input's", "[dist]") {
  const bool relabel = GENERATE(true, false);
  INFO("relabel " << relabel);
  Fixture f(relabel);
  StandaloneCluster<Policies<AnyPartitionBook, InProcessTransport, InMemoryStorage>> cluster(
      f.config);
  auto g = cluster.graph();
  const auto nodes = all_ids(g.num_nodes());
  const auto orig = g.orig_node_ids(nodes);
  // Every input node exactly once.
  auto sorted = orig;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == nodes);
  if (relabel) CHECK(orig != nodes);  // relabeling moved some IDs: the map is needed
  // Features follow the map: row v of the graph is row orig[v] of the input.
  const auto feat = g.template ndata<float>("feat").pull(nodes);
  for (std::size_t v = 0; v < nodes.size(); v += 37)
    for (std::int64_t c = 0; c < f.data.feat_dim; ++c)
      REQUIRE(feat[v * 4 + static_cast<std::size_t>(c)] ==
              f.data.feat[static_cast<std::size_t>(orig[v] * f.data.feat_dim + c)]);
  // Edges: the endpoints of edge e are the input edge orig_e's, through the node map.
  const auto edges = all_ids(g.num_edges());
  const auto orig_e = g.orig_edge_ids(edges);
  const auto ends = g.find_edges(edges);
  for (std::size_t e = 0; e < edges.size(); e += 11) {
    const auto oe = static_cast<std::size_t>(orig_e[e]);
    REQUIRE(orig[static_cast<std::size_t>(ends.src[e])] == f.data.src[oe]);
    REQUIRE(orig[static_cast<std::size_t>(ends.dst[e])] == f.data.dst[oe]);
  }
  CHECK_THROWS_AS(g.orig_node_ids(std::vector<std::int64_t>{g.num_nodes()}), IdOutOfRange);
}

TEST_CASE(
    "a partition made without relabeling serves basic and any books, and a range book "
    "request says which book to ask for",
    "[dist]") {
  Fixture f(false);
  StandaloneCluster<> cluster(f.config);
  CHECK(cluster.book().kind_name() == "basic");
  CHECK_THROWS_WITH(cluster.graph(), Catch::Contains("graph<BasicPartitionBook>()"));
  auto basic = cluster.graph<BasicPartitionBook>();
  auto any = cluster.graph<AnyPartitionBook>();
  const auto seeds = all_ids(basic.num_nodes());
  CHECK(basic.sample_neighbors(seeds, 3, SampleKey{.seed = 2}).eid ==
        any.sample_neighbors(seeds, 3, SampleKey{.seed = 2}).eid);
  CHECK(basic.in_degrees(seeds) == any.in_degrees(seeds));
}

}  // namespace test_distributed_policies

// EdgeDataLoader over one canonical edge type of a typed standalone DistGraph: typed
// negatives, name resolution, determinism, exclusion, typed features and refused input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/hetero_synthetic.hpp"
#include "distgraph/loaders/edge_data_loader.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "distgraph/sampling/rng.hpp"
#include "support/loader_batches.hpp"
#include "support/small_hsbm.hpp"
#include "support/temp_dir.hpp"

namespace test_loaders_hetero_edge_loader {

using namespace distgraph;
using distgraph::test::TempDir;
using distgraph::test::whole_epoch;

namespace {

/// small_hsbm (papers, authors, venues; 5 edge types) in 2 METIS partitions, partitioned
/// once for the whole run.
struct TypedParts {
  TempDir tmp;
  HeteroDataset data = test::small_hsbm();
  std::filesystem::path config = tmp / "h.json";
  TypedParts() {
    partition_hetero_dataset(data, "h", 2, tmp.path(), {.method = PartMethod::metis, .seed = 2});
  }
};

const TypedParts& typed_parts() {
  static const TypedParts parts;
  return parts;
}

/// Global IDs of every edge of type `etype`.
template <class G>
std::vector<std::int64_t> edges_of(const G& g, const std::string& etype) {
  const auto view = g.edges(etype);
  std::vector<std::int64_t> wise(static_cast<std::size_t>(view.count()));
  std::iota(wise.begin(), wise.end(), 0);
  return view.to_global(wise);
}

/// Every n-th of `ids`, starting at the first.
std::vector<std::int64_t> every_nth(const std::vector<std::int64_t>& ids, std::size_t n) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < ids.size(); i += n) out.push_back(ids[i]);
  return out;
}

/// Global IDs of the negative destinations of a batch, in neg_dst order.
std::vector<std::int64_t> negative_nodes(const EdgeBatch& b) {
  std::vector<std::int64_t> out;
  for (const auto p : b.neg_dst) out.push_back(b.output_nodes[static_cast<std::size_t>(p)]);
  return out;
}

/// Two node types and one relation name in both directions, a:r:b and b:r:a: "r" alone is
/// ambiguous.
HeteroDataset two_way_dataset() {
  const std::int64_t n = 24;
  std::vector<std::int64_t> src, dst;
  for (std::int64_t i = 0; i < n; ++i)
    for (const std::int64_t step : {1, 5}) {
      src.push_back(i);
      dst.push_back((i + step) % n);
    }
  const auto m = static_cast<std::int64_t>(src.size());
  HeteroDataset h;
  h.name = "two_way";
  h.types = TypeMap({"a", "b"}, {n, n}, {{"a", "r", "b"}, {"b", "r", "a"}}, {m, m});
  h.src = {Buffer<std::int64_t>(src), Buffer<std::int64_t>(src)};
  h.dst = {Buffer<std::int64_t>(dst), Buffer<std::int64_t>(dst)};
  h.feat = {Buffer<float>(), Buffer<float>()};
  h.feat_dim = {0, 0};
  return h;
}

/// An EdgeLoaderGraph without types: sizes, node data, sampling and find_edges only.
struct UntypedView {
  StandaloneGraph g;
  template <class V>
  using tensor_type = StandaloneGraph::tensor_type<V>;
  std::int64_t num_nodes() const { return g.num_nodes(); }
  std::int64_t num_edges() const { return g.num_edges(); }
  template <class V>
  tensor_type<V> ndata(const std::string& name) const {
    return g.ndata<V>(name);
  }
  EdgeEnds find_edges(std::span<const std::int64_t> ids) const { return g.find_edges(ids); }
  Frontier sample_neighbors(std::span<const std::int64_t> seeds, std::int64_t fanout,
                            const SampleKey& key, const SamplerSpec& spec) const {
    return g.sample_neighbors(seeds, fanout, key, spec);
  }
};

}  // namespace

TEST_CASE("a typed edge loader batches edges of its type with negatives of the destination type",
          "[dist][hetero]") {
  StandaloneCluster<> cluster(typed_parts().config);
  auto g = cluster.graph();
  const std::int32_t writes = g.edge_type("writes").value;
  const std::int32_t paper = g.node_type("paper").value;
  const auto papers = g.nodes("paper");
  const auto train = edges_of(g, "writes");
  REQUIRE(train.size() > 300);
  const std::size_t k = 3;
  const std::uint64_t seed = 5;
  EdgeDataLoader loader(g, train, {2, 3}, {.batch_size = 32, .seed = seed, .feature = ""},
                        {.num_negatives = static_cast<std::int64_t>(k), .edge_type = "writes"});
  std::vector<std::int64_t> seen;
  std::set<std::int64_t> neg_dsts;
  for (const EdgeBatch& b : loader.epoch(0)) {
    INFO("batch " << b.index);
    seen.insert(seen.end(), b.eids.begin(), b.eids.end());
    const auto n = b.eids.size();
    REQUIRE(b.neg_src.size() == n * k);
    REQUIRE(b.neg_dst.size() == n * k);
    for (const auto t : g.edge_types_of(b.eids)) REQUIRE(t == writes);
    const auto ends = g.find_edges(b.eids);
    for (std::size_t i = 0; i < n; ++i) {
      REQUIRE(b.output_nodes[static_cast<std::size_t>(b.pos_src[i])] == ends.src[i]);
      REQUIRE(b.output_nodes[static_cast<std::size_t>(b.pos_dst[i])] == ends.dst[i]);
      for (std::size_t j = 0; j < k; ++j) REQUIRE(b.neg_src[i * k + j] == b.pos_src[i]);
    }
    const auto negs = negative_nodes(b);
    for (const auto t : g.node_types_of(negs)) REQUIRE(t == paper);
    neg_dsts.insert(negs.begin(), negs.end());
    // The stream is the untyped loader's (key at layer -1, one stream per edge position),
    // drawn type-wise over the papers.
    const SampleKey key{.seed = seed, .epoch = 0, .rank = 0, .batch = b.index};
    std::vector<std::int64_t> wise(n * k);
    for (std::size_t i = 0; i < n; ++i) {
      SampleRng rng(hash_key(key.at_layer(-1)), static_cast<std::int64_t>(i));
      for (std::size_t j = 0; j < k; ++j)
        wise[i * k + j] =
            static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(papers.count())));
    }
    REQUIRE(negs == papers.to_global(wise));
    CHECK(std::set<std::int64_t>(b.output_nodes.begin(), b.output_nodes.end()).size() ==
          b.output_nodes.size());
    REQUIRE(b.blocks.size() == 2);
    CHECK(b.blocks.front().src_nodes == b.input_nodes);
    const auto last = b.blocks.back().dst_nodes();
    CHECK(std::vector<std::int64_t>(last.begin(), last.end()) == b.output_nodes);
    CHECK(b.features.empty());
    CHECK(b.input_types.empty());
  }
  std::sort(seen.begin(), seen.end());
  auto sorted = train;
  std::sort(sorted.begin(), sorted.end());
  CHECK(seen == sorted);
  // train.size() * 3 > 1000 draws over 300 papers miss about 300 * e^-3.4 = 10 of them.
  CHECK(neg_dsts.size() > 250);
}

TEST_CASE("typed negatives spread uniformly over a small destination type", "[dist][hetero]") {
  StandaloneCluster<> cluster(typed_parts().config);
  auto g = cluster.graph();
  const auto venues = g.nodes("venue");
  const auto train = edges_of(g, "paper:published_in:venue");
  const std::int64_t k = 4;
  EdgeDataLoader loader(g, train, {1}, {.batch_size = 50, .seed = 9, .feature = ""},
                        {.num_negatives = k, .edge_type = "published_in"});
  std::vector<std::int64_t> counts(static_cast<std::size_t>(venues.count()), 0);
  std::int64_t draws = 0;
  for (const EdgeBatch& b : loader.epoch(0))
    for (const auto v : venues.to_type_wise(negative_nodes(b))) {
      ++counts[static_cast<std::size_t>(v)];
      ++draws;
    }
  REQUIRE(draws == static_cast<std::int64_t>(train.size()) * k);
  // Pearson's chi-square against uniform, 7 degrees of freedom: a uniform draw exceeds 40
  // with probability 1.3e-6. (A negative of another type would have thrown above.)
  const double expected = static_cast<double>(draws) / static_cast<double>(counts.size());
  double chi2 = 0;
  for (const auto c : counts) chi2 += (c - expected) * (c - expected) / expected;
  INFO("draws " << draws << ", chi-square " << chi2);
  CHECK(std::count(counts.begin(), counts.end(), 0) == 0);
  CHECK(chi2 < 40.0);
}

TEST_CASE("a typed edge loader's batches depend on the edge type, not on its spelling or threads",
          "[dist][hetero]") {
  StandaloneCluster<> cluster(typed_parts().config);
  auto g = cluster.graph();
  const auto train = every_nth(edges_of(g, "writes"), 2);
  const auto run = [&](const std::string& etype, unsigned threads, std::uint64_t seed) {
    EdgeDataLoader l(g, train, {2, 2},
                     {.batch_size = 20, .seed = seed, .num_prefetch_threads = threads},
                     {.num_negatives = 2, .edge_type = etype});
    return whole_epoch(l, 1);
  };
  const auto base = run("author:writes:paper", 0, 3);
  REQUIRE(base.size() > 3);
  for (const auto& [etype, threads] : std::vector<std::pair<std::string, unsigned>>{
           {"writes", 0}, {"writes", 2}, {"author:writes:paper", 3}}) {
    INFO(etype << ", " << threads << " prefetch threads");
    const auto other = run(etype, threads, 3);
    REQUIRE(other.size() == base.size());
    for (std::size_t i = 0; i < base.size(); ++i) REQUIRE(test::same_batch(base[i], other[i]));
  }
  // Another seed draws other negatives.
  const auto reseeded = run("writes", 0, 4);
  REQUIRE(reseeded.size() == base.size());
  bool differs = false;
  for (std::size_t i = 0; i < base.size(); ++i)
    differs = differs || negative_nodes(base[i]) != negative_nodes(reseeded[i]);
  CHECK(differs);
}

TEST_CASE("a typed edge loader excluding self keeps its seed edges out of every block",
          "[dist][hetero]") {
  StandaloneCluster<> cluster(typed_parts().config);
  auto g = cluster.graph();
  const auto train = every_nth(edges_of(g, "writes"), 3);
  // Fanout -1 in the last layer takes every in-edge of each output node, the papers a seed
  // edge points to included: without exclusion every seed edge is sampled.
  const auto seed_hits = [&](ExcludeEdges mode) {
    EdgeDataLoader loader(g, train, {2, -1}, {.batch_size = 25, .seed = 1, .feature = ""},
                          {.num_negatives = 1, .exclude = mode, .edge_type = "writes"});
    std::int64_t hits = 0;
    for (const EdgeBatch& b : loader.epoch(0)) {
      const std::set<std::int64_t> seeds(b.eids.begin(), b.eids.end());
      for (const Block& blk : b.blocks)
        for (const auto e : blk.eid) hits += static_cast<std::int64_t>(seeds.count(e));
    }
    return hits;
  };
  CHECK(seed_hits(ExcludeEdges::none) >= static_cast<std::int64_t>(train.size()));
  CHECK(seed_hits(ExcludeEdges::self) == 0);
}

TEST_CASE("a typed edge loader pulls each input node type's typed features", "[dist][hetero]") {
  StandaloneCluster<> cluster(typed_parts().config);
  auto g = cluster.graph();
  const auto& data = typed_parts().data;
  const auto train = every_nth(edges_of(g, "rev_published_in"), 4);
  EdgeDataLoader loader(g, train, {3, 2}, {.batch_size = 16, .seed = 2},
                        {.num_negatives = 2, .edge_type = "venue:rev_published_in:paper"});
  std::set<std::int32_t> types_seen;
  for (const EdgeBatch& b : loader.epoch(0)) {
    INFO("batch " << b.index);
    CHECK(b.features.empty());
    CHECK(b.feat_dim == 0);
    REQUIRE(b.input_types == g.node_types_of(b.input_nodes));
    std::vector<int> covered(b.input_nodes.size(), 0);
    for (const TypedRows& tr : b.typed_features) {
      types_seen.insert(tr.ntype);
      const std::string& ntype = g.ntypes()[static_cast<std::size_t>(tr.ntype)];
      REQUIRE(tr.cols == data.feat_dim[static_cast<std::size_t>(tr.ntype)]);
      std::vector<std::int64_t> ids;
      for (const auto p : tr.positions) {
        ++covered[static_cast<std::size_t>(p)];
        REQUIRE(b.input_types[static_cast<std::size_t>(p)] == tr.ntype);
        ids.push_back(b.input_nodes[static_cast<std::size_t>(p)]);
      }
      REQUIRE(tr.rows == g.nodes(ntype).data<float>("feat").pull(ids));
    }
    // Featured types (papers, authors) once each; venues have no features.
    for (std::size_t i = 0; i < b.input_nodes.size(); ++i)
      REQUIRE(covered[i] ==
              (data.feat_dim[static_cast<std::size_t>(b.input_types[i])] > 0 ? 1 : 0));
  }
  CHECK(types_seen ==
        std::set<std::int32_t>{g.node_type("paper").value, g.node_type("author").value});
}

TEST_CASE("a typed edge loader refuses seeds of another type and unknown or ambiguous types",
          "[dist][hetero]") {
  StandaloneCluster<> cluster(typed_parts().config);
  auto g = cluster.graph();
  using L = EdgeDataLoader<StandaloneGraph>;
  const LoaderOptions o{.batch_size = 8, .feature = ""};
  auto train = every_nth(edges_of(g, "writes"), 5);
  const std::int64_t cite = edges_of(g, "cites").front();
  train.insert(train.begin() + 3, cite);
  CHECK_THROWS_AS(L(g, train, {2}, o, {.edge_type = "writes"}), InvalidArgument);
  CHECK_THROWS_WITH(
      L(g, train, {2}, o, {.edge_type = "writes"}),
      Catch::Contains("EdgeDataLoader") && Catch::Contains("train edge " + std::to_string(cite)) &&
          Catch::Contains("paper:cites:paper") && Catch::Contains("author:writes:paper"));
  // The same seeds untyped are fine: only the typed loader asks for one type.
  CHECK_NOTHROW(L(g, train, {2}, o));
  CHECK_THROWS_AS(L(g, train, {2}, o, {.edge_type = "nope"}), InvalidArgument);
  CHECK_THROWS_WITH(L(g, train, {2}, o, {.edge_type = "nope"}),
                    Catch::Contains("EdgeDataLoader") && Catch::Contains("nope"));
  CHECK_THROWS_AS(L(g, train, {2}, o, {.edge_type = "paper:writes:author"}), InvalidArgument);
  // A seed outside the graph is still IdOutOfRange.
  const std::vector<std::int64_t> outside{g.num_edges()};
  CHECK_THROWS_AS(L(g, outside, {2}, o, {.edge_type = "writes"}), IdOutOfRange);

  SECTION("a relation name two edge types share is ambiguous; canonical names are not") {
    TempDir tmp;
    partition_hetero_dataset(two_way_dataset(), "w", 2, tmp.path(),
                             {.method = PartMethod::random, .seed = 1});
    StandaloneCluster<> wc(tmp / "w.json");
    auto w = wc.graph();
    const auto ab = edges_of(w, "a:r:b");
    CHECK_THROWS_AS(L(w, ab, {1}, o, {.edge_type = "r"}), InvalidArgument);
    CHECK_THROWS_WITH(L(w, ab, {1}, o, {.edge_type = "r"}),
                      Catch::Contains("EdgeDataLoader") && Catch::Contains("ambiguous"));
    L typed(w, ab, {1}, o, {.num_negatives = 2, .edge_type = "a:r:b"});
    const std::int32_t b_type = w.node_type("b").value;
    for (const EdgeBatch& batch : typed.epoch(0))
      for (const auto t : w.node_types_of(negative_nodes(batch))) REQUIRE(t == b_type);
  }

  SECTION("a graph without types cannot take an edge type") {
    const UntypedView view{g};
    CHECK_THROWS_AS(EdgeDataLoader<UntypedView>(view, train, {2}, o, {.edge_type = "writes"}),
                    InvalidArgument);
    CHECK_NOTHROW(EdgeDataLoader<UntypedView>(view, train, {2}, o));
  }
}

}  // namespace test_loaders_hetero_edge_loader

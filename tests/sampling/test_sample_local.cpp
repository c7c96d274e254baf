#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "distgraph/sampling/full_neighbor_sampler.hpp"
#include "distgraph/sampling/labor_sampler.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/uniform_replace_sampler.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "distgraph/sampling/weighted_sampler.hpp"
#include "support/sampling_graphs.hpp"

namespace test_sampling_sample_local {

using namespace distgraph;
using namespace distgraph::test;

namespace {

bool same(const Frontier& a, const Frontier& b) {
  return a.src == b.src && a.dst == b.dst && a.eid == b.eid;
}

/// Edge IDs picked per seed (global ID).
std::map<std::int64_t, std::vector<std::int64_t>> by_seed(const Frontier& f) {
  std::map<std::int64_t, std::vector<std::int64_t>> m;
  for (std::size_t i = 0; i < f.dst.size(); ++i) m[f.dst[i]].push_back(f.eid[i]);
  return m;
}

std::vector<float> varied_probs(std::int64_t m) {
  std::vector<float> p(static_cast<std::size_t>(m));
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(i % 5) * 0.25f;
  return p;
}

/// The graph's in-edges re-keyed as one partition would hold them: local node l is global
/// node nid[l] (a fixed shuffle), rows keep the whole graph's edge order.
struct Relabeled {
  std::vector<std::int64_t> nid, indptr{0}, indices, eid;
  LocalGraphView view() const { return {indptr, indices, eid, nid, EdgeDir::in}; }
};

Relabeled relabel(const Graph& g, std::uint64_t seed) {
  Relabeled r;
  r.nid.resize(static_cast<std::size_t>(g.num_nodes()));
  std::iota(r.nid.begin(), r.nid.end(), 0);
  std::shuffle(r.nid.begin(), r.nid.end(), std::mt19937_64(seed));
  std::vector<std::int64_t> local(r.nid.size());
  for (std::size_t l = 0; l < r.nid.size(); ++l)
    local[static_cast<std::size_t>(r.nid[l])] = static_cast<std::int64_t>(l);
  for (const std::int64_t v : r.nid) {
    for (const std::int64_t u : g.in_neighbors(v))
      r.indices.push_back(local[static_cast<std::size_t>(u)]);
    for (const std::int64_t e : g.in.edges(v)) r.eid.push_back(e);
    r.indptr.push_back(static_cast<std::int64_t>(r.indices.size()));
  }
  return r;
}

}  // namespace

TEMPLATE_TEST_CASE("sample_neighbors_local gives the same frontier for any thread count",
                   "[sampling]", UniformSampler, UniformReplaceSampler, FullNeighborSampler,
                   LaborSampler) {
  const Graph g = small_rmat(12, 8, 5);
  const auto seeds = random_nodes(g.num_nodes(), 20000, 9);
  const SampleKey key{.seed = 3, .epoch = 1, .batch = 2};
  const Frontier one =
      sample_neighbors_local(in_edges_view(g), seeds, 5, key, TestType{}, {.num_threads = 1});
  const Frontier four = sample_neighbors_local(in_edges_view(g), seeds, 5, key, TestType{},
                                               {.num_threads = 4, .min_seeds_per_thread = 64});
  const Frontier again = sample_neighbors_local(in_edges_view(g), seeds, 5, key, TestType{},
                                                {.num_threads = 4, .min_seeds_per_thread = 64});
  CHECK(one.num_edges() > 20000);
  CHECK(same(one, four));
  CHECK(same(four, again));
}

TEMPLATE_TEST_CASE("without edge IDs, sampling picks the same edges, as a frontier or per seed",
                   "[sampling]", UniformSampler, FullNeighborSampler, LaborSampler) {
  const Graph g = small_rmat(12, 8, 5);
  const Relabeled r = relabel(g, 23);  // a partition's view: local rows, global IDs
  const auto seeds = random_nodes(g.num_nodes(), 6000, 4);
  const SampleKey key{.seed = 5, .epoch = 2, .batch = 7};
  for (const unsigned threads : {1u, 4u}) {
    const SampleOptions with{.num_threads = threads, .min_seeds_per_thread = 64};
    SampleOptions without = with;
    without.edge_ids = EdgeIds::omitted;
    const Frontier all = sample_neighbors_local(r.view(), seeds, 5, key, TestType{}, with);
    const Frontier bare = sample_neighbors_local(r.view(), seeds, 5, key, TestType{}, without);
    REQUIRE(all.num_edges() > 6000);
    CHECK(bare.src == all.src);
    CHECK(bare.dst == all.dst);
    CHECK(bare.eid.empty());
    CHECK(all.eid.size() == all.src.size());

    const SeedSources per_seed = sample_sources_local(r.view(), seeds, 5, key, TestType{}, with);
    CHECK(per_seed.src == all.src);
    REQUIRE(per_seed.counts.size() == seeds.size());
    // Seed i's count covers exactly its run of destinations in the frontier.
    std::size_t at = 0;
    bool runs_match = true;
    for (std::size_t i = 0; i < seeds.size(); ++i)
      for (std::int64_t j = 0; j < per_seed.counts[i]; ++j, ++at)
        runs_match = runs_match && at < all.dst.size() &&
                     all.dst[at] == r.nid[static_cast<std::size_t>(seeds[i])];
    CHECK(runs_match);
    CHECK(at == all.dst.size());
  }
  const std::vector<std::int64_t> bad{0, g.num_nodes()};
  CHECK_THROWS_AS(sample_sources_local(r.view(), bad, 5, key, TestType{}), IdOutOfRange);
  CHECK_THROWS_AS(sample_sources_local(r.view(), seeds, -3, key, TestType{}), InvalidArgument);
}

TEST_CASE("weighted sampling gives the same frontier for any thread count", "[sampling]") {
  const Graph g = small_rmat(12, 8, 5);
  const auto seeds = random_nodes(g.num_nodes(), 20000, 9);
  for (const bool replace : {false, true}) {
    const WeightedSampler s(varied_probs(g.num_edges()), {.replace = replace});
    const Frontier one =
        sample_neighbors_local(in_edges_view(g), seeds, 5, {}, s, {.num_threads = 1});
    const Frontier four = sample_neighbors_local(in_edges_view(g), seeds, 5, {}, s,
                                                 {.num_threads = 4, .min_seeds_per_thread = 64});
    CHECK(same(one, four));
  }
}

TEST_CASE("sample_neighbors_local groups edges by seed in seed order", "[sampling]") {
  const Graph g = small_rmat(10, 8, 2);
  std::vector<std::int64_t> seeds;
  for (std::int64_t v = g.num_nodes() - 1; v >= 0; v -= 7) seeds.push_back(v);  // descending
  const Frontier f = sample_neighbors_local(in_edges_view(g), seeds, 4, {}, UniformSampler{});
  std::size_t at = 0;
  for (const std::int64_t v : seeds) {
    const auto want = static_cast<std::size_t>(std::min<std::int64_t>(4, g.in_degree(v)));
    for (std::size_t i = 0; i < want; ++i, ++at) {
      REQUIRE(at < f.dst.size());
      CHECK(f.dst[at] == v);
    }
  }
  CHECK(at == f.dst.size());
  // Each sampled edge really is an in-edge (src -> dst) with that edge ID.
  const Coo coo = g.to_coo(1);
  for (std::size_t i = 0; i < f.eid.size(); ++i) {
    CHECK(coo.src[static_cast<std::size_t>(f.eid[i])] == f.src[i]);
    CHECK(coo.dst[static_cast<std::size_t>(f.eid[i])] == f.dst[i]);
  }
}

TEST_CASE("a seed's picks do not depend on the other seeds or their order", "[sampling]") {
  const Graph g = small_rmat(10, 8, 4);
  std::vector<std::int64_t> seeds(static_cast<std::size_t>(g.num_nodes()));
  std::iota(seeds.begin(), seeds.end(), 0);
  std::vector<std::int64_t> reversed(seeds.rbegin(), seeds.rend());
  const std::vector<std::int64_t> half(seeds.begin(), seeds.begin() + g.num_nodes() / 2);
  const SampleKey key{.seed = 11};
  const auto all =
      by_seed(sample_neighbors_local(in_edges_view(g), seeds, 3, key, UniformSampler{}));
  const auto rev =
      by_seed(sample_neighbors_local(in_edges_view(g), reversed, 3, key, UniformSampler{}));
  const auto part =
      by_seed(sample_neighbors_local(in_edges_view(g), half, 3, key, UniformSampler{}));
  CHECK(all == rev);
  for (const auto& [v, eids] : part) CHECK(all.at(v) == eids);
}

TEST_CASE("a relabeled copy of the rows (another process's partition) picks the same edges",
          "[sampling]") {
  const Graph g = small_rmat(10, 8, 6);
  const Relabeled r = relabel(g, 17);
  std::vector<std::int64_t> local_seeds, global_seeds;
  for (std::int64_t l = 0; l < g.num_nodes(); l += 3) {
    local_seeds.push_back(l);
    global_seeds.push_back(r.nid[static_cast<std::size_t>(l)]);
  }
  const SampleKey key{.seed = 2, .epoch = 4, .rank = 1, .batch = 9};
  const Frontier whole =
      sample_neighbors_local(in_edges_view(g), global_seeds, 4, key, UniformSampler{});
  const Frontier part = sample_neighbors_local(r.view(), local_seeds, 4, key, UniformSampler{});
  CHECK(same(whole, part));
  CHECK(whole.num_edges() > 0);
}

TEST_CASE("an out-edge view samples out-neighbours with the seed as source", "[sampling]") {
  const Graph g = in_star(6);  // leaves point at the hub: each leaf has one out-edge
  const std::vector<std::int64_t> seeds{3, 0, 5};
  const Frontier f = sample_neighbors_local(out_edges_view(g), seeds, 2, {}, UniformSampler{});
  CHECK(f.src == std::vector<std::int64_t>{3, 5});
  CHECK(f.dst == std::vector<std::int64_t>{0, 0});
  CHECK(f.eid == std::vector<std::int64_t>{2, 4});
}

TEST_CASE("sample_neighbors_local rejects bad seeds, fanouts and views", "[sampling][bad_input]") {
  const Graph g = in_star(4);  // 6 nodes
  const auto view = in_edges_view(g);
  const std::vector<std::int64_t> ok{0}, too_big{0, 6}, negative{-1};
  CHECK_THROWS_AS(sample_neighbors_local(view, too_big, 2, {}, UniformSampler{}), IdOutOfRange);
  CHECK_THROWS_WITH(sample_neighbors_local(view, too_big, 2, {}, UniformSampler{}),
                    Catch::Contains("local seed") && Catch::Contains("id 6"));
  CHECK_THROWS_AS(sample_neighbors_local(view, negative, 2, {}, UniformSampler{}), IdOutOfRange);
  CHECK_THROWS_AS(sample_neighbors_local(view, ok, -2, {}, UniformSampler{}), InvalidArgument);
  CHECK_THROWS_WITH(sample_neighbors_local(view, ok, -5, {}, UniformSampler{}),
                    Catch::Contains("fanout -5"));
  LocalGraphView short_eids = view;
  short_eids.edge_ids = short_eids.edge_ids.first(2);
  CHECK_THROWS_AS(sample_neighbors_local(short_eids, ok, 2, {}, UniformSampler{}), ShapeError);
  LocalGraphView short_nids = view;
  const std::vector<std::int64_t> nids{0, 1};
  short_nids.node_ids = nids;
  CHECK_THROWS_AS(sample_neighbors_local(short_nids, ok, 2, {}, UniformSampler{}), ShapeError);
  CHECK_THROWS_AS(make_view(g.in, nids), ShapeError);
  // An empty batch is fine.
  CHECK(sample_neighbors_local(view, std::span<const std::int64_t>{}, 2, {}, UniformSampler{})
            .num_edges() == 0);
}

}  // namespace test_sampling_sample_local

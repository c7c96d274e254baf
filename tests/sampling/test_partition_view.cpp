#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <vector>

#include "distgraph/partition/partition_graph.hpp"
#include "distgraph/sampling/full_neighbor_sampler.hpp"
#include "distgraph/sampling/partition_view.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "support/sampling_graphs.hpp"
#include "support/temp_dir.hpp"

namespace test_sampling_partition_view {

using namespace distgraph;
using namespace distgraph::test;

namespace {

/// A small R-MAT graph written as 2 random partitions into `dir` ("g.json").
Graph partitioned_in_two(const TempDir& dir) {
  Graph g = small_rmat(9, 8, 3);
  partition_graph(g, "g", 2, dir.path(),
                  {.method = PartMethod::random, .seed = 1, .num_threads = 1});
  return g;
}

}  // namespace

TEST_CASE("sampling a loaded partition returns its owned nodes' in-edges in global IDs",
          "[sampling]") {
  TempDir dir;
  const Graph g = partitioned_in_two(dir);
  const Partition parts[] = {load_partition(dir / "g.json", 0), load_partition(dir / "g.json", 1)};
  // Relabeled global node ID -> input ID, from every partition's maps.
  std::map<std::int64_t, std::int64_t> orig;
  for (const Partition& p : parts)
    for (std::size_t l = 0; l < p.nid.size(); ++l) orig[p.nid[l]] = p.orig_nid[l];
  const Coo coo = g.to_coo(1);

  for (const Partition& p : parts) {
    std::vector<std::int64_t> owned(static_cast<std::size_t>(p.num_inner_nodes));
    for (std::size_t l = 0; l < owned.size(); ++l) owned[l] = static_cast<std::int64_t>(l);
    const LocalGraphView view = partition_view(p);
    const Frontier full = sample_neighbors_local(view, owned, -1, {}, FullNeighborSampler{});
    // Every in-edge of every owned node, each a real edge of the input graph.
    std::int64_t want = 0;
    for (const std::int64_t l : owned) want += g.in_degree(p.orig_nid[static_cast<std::size_t>(l)]);
    CHECK(full.num_edges() == want);
    std::map<std::int64_t, std::int64_t> orig_eid_of;  // global edge ID -> input edge ID
    for (std::size_t i = 0; i < p.eid.size(); ++i) orig_eid_of[p.eid[i]] = p.orig_eid[i];
    for (std::size_t i = 0; i < full.eid.size(); ++i) {
      const auto e = static_cast<std::size_t>(orig_eid_of.at(full.eid[i]));
      CHECK(coo.src[e] == orig.at(full.src[i]));
      CHECK(coo.dst[e] == orig.at(full.dst[i]));
    }
    // Uniform picks are a subset of those edges, at most 3 per seed, the same on reload.
    const SampleKey key{.seed = 9, .rank = 1};
    const Frontier some = sample_neighbors_local(view, owned, 3, key, UniformSampler{});
    const Partition again = load_partition(dir / "g.json", p.part_id);
    const Frontier reload =
        sample_neighbors_local(partition_view(again), owned, 3, key, UniformSampler{});
    CHECK(some.eid == reload.eid);
    std::vector<std::int64_t> all_eids = full.eid;
    std::sort(all_eids.begin(), all_eids.end());
    for (const std::int64_t e : some.eid)
      CHECK(std::binary_search(all_eids.begin(), all_eids.end(), e));
  }
}

TEST_CASE("a partition's view maps its owned nodes by offset and the rest through nid, alike",
          "[sampling]") {
  TempDir dir;
  partitioned_in_two(dir);
  for (std::int32_t id : {0, 1}) {
    const Partition p = load_partition(dir / "g.json", id);
    const LocalGraphView view = partition_view(p);
    // Relabeled: the owned nodes come first, one run of global IDs (which halo nodes of
    // the next range may continue); halo nodes after.
    CHECK(view.run_rows >= p.num_inner_nodes);
    REQUIRE(view.num_rows() > p.num_inner_nodes);  // some halo, read through nid
    view.check_shape();
    LocalGraphView looked = view;  // the same view without the run: every ID read
    looked.run_rows = 0;
    for (std::int64_t l = 0; l < view.num_rows(); ++l) {
      REQUIRE(view.global_node(l) == p.nid[static_cast<std::size_t>(l)]);
      REQUIRE(looked.global_node(l) == view.global_node(l));
    }
    std::vector<std::int64_t> owned(static_cast<std::size_t>(p.num_inner_nodes));
    for (std::size_t l = 0; l < owned.size(); ++l) owned[l] = static_cast<std::int64_t>(l);
    const SampleKey key{.seed = 4, .rank = 0};
    const Frontier a = sample_neighbors_local(view, owned, 5, key, UniformSampler{});
    const Frontier b = sample_neighbors_local(looked, owned, 5, key, UniformSampler{});
    CHECK(a.src == b.src);
    CHECK(a.dst == b.dst);
    CHECK(a.eid == b.eid);
    LocalGraphView bad = view;
    bad.run_rows = static_cast<std::int64_t>(p.nid.size()) + 1;
    CHECK_THROWS_AS(bad.check_shape(), ShapeError);
  }
  CHECK(identity_run(std::vector<std::int64_t>{}) == 0);
  CHECK(identity_run(std::vector<std::int64_t>{7, 8, 9, 3, 10}) == 3);
  CHECK(identity_run(std::vector<std::int64_t>{5, 5}) == 1);
}

}  // namespace test_sampling_partition_view

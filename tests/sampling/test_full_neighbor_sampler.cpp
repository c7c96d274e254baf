#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "distgraph/sampling/full_neighbor_sampler.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "support/sampling_graphs.hpp"

namespace test_sampling_full_neighbor_sampler {

using namespace distgraph;
using namespace distgraph::test;

TEST_CASE("full neighbour sampler returns every in-edge of every seed in row order", "[sampling]") {
  const Graph g = small_rmat(8, 8, 3);
  std::vector<std::int64_t> seeds;
  for (std::int64_t v = 0; v < g.num_nodes(); v += 3) seeds.push_back(v);
  for (const std::int64_t fanout : {-1, 0, 2}) {
    const Frontier f =
        sample_neighbors_local(in_edges_view(g), seeds, fanout, {}, FullNeighborSampler{});
    std::size_t k = 0;
    for (const std::int64_t v : seeds) {
      const auto nbrs = g.in_neighbors(v);
      const auto eids = g.in.edges(v);
      for (std::size_t i = 0; i < nbrs.size(); ++i, ++k) {
        REQUIRE(k < f.src.size());
        CHECK(f.dst[k] == v);
        CHECK(f.src[k] == nbrs[i]);
        CHECK(f.eid[k] == eids[i]);
      }
    }
    CHECK(k == f.src.size());
  }
}

}  // namespace test_sampling_full_neighbor_sampler

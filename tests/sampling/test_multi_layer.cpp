#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include "distgraph/sampling/multi_layer.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "support/sampling_graphs.hpp"

namespace test_sampling_multi_layer {

using namespace distgraph;
using namespace distgraph::test;

namespace {

std::vector<std::int64_t> first_nodes(std::int64_t n, std::int64_t step) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < n; i += step) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("multi-layer blocks chain from the input layer to the seeds", "[sampling]") {
  const Graph g = small_rmat(11, 8, 8);
  const auto seeds = first_nodes(g.num_nodes(), 37);
  const MultiLayerNeighborSampler<> sampler({4, 6, 3});
  const MiniBatch mb = sampler.sample_blocks(in_edges_view(g), seeds, {.seed = 1, .batch = 5});
  REQUIRE(mb.blocks.size() == 3);
  CHECK(mb.output_nodes == seeds);
  CHECK(mb.input_nodes == mb.blocks[0].src_nodes);
  const auto last = mb.blocks.back().dst_nodes();
  CHECK(std::equal(last.begin(), last.end(), seeds.begin(), seeds.end()));
  const Coo coo = g.to_coo(1);
  const std::vector<std::int64_t> fanouts{4, 6, 3};
  for (std::size_t l = 0; l < mb.blocks.size(); ++l) {
    const Block& b = mb.blocks[l];
    if (l + 1 < mb.blocks.size()) {
      const auto dst = b.dst_nodes();
      CHECK(std::equal(dst.begin(), dst.end(), mb.blocks[l + 1].src_nodes.begin(),
                       mb.blocks[l + 1].src_nodes.end()));
    }
    CHECK(std::set<std::int64_t>(b.src_nodes.begin(), b.src_nodes.end()).size() ==
          b.src_nodes.size());
    REQUIRE(b.indptr.size() == static_cast<std::size_t>(b.num_dst) + 1);
    for (std::int64_t i = 0; i < b.num_dst; ++i) {
      const std::int64_t v = b.src_nodes[static_cast<std::size_t>(i)];
      const std::int64_t deg =
          b.indptr[static_cast<std::size_t>(i) + 1] - b.indptr[static_cast<std::size_t>(i)];
      // Layer l samples fanouts[l] in-edges per destination.
      CHECK(deg == std::min(fanouts[l], g.in_degree(v)));
      for (std::int64_t k = b.indptr[static_cast<std::size_t>(i)];
           k < b.indptr[static_cast<std::size_t>(i) + 1]; ++k) {
        const auto e = static_cast<std::size_t>(b.eid[static_cast<std::size_t>(k)]);
        CHECK(coo.dst[e] == v);
        CHECK(coo.src[e] ==
              b.src_nodes[static_cast<std::size_t>(b.indices[static_cast<std::size_t>(k)])]);
      }
    }
  }
}

TEST_CASE("sample_blocks passes layers input-first and its fanouts to the callable", "[sampling]") {
  const Graph g = small_rmat(9, 8, 1);
  const auto seeds = first_nodes(g.num_nodes(), 50);
  const std::vector<std::int64_t> fanouts{10, 25};
  std::vector<std::pair<std::int64_t, std::int32_t>> calls;
  const MiniBatch mb =
      sample_blocks(seeds, fanouts,
                    [&](std::span<const std::int64_t> s, std::int64_t fanout, std::int32_t layer) {
                      calls.emplace_back(fanout, layer);
                      return sample_neighbors_local(in_edges_view(g), s, fanout,
                                                    SampleKey{}.at_layer(layer), UniformSampler{});
                    });
  CHECK(calls == std::vector<std::pair<std::int64_t, std::int32_t>>{{25, 1}, {10, 0}});
  // The same key through the class gives the same blocks.
  const MiniBatch same =
      MultiLayerNeighborSampler<>(fanouts).sample_blocks(in_edges_view(g), seeds, {});
  CHECK(mb.input_nodes == same.input_nodes);
  for (std::size_t l = 0; l < 2; ++l) CHECK(mb.blocks[l].eid == same.blocks[l].eid);
}

TEST_CASE("multi-layer sampling rejects bad fanouts, seeds and views", "[sampling][bad_input]") {
  const Graph g = in_star(5);
  const std::vector<std::int64_t> seeds{0, 1}, repeated{0, 0}, outside{0, 99};
  CHECK_THROWS_AS(MultiLayerNeighborSampler<>({}), InvalidArgument);
  CHECK_THROWS_WITH(MultiLayerNeighborSampler<>({5, -3}), Catch::Contains("fanouts[1] -3"));
  const MultiLayerNeighborSampler<> s({2, 2});
  CHECK_THROWS_AS(s.sample_blocks(in_edges_view(g), repeated, {}), InvalidArgument);
  CHECK_THROWS_AS(s.sample_blocks(in_edges_view(g), outside, {}), IdOutOfRange);
  CHECK_THROWS_AS(s.sample_blocks(out_edges_view(g), seeds, {}), InvalidArgument);
  LocalGraphView mapped = in_edges_view(g);
  const std::vector<std::int64_t> nid{0, 1, 2, 3, 4, 5, 6};
  mapped.node_ids = nid;
  CHECK_THROWS_AS(s.sample_blocks(mapped, seeds, {}), InvalidArgument);
}

}  // namespace test_sampling_multi_layer

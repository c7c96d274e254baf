#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "distgraph/sampling/concepts.hpp"
#include "distgraph/sampling/full_neighbor_sampler.hpp"
#include "distgraph/sampling/labor_sampler.hpp"
#include "distgraph/sampling/uniform_replace_sampler.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "distgraph/sampling/weighted_sampler.hpp"
#include "support/sampling_graphs.hpp"

namespace test_conformance_sampler_conformance {

using namespace distgraph;

namespace {

template <class S>
S make_sampler(const Graph&) {
  return S{};
}

// Every probability positive, so "fanout -1 takes the whole row" holds for every model.
template <>
WeightedSampler make_sampler<WeightedSampler>(const Graph& g) {
  std::vector<float> p(static_cast<std::size_t>(g.num_edges()));
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = 1.0f + static_cast<float>(i % 3);
  return WeightedSampler(std::move(p));
}

Picks sample(const auto& s, const LocalGraphView& g, std::span<const std::int64_t> seeds,
             std::int64_t fanout, const SampleKey& key) {
  Picks p;
  s.validate(g);
  s.sample(g, seeds, fanout, key, p);
  return p;
}

}  // namespace

TEMPLATE_TEST_CASE("samplers satisfy the shared contract on one graph", "[conformance][sampling]",
                   UniformSampler, UniformReplaceSampler, WeightedSampler, FullNeighborSampler,
                   LaborSampler) {
  static_assert(Sampler<TestType>);
  const Graph graph = test::small_rmat(9, 8, 12);
  const LocalGraphView g = in_edges_view(graph);
  const TestType s = make_sampler<TestType>(graph);
  const TestType copy = s;
  std::vector<std::int64_t> seeds;
  for (std::int64_t v = 0; v < g.num_rows(); ++v) seeds.push_back(v);
  const SampleKey key{.seed = 4, .epoch = 2, .rank = 1, .batch = 3, .layer = 1};

  SECTION("one count per seed; every pick lies in its seed's row") {
    for (const std::int64_t fanout : {0, 1, 5, 40}) {
      const Picks p = sample(s, g, seeds, fanout, key);
      REQUIRE(p.counts.size() == seeds.size());
      std::size_t k = 0;
      for (std::size_t i = 0; i < seeds.size(); ++i) {
        if (g.degree(seeds[i]) == 0) CHECK(p.counts[i] == 0);
        for (std::int64_t j = 0; j < p.counts[i]; ++j, ++k) {
          REQUIRE(k < p.positions.size());
          CHECK(p.positions[k] >= g.row_begin(seeds[i]));
          CHECK(p.positions[k] < g.row_begin(seeds[i]) + g.degree(seeds[i]));
        }
      }
      CHECK(k == p.positions.size());
    }
  }
  SECTION("fanout -1 takes each seed's whole row in order") {
    const Picks p = sample(s, g, seeds, -1, key);
    std::size_t k = 0;
    for (const std::int64_t v : seeds)
      for (std::int64_t i = 0; i < g.degree(v); ++i, ++k) {
        REQUIRE(k < p.positions.size());
        CHECK(p.positions[k] == g.row_begin(v) + i);
      }
    CHECK(k == p.positions.size());
  }
  SECTION("the same key gives the same picks, from a copy and from any split of the batch") {
    const Picks whole = sample(s, g, seeds, 3, key);
    const Picks again = sample(copy, g, seeds, 3, key);
    CHECK(whole.counts == again.counts);
    CHECK(whole.positions == again.positions);
    const std::span<const std::int64_t> all(seeds);
    Picks split;
    s.sample(g, all.first(100), 3, key, split);
    s.sample(g, all.subspan(100), 3, key, split);
    CHECK(whole.counts == split.counts);
    CHECK(whole.positions == split.positions);
  }
}

}  // namespace test_conformance_sampler_conformance

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "support/sampling_graphs.hpp"

namespace test_sampling_uniform_sampler {

using namespace distgraph;
using namespace distgraph::test;

namespace {

/// Samples `fanout` of the hub's `leaves` in-neighbours `trials` times, checks each trial
/// has exactly fanout distinct leaves, and returns the chi-square statistic of the leaf
/// counts scaled to be chi-square with leaves - 1 degrees of freedom. Drawing k of D
/// without replacement makes the counts less spread than a multinomial's, by the factor
/// (1 - k/D) D/(D - 1) (the finite-population correction), which the scale undoes.
double uniformity_statistic(std::int64_t leaves, std::int64_t fanout, int trials) {
  const Graph g = in_star(leaves);
  const auto counts = pick_counts(g, 0, UniformSampler{}, fanout, trials, [&](const Frontier& f) {
    REQUIRE(f.num_edges() == fanout);
    const std::set<std::int64_t> distinct(f.src.begin(), f.src.end());
    REQUIRE(static_cast<std::int64_t>(distinct.size()) == fanout);
    for (const std::int64_t d : f.dst) REQUIRE(d == 0);
  });
  const double p = static_cast<double>(fanout) / static_cast<double>(leaves);
  std::map<std::int64_t, double> expected;
  for (std::int64_t v = 1; v <= leaves; ++v) expected[v] = trials * p;
  const double correction = (1 - p) * static_cast<double>(leaves) / static_cast<double>(leaves - 1);
  return chi_square(counts, expected) / correction;
}

}  // namespace

TEST_CASE("uniform sampler picks each neighbour of a hub equally often", "[sampling]") {
  SECTION("small fanout (linear membership test)") {
    const double stat = uniformity_statistic(100, 10, 20000);
    CHECK(stat < chi_square_critical(99));
    // A sampler that ignores some leaves entirely would push the statistic far higher;
    // one that returns the same subset every time even more so. Sanity: not degenerate.
    CHECK(stat > 0);
  }
  SECTION("fanout close to the degree") {
    CHECK(uniformity_statistic(12, 10, 20000) < chi_square_critical(11));
  }
  SECTION("large fanout (hash-set membership test)") {
    CHECK(uniformity_statistic(300, 80, 5000) < chi_square_critical(299));
  }
}

TEST_CASE("uniform sampler takes every neighbour when fanout reaches the degree", "[sampling]") {
  const Graph g = in_star(7);
  const std::vector<std::int64_t> seeds{0};
  for (const std::int64_t fanout : {7, 8, 100, -1}) {
    const Frontier f =
        sample_neighbors_local(in_edges_view(g), seeds, fanout, {}, UniformSampler{});
    CHECK(f.src == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7});
    CHECK(f.eid == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6});
  }
}

TEST_CASE("uniform sampler gives nothing for fanout 0 or a seed without in-edges", "[sampling]") {
  const Graph g = in_star(5);
  const std::vector<std::int64_t> hub{0}, leaf_and_isolated{3, 6};
  CHECK(sample_neighbors_local(in_edges_view(g), hub, 0, {}, UniformSampler{}).num_edges() == 0);
  CHECK(sample_neighbors_local(in_edges_view(g), leaf_and_isolated, 3, {}, UniformSampler{})
            .num_edges() == 0);
}

TEST_CASE("uniform sampler picks the same edges for the same key and others for another epoch",
          "[sampling]") {
  const Graph g = in_star(1000);
  const std::vector<std::int64_t> seeds{0};
  const auto view = in_edges_view(g);
  const SampleKey key{.seed = 5, .epoch = 1};
  const Frontier a = sample_neighbors_local(view, seeds, 10, key, UniformSampler{});
  const Frontier b = sample_neighbors_local(view, seeds, 10, key, UniformSampler{});
  const Frontier c =
      sample_neighbors_local(view, seeds, 10, {.seed = 5, .epoch = 2}, UniformSampler{});
  CHECK(a.src == b.src);
  CHECK(a.eid == b.eid);
  CHECK(a.src != c.src);
}

}  // namespace test_sampling_uniform_sampler

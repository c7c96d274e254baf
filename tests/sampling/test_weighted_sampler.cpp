#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/weighted_sampler.hpp"
#include "support/sampling_graphs.hpp"

namespace test_sampling_weighted_sampler {

using namespace distgraph;
using namespace distgraph::test;

namespace {

// The hub of in_star(leaves) owns edge positions 0 .. leaves-1, position i from leaf i+1.
// Leaf v gets probability (v - 1) % 4: every fourth leaf has probability 0.
std::vector<float> star_probs(std::int64_t leaves) {
  std::vector<float> p;
  for (std::int64_t v = 1; v <= leaves; ++v) p.push_back(static_cast<float>((v - 1) % 4));
  return p;
}

std::map<std::int64_t, double> proportional(const std::vector<float>& p, double total_picks) {
  double sum = 0;
  for (float x : p) sum += x;
  std::map<std::int64_t, double> expected;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0) expected[static_cast<std::int64_t>(i) + 1] = total_picks * p[i] / sum;
  return expected;
}

}  // namespace

TEST_CASE("weighted sampler picks neighbours in proportion to their probability", "[sampling]") {
  const std::int64_t leaves = 20;
  const Graph g = in_star(leaves);
  const auto probs = star_probs(leaves);
  const int trials = 20000;
  const auto never_zero = [&](const Frontier& f) {
    for (const std::int64_t u : f.src) REQUIRE(probs[static_cast<std::size_t>(u - 1)] > 0);
  };
  SECTION("one pick without replacement is one weighted draw") {
    const auto counts = pick_counts(g, 0, WeightedSampler(probs), 1, trials, never_zero);
    const auto expected = proportional(probs, trials);
    CHECK(chi_square(counts, expected) <
          chi_square_critical(static_cast<double>(expected.size() - 1)));
  }
  SECTION("with replacement every draw is weighted and independent") {
    const WeightedSampler s(probs, {.replace = true});
    const auto counts = pick_counts(g, 0, s, 10, trials, [&](const Frontier& f) {
      REQUIRE(f.num_edges() == 10);
      never_zero(f);
    });
    const auto expected = proportional(probs, 10.0 * trials);
    CHECK(chi_square(counts, expected) <
          chi_square_critical(static_cast<double>(expected.size() - 1)));
  }
  SECTION("several picks without replacement are distinct and never zero-probability") {
    pick_counts(g, 0, WeightedSampler(probs), 6, 2000, [&](const Frontier& f) {
      REQUIRE(f.num_edges() == 6);
      REQUIRE(std::set<std::int64_t>(f.src.begin(), f.src.end()).size() == 6);
      never_zero(f);
    });
  }
}

TEST_CASE("weighted sampling without replacement follows successive weighted draws", "[sampling]") {
  // Weights 1, 1, 2, pick 2: the pair {1, 2} needs both light edges first: 2 * 1/4 * 1/3
  // = 1/6; {1, 3} and {2, 3} share the rest, 5/12 each.
  const Graph g = in_star(3);
  const WeightedSampler s(std::vector<float>{1, 1, 2});
  std::map<std::int64_t, std::int64_t> pairs;  // keyed by the leaf left out
  const int trials = 30000;
  pick_counts(g, 0, s, 2, trials, [&](const Frontier& f) {
    REQUIRE(f.num_edges() == 2);
    ++pairs[6 - f.src[0] - f.src[1]];
  });
  const std::map<std::int64_t, double> expected{
      {3, trials / 6.0}, {1, trials * 5.0 / 12}, {2, trials * 5.0 / 12}};
  CHECK(chi_square(pairs, expected) < chi_square_critical(2));
}

TEST_CASE("weighted sampler takes every positive edge when fanout reaches their number",
          "[sampling]") {
  const Graph g = in_star(8);
  const auto probs = star_probs(8);  // leaves 1 and 5 have probability 0
  const std::vector<std::int64_t> seeds{0};
  for (const std::int64_t fanout : {6, 7, -1}) {
    const Frontier f =
        sample_neighbors_local(in_edges_view(g), seeds, fanout, {}, WeightedSampler(probs));
    CHECK(f.src == std::vector<std::int64_t>{2, 3, 4, 6, 7, 8});
  }
  const std::vector<float> zeros(8, 0.0f);
  for (const bool replace : {false, true})
    CHECK(sample_neighbors_local(in_edges_view(g), seeds, 3, {},
                                 WeightedSampler(zeros, {.replace = replace}))
              .num_edges() == 0);
}

TEST_CASE("weighted sampler rejects bad probabilities", "[sampling][bad_input]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(WeightedSampler(std::vector<float>{1, -0.5f}), InvalidArgument);
  CHECK_THROWS_AS(WeightedSampler(std::vector<float>{nan}), InvalidArgument);
  CHECK_THROWS_AS(WeightedSampler(std::vector<float>{1, inf}), InvalidArgument);
  CHECK_THROWS_WITH(WeightedSampler(std::vector<float>{1, 2, -1}),
                    Catch::Contains("position 2") && Catch::Contains("expected finite and >= 0"));
  const Graph g = in_star(4);
  const std::vector<std::int64_t> seeds{0};
  CHECK_THROWS_AS(sample_neighbors_local(in_edges_view(g), seeds, 2, {},
                                         WeightedSampler(std::vector<float>{1, 1, 1})),
                  ShapeError);
}

}  // namespace test_sampling_weighted_sampler

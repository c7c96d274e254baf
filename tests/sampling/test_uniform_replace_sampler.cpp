#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/uniform_replace_sampler.hpp"
#include "support/sampling_graphs.hpp"

namespace test_sampling_uniform_replace_sampler {

using namespace distgraph;
using namespace distgraph::test;

TEST_CASE("uniform sampler with replacement draws each neighbour equally often", "[sampling]") {
  const std::int64_t leaves = 50, fanout = 10;
  const int trials = 10000;
  const Graph g = in_star(leaves);
  bool saw_repeat = false;
  const auto counts =
      pick_counts(g, 0, UniformReplaceSampler{}, fanout, trials, [&](const Frontier& f) {
        REQUIRE(f.num_edges() == fanout);
        saw_repeat |= std::set<std::int64_t>(f.src.begin(), f.src.end()).size() <
                      static_cast<std::size_t>(fanout);
      });
  // Independent draws: the counts are multinomial, so Pearson's statistic is chi-square.
  std::map<std::int64_t, double> expected;
  for (std::int64_t v = 1; v <= leaves; ++v)
    expected[v] = static_cast<double>(trials * fanout) / static_cast<double>(leaves);
  CHECK(chi_square(counts, expected) < chi_square_critical(static_cast<double>(leaves - 1)));
  // 10 draws from 50 repeat with probability ~0.61 per trial; never seeing one means the
  // draws are not independent.
  CHECK(saw_repeat);
}

TEST_CASE("uniform sampler with replacement returns fanout edges even above the degree",
          "[sampling]") {
  const Graph g = in_star(3);
  const std::vector<std::int64_t> seeds{0, 4, 2};  // hub, isolated node, a leaf (no in-edges)
  const Frontier f =
      sample_neighbors_local(in_edges_view(g), seeds, 8, {}, UniformReplaceSampler{});
  REQUIRE(f.num_edges() == 8);
  for (std::size_t i = 0; i < 8; ++i) {
    CHECK(f.dst[i] == 0);
    CHECK((f.src[i] >= 1 && f.src[i] <= 3));
    CHECK(f.eid[i] == f.src[i] - 1);
  }
}

TEST_CASE("uniform sampler with replacement takes each edge once for fanout -1", "[sampling]") {
  const Graph g = in_star(4);
  const std::vector<std::int64_t> seeds{0};
  const Frontier f =
      sample_neighbors_local(in_edges_view(g), seeds, -1, {}, UniformReplaceSampler{});
  CHECK(f.src == std::vector<std::int64_t>{1, 2, 3, 4});
}

}  // namespace test_sampling_uniform_replace_sampler

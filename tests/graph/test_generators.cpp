#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <vector>

#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/generators.hpp"

namespace test_graph_generators {

using namespace distgraph;

namespace {

bool same(const Coo& a, const Coo& b) {
  return a.num_nodes == b.num_nodes &&
         std::equal(a.src.begin(), a.src.end(), b.src.begin(), b.src.end()) &&
         std::equal(a.dst.begin(), a.dst.end(), b.dst.begin(), b.dst.end());
}

/// Labels, features and all three masks equal: everything of sbm() but the edges.
bool same_nodes(const SbmData& a, const SbmData& b) {
  return a.label == b.label && a.feat == b.feat && a.train_mask == b.train_mask &&
         a.val_mask == b.val_mask && a.test_mask == b.test_mask;
}

}  // namespace

TEST_CASE("rmat is deterministic in its seed and independent of the thread count", "[graph]") {
  const Coo a = rmat({.scale = 14, .edge_factor = 8, .seed = 7, .num_threads = 1});
  const Coo b = rmat({.scale = 14, .edge_factor = 8, .seed = 7, .num_threads = 7});
  const Coo c = rmat({.scale = 14, .edge_factor = 8, .seed = 8, .num_threads = 2});
  CHECK(same(a, b));
  CHECK_FALSE(same(a, c));
}

TEST_CASE("rmat has 2^scale nodes, edge_factor edges per node and a hub at node 0", "[graph]") {
  const RmatOptions o{.scale = 16, .edge_factor = 16, .seed = 3};
  const Coo coo = rmat(o);
  REQUIRE(coo.num_nodes == 1 << 16);
  REQUIRE(coo.num_edges() == 16 << 16);
  CHECK_NOTHROW(coo.validate());
  const Graph g = build_graph(coo);
  const auto deg = g.out_degrees();
  CHECK(*std::max_element(deg.begin(), deg.end()) == deg[0]);
  // Top-level quadrants: src in the low half with prob a + b, dst in the low half a + c.
  const std::int64_t half = coo.num_nodes / 2;
  double src_low = 0, dst_low = 0, both_high = 0;
  for (std::int64_t i = 0; i < coo.num_edges(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    src_low += coo.src[k] < half;
    dst_low += coo.dst[k] < half;
    both_high += coo.src[k] >= half && coo.dst[k] >= half;
  }
  const double m = static_cast<double>(coo.num_edges());
  CHECK(src_low / m == Approx(o.a + o.b).margin(0.01));
  CHECK(dst_low / m == Approx(o.a + o.c).margin(0.01));
  CHECK(both_high / m == Approx(o.d).margin(0.01));
  const Coo sym = rmat({.scale = 8, .edge_factor = 4, .symmetrize = true});
  CHECK(sym.num_edges() == 2 * 4 * 256);
  CHECK(sym.src[0] == sym.dst[4 * 256]);
  CHECK_THROWS_AS(rmat({.scale = 41}), InvalidArgument);
  CHECK_THROWS_AS(rmat({.a = -1}), InvalidArgument);
}

TEST_CASE("sbm makes a simple symmetric graph with the requested homophily and degree", "[graph]") {
  const SbmOptions o{.num_nodes = 20000, .num_classes = 5, .avg_degree = 12, .homophily = 0.7};
  const SbmData d = sbm(o);
  REQUIRE(d.edges.num_nodes == o.num_nodes);
  CHECK_NOTHROW(d.edges.validate());
  const double m = static_cast<double>(d.edges.num_edges());
  CHECK(m / static_cast<double>(o.num_nodes) == Approx(o.avg_degree).epsilon(0.03));
  double same_class = 0;
  for (std::int64_t i = 0; i < d.edges.num_edges(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    CHECK(d.edges.src[k] != d.edges.dst[k]);
    same_class += d.label[static_cast<std::size_t>(d.edges.src[k])] ==
                  d.label[static_cast<std::size_t>(d.edges.dst[k])];
  }
  CHECK(same_class / m == Approx(o.homophily).margin(0.02));
  // Symmetric and free of duplicates: rebuilding with cleaning changes nothing.
  const Graph g = build_graph(
      d.edges, {.remove_self_loops = true, .remove_duplicates = true, .symmetrize = true});
  CHECK(g.num_edges() == d.edges.num_edges());
}

TEST_CASE("sbm labels, masks and features have the promised shapes and splits", "[graph]") {
  const SbmOptions o{.num_nodes = 1000, .num_classes = 4, .feat_dim = 16};
  const SbmData d = sbm(o);
  CHECK(d.label.size() == 1000);
  CHECK(d.feat.size() == 1000 * 16);
  CHECK(d.feat_dim == 16);
  CHECK(d.num_classes == 4);
  CHECK(std::all_of(d.label.begin(), d.label.end(), [](auto l) { return l >= 0 && l < 4; }));
  const auto count = [](const std::vector<std::uint8_t>& m) {
    return std::accumulate(m.begin(), m.end(), 0);
  };
  CHECK(count(d.train_mask) == 100);
  CHECK(count(d.val_mask) == 100);
  CHECK(count(d.test_mask) == 800);
  for (std::size_t v = 0; v < 1000; ++v)
    CHECK(d.train_mask[v] + d.val_mask[v] + d.test_mask[v] == 1);
  CHECK_THROWS_AS(sbm({.homophily = 1.5}), InvalidArgument);
  CHECK_THROWS_AS(sbm({.train_fraction = 0.5, .val_fraction = 0.5, .test_fraction = 0.5}),
                  InvalidArgument);
}

TEST_CASE("sbm is deterministic in its seed whatever the thread count", "[graph]") {
  const SbmData a = sbm({.num_nodes = 100000, .avg_degree = 4, .feat_dim = 4, .num_threads = 1});
  const SbmData b = sbm({.num_nodes = 100000, .avg_degree = 4, .feat_dim = 4, .num_threads = 3});
  CHECK(same(a.edges, b.edges));
  CHECK(a.feat == b.feat);
  CHECK(a.label == b.label);
  CHECK(a.train_mask == b.train_mask);
  const SbmData c = sbm({.num_nodes = 100000, .avg_degree = 4, .feat_dim = 4, .seed = 1});
  CHECK(a.label != c.label);
}

TEST_CASE("sbm features lie closer to their own class mean than to other class means", "[graph]") {
  const SbmOptions o{.num_nodes = 8000, .num_classes = 8, .feat_dim = 32};
  const SbmData d = sbm(o);
  const auto f = static_cast<std::size_t>(d.feat_dim);
  const auto c = static_cast<std::size_t>(d.num_classes);
  std::vector<double> mean(c * f, 0.0);
  std::vector<double> size(c, 0.0);
  for (std::size_t v = 0; v < d.label.size(); ++v) {
    const auto l = static_cast<std::size_t>(d.label[v]);
    size[l] += 1;
    for (std::size_t j = 0; j < f; ++j) mean[l * f + j] += d.feat[v * f + j];
  }
  for (std::size_t l = 0; l < c; ++l)
    for (std::size_t j = 0; j < f; ++j) mean[l * f + j] /= size[l];
  double own = 0, other = 0;
  std::int64_t nearest_is_own = 0;
  for (std::size_t v = 0; v < d.label.size(); ++v) {
    const auto l = static_cast<std::size_t>(d.label[v]);
    double best = 1e300;
    std::size_t best_class = 0;
    for (std::size_t k = 0; k < c; ++k) {
      double dist = 0;
      for (std::size_t j = 0; j < f; ++j) {
        const double diff = d.feat[v * f + j] - mean[k * f + j];
        dist += diff * diff;
      }
      if (k == l)
        own += dist;
      else
        other += dist / static_cast<double>(c - 1);
      if (dist < best) best = dist, best_class = k;
    }
    nearest_is_own += best_class == l;
  }
  CHECK(own < other);
  // Raw features are informative but far from separable (see sbm's comment): well above
  // chance (1/8), well below certainty.
  const double acc = static_cast<double>(nearest_is_own) / static_cast<double>(d.label.size());
  CHECK(acc > 0.25);
  CHECK(acc < 0.9);
}

TEST_CASE("sbm gives the same graph, features and split for the same seed and others for another",
          "[graph]") {
  const SbmOptions o{.num_nodes = 3000, .num_classes = 5, .avg_degree = 6, .feat_dim = 8};
  const SbmData a = sbm(o);
  const SbmData b = sbm(o);
  CHECK(same(a.edges, b.edges));
  CHECK(same_nodes(a, b));
  SbmOptions other = o;
  other.seed = o.seed + 1;
  const SbmData c = sbm(other);
  CHECK_FALSE(same(a.edges, c.edges));
  CHECK(a.feat != c.feat);
  CHECK(a.label != c.label);
  CHECK(a.train_mask != c.train_mask);
}

TEST_CASE("sbm draws edges from their own streams: homophily changes the edges alone", "[graph]") {
  const SbmOptions o{.num_nodes = 3000, .num_classes = 5, .avg_degree = 6, .feat_dim = 8};
  SbmOptions mixed = o;
  mixed.homophily = 0.3;
  const SbmData a = sbm(o);
  const SbmData b = sbm(mixed);
  CHECK_FALSE(same(a.edges, b.edges));
  CHECK(same_nodes(a, b));
}

}  // namespace test_graph_generators

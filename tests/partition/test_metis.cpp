#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "distgraph/partition/metis.hpp"

namespace test_partition_metis {

using namespace distgraph;

namespace {

struct Csr {
  std::int64_t n = 0;
  std::vector<std::int64_t> indptr, indices;
};

// Symmetric CSR from undirected edge pairs (each stored both ways).
Csr from_edges(std::int64_t n, const std::vector<std::pair<std::int64_t, std::int64_t>>& edges) {
  std::vector<std::vector<std::int64_t>> adj(static_cast<std::size_t>(n));
  for (auto [u, v] : edges) {
    adj[static_cast<std::size_t>(u)].push_back(v);
    adj[static_cast<std::size_t>(v)].push_back(u);
  }
  Csr g{n, {0}, {}};
  for (auto& row : adj) {
    g.indices.insert(g.indices.end(), row.begin(), row.end());
    g.indptr.push_back(static_cast<std::int64_t>(g.indices.size()));
  }
  return g;
}

Csr grid(std::int64_t rows, std::int64_t cols) {
  std::vector<std::pair<std::int64_t, std::int64_t>> e;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto v = r * cols + c;
      if (c + 1 < cols) e.emplace_back(v, v + 1);
      if (r + 1 < rows) e.emplace_back(v, v + cols);
    }
  return from_edges(rows * cols, e);
}

// Two 5-cliques {0..4} and {5..9} joined by the edge 4-5.
Csr two_cliques() {
  std::vector<std::pair<std::int64_t, std::int64_t>> e;
  for (std::int64_t base : {0, 5})
    for (std::int64_t i = 0; i < 5; ++i)
      for (std::int64_t j = i + 1; j < 5; ++j) e.emplace_back(base + i, base + j);
  e.emplace_back(4, 5);
  return from_edges(10, e);
}

std::vector<std::int64_t> part_sizes(const std::vector<std::int32_t>& parts, std::int64_t k,
                                     const std::vector<bool>* mask = nullptr) {
  std::vector<std::int64_t> s(static_cast<std::size_t>(k), 0);
  for (std::size_t v = 0; v < parts.size(); ++v)
    if (mask == nullptr || (*mask)[v]) ++s[static_cast<std::size_t>(parts[v])];
  return s;
}

double imbalance(const std::vector<std::int64_t>& sizes) {
  std::int64_t total = 0, mx = 0;
  for (auto s : sizes) total += s, mx = std::max(mx, s);
  return static_cast<double>(mx) * static_cast<double>(sizes.size()) / static_cast<double>(total);
}

}  // namespace

TEST_CASE("metis splits two cliques joined by one edge with a cut of one", "[partition]") {
  const auto g = two_cliques();
  const auto r = metis_partition(g.n, g.indptr, g.indices, {.num_parts = 2});
  REQUIRE(r.parts.size() == 10);
  CHECK(r.edge_cut == 1);
  CHECK(edge_cut(g.indptr, g.indices, r.parts) == 1);
  for (int v = 1; v < 5; ++v) CHECK(r.parts[static_cast<std::size_t>(v)] == r.parts[0]);
  for (int v = 6; v < 10; ++v) CHECK(r.parts[static_cast<std::size_t>(v)] == r.parts[5]);
  CHECK(r.parts[0] != r.parts[5]);
}

TEST_CASE("metis balances a 2D grid into 4 parts with a cut far below random's", "[partition]") {
  const auto g = grid(32, 32);
  const auto r = metis_partition(g.n, g.indptr, g.indices, {.num_parts = 4, .seed = 1});
  const auto sizes = part_sizes(r.parts, 4);
  CHECK(imbalance(sizes) <= 1.03 + 1e-9);
  CHECK(r.edge_cut == edge_cut(g.indptr, g.indices, r.parts));
  const auto random_cut = edge_cut(g.indptr, g.indices, random_partition(g.n, 4, 1));
  CHECK(r.edge_cut * 5 < random_cut);
  CHECK(r.edge_cut <= 100);  // a perfect 4-way split of a 32x32 grid cuts 64 edges

  const auto again = metis_partition(g.n, g.indptr, g.indices, {.num_parts = 4, .seed = 1});
  CHECK(again.parts == r.parts);
}

TEST_CASE("metis with one part returns all zeros without calling METIS", "[partition]") {
  const auto g = grid(3, 3);
  const auto r = metis_partition(g.n, g.indptr, g.indices, {.num_parts = 1});
  CHECK(r.parts == std::vector<std::int32_t>(9, 0));
  CHECK(r.edge_cut == 0);
  const std::vector<std::int64_t> single{0, 0}, none;
  CHECK(metis_partition(1, single, none, {.num_parts = 1}).parts == std::vector<std::int32_t>{0});
}

TEST_CASE("metis rejects a part count outside one to the node count", "[partition]") {
  const auto g = grid(2, 2);
  CHECK_THROWS_AS(metis_partition(g.n, g.indptr, g.indices, {.num_parts = 5}), InvalidArgument);
  CHECK_THROWS_WITH(metis_partition(g.n, g.indptr, g.indices, {.num_parts = 5}),
                    Catch::Contains("num_parts 5") && Catch::Contains("num_nodes 4"));
  CHECK_THROWS_AS(metis_partition(g.n, g.indptr, g.indices, {.num_parts = 0}), InvalidArgument);
  CHECK_NOTHROW(metis_partition(g.n, g.indptr, g.indices, {.num_parts = 4}));
}

TEST_CASE("metis rejects graphs beyond its 32-bit index type with PartitionError", "[partition]") {
  const std::int64_t too_many = std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1;
  CHECK_THROWS_AS(metis_partition(too_many, {}, {}, {.num_parts = 2}), PartitionError);
  CHECK_THROWS_WITH(metis_partition(too_many, {}, {}, {.num_parts = 2}),
                    Catch::Contains("2147483648") && Catch::Contains("32-bit"));
}

TEST_CASE("metis validates the adjacency and strips self loops", "[partition]") {
  auto g = two_cliques();
  // Out-of-range neighbour.
  auto bad = g;
  bad.indices[3] = 10;
  CHECK_THROWS_AS(metis_partition(bad.n, bad.indptr, bad.indices, {.num_parts = 2}), IdOutOfRange);
  // Wrong indptr length, decreasing indptr.
  CHECK_THROWS_AS(metis_partition(9, g.indptr, g.indices, {.num_parts = 2}), ShapeError);
  auto dec = g;
  std::swap(dec.indptr[2], dec.indptr[3]);
  CHECK_THROWS_AS(metis_partition(dec.n, dec.indptr, dec.indices, {.num_parts = 2}),
                  InvalidArgument);
  // A one-way edge 0 -> 9.
  auto one_way = g;
  one_way.indices.insert(one_way.indices.begin() + one_way.indptr[1], 9);
  for (std::size_t v = 1; v < one_way.indptr.size(); ++v) ++one_way.indptr[v];
  CHECK_THROWS_WITH(metis_partition(one_way.n, one_way.indptr, one_way.indices, {.num_parts = 2}),
                    Catch::Contains("0 -> 9") && Catch::Contains("symmetric"));
  // Self loops on every node are dropped, not fatal.
  Csr loops{g.n, {0}, {}};
  for (std::int64_t v = 0; v < g.n; ++v) {
    loops.indices.push_back(v);
    for (auto e = g.indptr[static_cast<std::size_t>(v)];
         e < g.indptr[static_cast<std::size_t>(v) + 1]; ++e)
      loops.indices.push_back(g.indices[static_cast<std::size_t>(e)]);
    loops.indptr.push_back(static_cast<std::int64_t>(loops.indices.size()));
  }
  const auto r = metis_partition(loops.n, loops.indptr, loops.indices, {.num_parts = 2});
  CHECK(r.edge_cut == 1);
  CHECK(edge_cut(loops.indptr, loops.indices, r.parts) == 1);
}

TEST_CASE("metis with one weight per node type balances each type better than without",
          "[partition]") {
  // A 16 x 64 grid whose leftmost 16 columns are type A. The best bisection cuts the
  // columns in half, so without constraints all of A lands in one part.
  const std::int64_t rows = 16, cols = 64;
  const auto g = grid(rows, cols);
  std::vector<bool> is_a(static_cast<std::size_t>(g.n));
  std::vector<std::int64_t> w;
  for (std::int64_t v = 0; v < g.n; ++v) {
    is_a[static_cast<std::size_t>(v)] = (v % cols) < 16;
    w.push_back(is_a[static_cast<std::size_t>(v)] ? 1 : 0);
    w.push_back(is_a[static_cast<std::size_t>(v)] ? 0 : 1);
  }
  const auto plain = metis_partition(g.n, g.indptr, g.indices, {.num_parts = 2});
  const auto typed =
      metis_partition(g.n, g.indptr, g.indices, {.num_parts = 2, .vertex_weights = w});
  std::vector<bool> not_a(is_a.size());
  std::transform(is_a.begin(), is_a.end(), not_a.begin(), [](bool b) { return !b; });
  const double plain_a = imbalance(part_sizes(plain.parts, 2, &is_a));
  const double typed_a = imbalance(part_sizes(typed.parts, 2, &is_a));
  const double typed_b = imbalance(part_sizes(typed.parts, 2, &not_a));
  CHECK(typed_a < plain_a);
  CHECK(typed_a <= 1.1);
  CHECK(typed_b <= 1.1);

  std::vector<std::int64_t> negative(w);
  negative[3] = -1;
  CHECK_THROWS_AS(
      metis_partition(g.n, g.indptr, g.indices, {.num_parts = 2, .vertex_weights = negative}),
      InvalidArgument);
  std::vector<std::int64_t> short_w(w.begin(), w.end() - 1);
  CHECK_THROWS_AS(
      metis_partition(g.n, g.indptr, g.indices, {.num_parts = 2, .vertex_weights = short_w}),
      ShapeError);
}

TEST_CASE("random partition is balanced and reproducible by seed", "[partition]") {
  const auto a = random_partition(1003, 4, 42);
  const auto sizes = part_sizes(a, 4);
  CHECK(sizes == std::vector<std::int64_t>{251, 251, 251, 250});
  CHECK(random_partition(1003, 4, 42) == a);
  CHECK(random_partition(1003, 4, 43) != a);
  CHECK(random_partition(5, 1, 0) == std::vector<std::int32_t>(5, 0));
  CHECK_THROWS_AS(random_partition(3, 4, 0), InvalidArgument);
  CHECK_THROWS_AS(random_partition(3, 0, 0), InvalidArgument);
}

TEST_CASE("edge cut counts each undirected edge once", "[partition]") {
  const auto g = grid(2, 2);  // a 4-cycle 0-1-3-2-0
  CHECK(edge_cut(g.indptr, g.indices, std::vector<std::int32_t>{0, 0, 1, 1}) == 2);
  CHECK(edge_cut(g.indptr, g.indices, std::vector<std::int32_t>{0, 1, 1, 0}) == 4);
  CHECK(edge_cut(g.indptr, g.indices, std::vector<std::int32_t>{0, 0, 0, 0}) == 0);
  CHECK_THROWS_AS(edge_cut(g.indptr, g.indices, std::vector<std::int32_t>{0, 0, 0}), ShapeError);
}

}  // namespace test_partition_metis

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "distgraph/graph/builder.hpp"

namespace test_graph_builder {

using namespace distgraph;

namespace {

struct Entry {
  std::int64_t row, col, eid;
  auto operator<=>(const Entry&) const = default;
};

Coo random_coo(std::int64_t n, std::int64_t m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> pick(0, n - 1);
  std::vector<std::int64_t> src(static_cast<std::size_t>(m)), dst(static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < m; ++i) {
    src[static_cast<std::size_t>(i)] = pick(rng);
    // Every fifth edge repeats the previous one and some are self loops, so cleaning has
    // something to do.
    dst[static_cast<std::size_t>(i)] = i % 7 == 3 ? src[static_cast<std::size_t>(i)] : pick(rng);
    if (i % 5 == 4) {
      src[static_cast<std::size_t>(i)] = src[static_cast<std::size_t>(i - 1)];
      dst[static_cast<std::size_t>(i)] = dst[static_cast<std::size_t>(i - 1)];
    }
  }
  return Coo{n, Buffer<std::int64_t>(std::move(src)), Buffer<std::int64_t>(std::move(dst))};
}

std::vector<Entry> entries(const Csr& c) {
  std::vector<Entry> out;
  for (std::int64_t r = 0; r < c.num_rows; ++r) {
    auto nb = c.neighbors(r);
    auto ed = c.edges(r);
    for (std::size_t i = 0; i < nb.size(); ++i) out.push_back({r, nb[i], ed[i]});
  }
  return out;
}

// Reference: std::sort-based cleaning; returns (src, dst) pairs in edge-ID order.
std::vector<std::pair<std::int64_t, std::int64_t>> reference_edges(const Coo& coo,
                                                                   const BuildOptions& o) {
  std::vector<std::pair<std::int64_t, std::int64_t>> e;
  for (std::int64_t i = 0; i < coo.num_edges(); ++i)
    e.emplace_back(coo.src[static_cast<std::size_t>(i)], coo.dst[static_cast<std::size_t>(i)]);
  const bool cleaning = o.remove_self_loops || o.remove_duplicates || o.symmetrize;
  if (!cleaning) return e;
  if (o.symmetrize) {
    const auto m = e.size();
    for (std::size_t i = 0; i < m; ++i) e.emplace_back(e[i].second, e[i].first);
  }
  if (o.remove_self_loops)
    e.erase(std::remove_if(e.begin(), e.end(), [](auto& p) { return p.first == p.second; }),
            e.end());
  std::sort(e.begin(), e.end());
  if (o.remove_duplicates) e.erase(std::unique(e.begin(), e.end()), e.end());
  return e;
}

std::vector<Entry> reference_csr(const std::vector<std::pair<std::int64_t, std::int64_t>>& e,
                                 bool by_dst) {
  std::vector<Entry> out;
  for (std::size_t i = 0; i < e.size(); ++i) {
    const auto [s, d] = e[i];
    out.push_back(by_dst ? Entry{d, s, static_cast<std::int64_t>(i)}
                         : Entry{s, d, static_cast<std::int64_t>(i)});
  }
  std::sort(out.begin(), out.end());
  return out;
}

void check_against_reference(const Coo& coo, const BuildOptions& o) {
  const Graph g = build_graph(coo, o);
  const auto ref = reference_edges(coo, o);
  REQUIRE(g.num_edges() == static_cast<std::int64_t>(ref.size()));
  CHECK(g.num_nodes() == coo.num_nodes);
  CHECK(g.types.num_edges() == g.num_edges());
  CHECK(entries(g.out) == reference_csr(ref, false));
  CHECK(entries(g.in) == reference_csr(ref, true));
  const Coo back = g.to_coo();
  std::vector<std::pair<std::int64_t, std::int64_t>> got;
  for (std::size_t i = 0; i < ref.size(); ++i) got.emplace_back(back.src[i], back.dst[i]);
  CHECK(got == ref);
  CHECK_NOTHROW(g.out.validate());
  CHECK_NOTHROW(g.in.validate());
}

}  // namespace

TEST_CASE("build_graph matches a sort-based reference under every cleaning option", "[graph]") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const Coo coo = random_coo(seed == 3 ? 5000 : 50, seed == 3 ? 300000 : 400, seed);
    for (int mask = 0; mask < 8; ++mask) {
      const BuildOptions o{.remove_self_loops = (mask & 1) != 0,
                           .remove_duplicates = (mask & 2) != 0,
                           .symmetrize = (mask & 4) != 0,
                           .num_threads = 3};
      INFO("seed " << seed << " options mask " << mask);
      check_against_reference(coo, o);
    }
  }
}

TEST_CASE("without cleaning options edge IDs are positions in the input", "[graph]") {
  const Coo coo{4, Buffer<std::int64_t>(std::vector<std::int64_t>{2, 0, 2, 1, 0}),
                Buffer<std::int64_t>(std::vector<std::int64_t>{1, 3, 0, 1, 3})};
  const Graph g = build_graph(coo);
  CHECK(std::vector<std::int64_t>(g.out_neighbors(0).begin(), g.out_neighbors(0).end()) ==
        std::vector<std::int64_t>{3, 3});
  CHECK(std::vector<std::int64_t>(g.out.edges(0).begin(), g.out.edges(0).end()) ==
        std::vector<std::int64_t>{1, 4});
  CHECK(std::vector<std::int64_t>(g.out_neighbors(2).begin(), g.out_neighbors(2).end()) ==
        std::vector<std::int64_t>{0, 1});
  CHECK(std::vector<std::int64_t>(g.out.edges(2).begin(), g.out.edges(2).end()) ==
        std::vector<std::int64_t>{2, 0});
  CHECK(std::vector<std::int64_t>(g.in_neighbors(1).begin(), g.in_neighbors(1).end()) ==
        std::vector<std::int64_t>{1, 2});
  CHECK(g.out_degrees() == std::vector<std::int64_t>{2, 1, 2, 0});
  CHECK(g.in_degrees() == std::vector<std::int64_t>{1, 2, 0, 2});
  CHECK(g.out_degree(3) == 0);
  CHECK(g.in_degree(3) == 2);
}

TEST_CASE("build results are identical for 1, 2 and 7 threads", "[graph]") {
  const Coo coo = random_coo(3000, 400000, 9);
  for (bool clean : {false, true}) {
    BuildOptions o{.remove_self_loops = clean, .remove_duplicates = clean, .symmetrize = clean};
    o.num_threads = 1;
    const Graph g1 = build_graph(coo, o);
    for (unsigned t : {2u, 7u}) {
      o.num_threads = t;
      const Graph gt = build_graph(coo, o);
      CHECK(std::equal(g1.out.indptr.begin(), g1.out.indptr.end(), gt.out.indptr.begin()));
      CHECK(entries(g1.out) == entries(gt.out));
      CHECK(entries(g1.in) == entries(gt.in));
    }
  }
}

TEST_CASE("CSR and CSC agree on the endpoints of every edge ID", "[graph]") {
  const Coo coo = random_coo(1000, 20000, 4);
  const Graph g = build_graph(coo, {.remove_duplicates = true, .symmetrize = true});
  std::vector<std::pair<std::int64_t, std::int64_t>> by_out(
      static_cast<std::size_t>(g.num_edges())),
      by_in(static_cast<std::size_t>(g.num_edges()));
  for (const auto& e : entries(g.out)) by_out[static_cast<std::size_t>(e.eid)] = {e.row, e.col};
  for (const auto& e : entries(g.in)) by_in[static_cast<std::size_t>(e.eid)] = {e.col, e.row};
  CHECK(by_out == by_in);
  // Symmetrized and deduplicated: every node's in- and out-neighbours coincide.
  for (std::int64_t v = 0; v < g.num_nodes(); ++v)
    REQUIRE(std::equal(g.out_neighbors(v).begin(), g.out_neighbors(v).end(),
                       g.in_neighbors(v).begin(), g.in_neighbors(v).end()));
}

TEST_CASE("build_csr keeps caller edge IDs and sorts rows by neighbour then edge ID", "[graph]") {
  const std::vector<std::int64_t> rows{1, 1, 1, 0}, cols{2, 0, 2, 1}, eids{30, 31, 10, 7};
  const Csr c = build_csr(2, 3, rows, cols, eids, 2);
  CHECK(c.num_cols == 3);
  CHECK(std::vector<std::int64_t>(c.indptr.begin(), c.indptr.end()) ==
        std::vector<std::int64_t>{0, 1, 4});
  CHECK(std::vector<std::int64_t>(c.indices.begin(), c.indices.end()) ==
        std::vector<std::int64_t>{1, 0, 2, 2});
  CHECK(std::vector<std::int64_t>(c.edge_ids.begin(), c.edge_ids.end()) ==
        std::vector<std::int64_t>{7, 31, 10, 30});
}

TEST_CASE("a graph with no edges and isolated nodes builds", "[graph]") {
  const Coo coo{5, {}, {}};
  const Graph g = build_graph(coo, {.remove_duplicates = true});
  CHECK(g.num_nodes() == 5);
  CHECK(g.num_edges() == 0);
  CHECK(g.out_degrees() == std::vector<std::int64_t>(5, 0));
  const Graph empty = build_graph(Coo{});
  CHECK(empty.num_nodes() == 0);
}

TEST_CASE("out-of-range IDs and mismatched lengths are typed errors naming the culprit",
          "[graph]") {
  const Coo bad_dst{3, Buffer<std::int64_t>(std::vector<std::int64_t>{0, 1, 2}),
                    Buffer<std::int64_t>(std::vector<std::int64_t>{1, 7, 0})};
  try {
    build_graph(bad_dst);
    FAIL("expected IdOutOfRange");
  } catch (const IdOutOfRange& e) {
    CHECK(e.subject() == "dst");
    CHECK(e.value() == 7);
    CHECK(e.upper() == 3);
  }
  const Coo bad_src{3, Buffer<std::int64_t>(std::vector<std::int64_t>{0, -1, 2}),
                    Buffer<std::int64_t>(std::vector<std::int64_t>{1, 1, 0})};
  CHECK_THROWS_MATCHES(build_graph(bad_src), IdOutOfRange,
                       Catch::Matchers::Message("src: id -1 out of range; expected [0, 3)"));
  const Coo ragged{3, Buffer<std::int64_t>(std::vector<std::int64_t>{0, 1}),
                   Buffer<std::int64_t>(std::vector<std::int64_t>{1})};
  CHECK_THROWS_AS(build_graph(ragged), ShapeError);
  CHECK_THROWS_AS(ragged.validate(), ShapeError);
  const std::vector<std::int64_t> r{0, 1}, c{0, 5};
  CHECK_THROWS_AS(build_csr(2, 2, r, c), IdOutOfRange);
  CHECK_THROWS_AS(build_csr(2, 2, r, std::vector<std::int64_t>{0}), ShapeError);
  CHECK_THROWS_AS(build_csr(2, 6, r, c, std::vector<std::int64_t>{1, 2, 3}), ShapeError);
}

TEST_CASE("the first bad ID is reported whatever the thread count", "[graph]") {
  std::vector<std::int64_t> ids(1 << 20, 0);
  ids[600000] = -5;
  ids[900000] = 99;
  for (unsigned t : {1u, 2u, 7u}) {
    try {
      detail::check_ids_in_range(ids, 10, "src", t);
      FAIL("expected IdOutOfRange");
    } catch (const IdOutOfRange& e) {
      CHECK(e.value() == -5);
    }
  }
}

TEST_CASE("Csr::validate rejects a corrupt indptr and out-of-range indices", "[graph]") {
  Csr c = build_csr(3, 3, std::vector<std::int64_t>{0, 2}, std::vector<std::int64_t>{1, 2});
  CHECK_NOTHROW(c.validate());
  Csr broken = c;
  broken.indptr = Buffer<std::int64_t>(std::vector<std::int64_t>{0, 2, 1, 2});
  CHECK_THROWS_AS(broken.validate(), ShapeError);
  broken = c;
  broken.indices = Buffer<std::int64_t>(std::vector<std::int64_t>{1, 3});
  CHECK_THROWS_AS(broken.validate("part0 csc"), IdOutOfRange);
  broken = c;
  broken.indptr = Buffer<std::int64_t>(std::vector<std::int64_t>{0, 1, 2});
  CHECK_THROWS_AS(broken.validate(), ShapeError);
}

}  // namespace test_graph_builder

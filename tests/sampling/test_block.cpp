#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "distgraph/sampling/block.hpp"

namespace test_sampling_block {

using namespace distgraph;

namespace {

/// to_block written the obvious way: linear searches, one destination at a time.
Block reference_block(const Frontier& f, const std::vector<std::int64_t>& dst_nodes) {
  Block b;
  b.num_dst = static_cast<std::int64_t>(dst_nodes.size());
  b.src_nodes = dst_nodes;
  const auto position = [&](std::int64_t v) {
    const auto it = std::find(b.src_nodes.begin(), b.src_nodes.end(), v);
    if (it != b.src_nodes.end()) return static_cast<std::int64_t>(it - b.src_nodes.begin());
    b.src_nodes.push_back(v);
    return b.num_src() - 1;
  };
  std::vector<std::int64_t> src_pos;
  for (const std::int64_t u : f.src) src_pos.push_back(position(u));
  b.indptr.push_back(0);
  for (const std::int64_t d : dst_nodes) {
    for (std::size_t e = 0; e < f.dst.size(); ++e)
      if (f.dst[e] == d) {
        b.indices.push_back(src_pos[e]);
        b.eid.push_back(f.eid[e]);
      }
    b.indptr.push_back(static_cast<std::int64_t>(b.indices.size()));
  }
  return b;
}

struct Case {
  Frontier f;
  std::vector<std::int64_t> dst_nodes;
};

/// `num_dst` distinct destinations out of [0, id_range), `m` edges into them from sources
/// in [0, id_range) (so some sources are destinations too, some repeat).
Case random_case(std::int64_t id_range, std::size_t num_dst, std::size_t m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> node(0, id_range - 1);
  Case c;
  std::vector<std::int64_t> all(static_cast<std::size_t>(id_range));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  c.dst_nodes.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(num_dst));
  std::uniform_int_distribution<std::size_t> which(0, num_dst - 1);
  for (std::size_t e = 0; e < m; ++e) {
    c.f.dst.push_back(c.dst_nodes[which(rng)]);
    c.f.src.push_back(e % 3 == 0 ? c.dst_nodes[which(rng)] : node(rng));
    c.f.eid.push_back(static_cast<std::int64_t>(1000000 + e));
  }
  return c;
}

void check_same(const Block& a, const Block& b) {
  CHECK(a.num_dst == b.num_dst);
  CHECK(a.src_nodes == b.src_nodes);
  CHECK(a.indptr == b.indptr);
  CHECK(a.indices == b.indices);
  CHECK(a.eid == b.eid);
}

/// `without`, compacted from the frontier of `with` minus its edge IDs, is `with` without
/// them.
void check_same_but_eid(const Block& with, const Block& without) {
  CHECK(without.num_dst == with.num_dst);
  CHECK(without.src_nodes == with.src_nodes);
  CHECK(without.indptr == with.indptr);
  CHECK(without.indices == with.indices);
  CHECK(without.eid.empty());
}

}  // namespace

TEST_CASE("to_block matches a brute-force compaction on random frontiers", "[sampling]") {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    // Small ID ranges repeat sources; large ones make almost every source new, so the
    // hash map has to grow well past its initial size.
    const std::int64_t range = seed % 2 ? 200 : 1000000;
    const Case c = random_case(range, 40 + seed * 10, 3000 + seed * 500, seed);
    const Block b = to_block(c.f, c.dst_nodes);
    check_same(b, reference_block(c.f, c.dst_nodes));
    CHECK(std::equal(b.dst_nodes().begin(), b.dst_nodes().end(), c.dst_nodes.begin(),
                     c.dst_nodes.end()));
    // As a sampler lays it out: each destination's edges in one run (to_block looks a
    // run's destination up once), and for odd seeds one destination's run split in two.
    Case runs = c;
    std::vector<std::size_t> order(c.f.dst.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return c.f.dst[x] < c.f.dst[y]; });
    if (seed % 2) std::rotate(order.begin(), order.begin() + 1, order.end());
    for (std::size_t i = 0; i < order.size(); ++i) {
      runs.f.src[i] = c.f.src[order[i]];
      runs.f.dst[i] = c.f.dst[order[i]];
      runs.f.eid[i] = c.f.eid[order[i]];
    }
    check_same(to_block(runs.f, runs.dst_nodes), reference_block(runs.f, runs.dst_nodes));
  }
}

TEST_CASE("to_block keeps destinations without edges and handles an empty frontier", "[sampling]") {
  const std::vector<std::int64_t> dst{9, 4, 7};
  const Block empty = to_block(Frontier{}, dst);
  CHECK(empty.src_nodes == dst);
  CHECK(empty.indptr == std::vector<std::int64_t>{0, 0, 0, 0});
  CHECK(empty.num_edges() == 0);

  const Frontier f{.src = {4, 12, 12, 9}, .dst = {7, 7, 9, 7}, .eid = {100, 101, 102, 103}};
  const Block b = to_block(f, dst);
  CHECK(b.src_nodes == std::vector<std::int64_t>{9, 4, 7, 12});
  CHECK(b.indptr == std::vector<std::int64_t>{0, 1, 1, 4});
  CHECK(b.indices == std::vector<std::int64_t>{3, 1, 3, 0});
  CHECK(b.eid == std::vector<std::int64_t>{102, 100, 101, 103});
}

TEST_CASE("a frontier without edge IDs compacts to the same block without them", "[sampling]") {
  const std::vector<std::int64_t> dst{9, 4, 7};
  const Frontier f{.src = {4, 12, 12, 9}, .dst = {7, 7, 9, 7}, .eid = {100, 101, 102, 103}};
  const Block with = to_block(f, dst);
  const Block without = to_block(Frontier{.src = f.src, .dst = f.dst, .eid = {}}, dst);
  check_same_but_eid(with, without);
  CHECK(with.eid.size() == 4);
}

TEST_CASE("to_block places a destination's edges from several runs apart in frontier order",
          "[sampling]") {
  // Runs of one destination (to_block claims a run's slots at once) interleaved with other
  // destinations' runs, as a frontier joined from several owners' answers may be.
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(seed);
    const std::vector<std::int64_t> dst{50, 10, 30, 20};
    Frontier f;
    for (int r = 0; r < 24; ++r) {
      const std::int64_t d = dst[rng() % dst.size()];
      for (std::uint64_t k = 1 + rng() % 4; k > 0; --k) {
        f.src.push_back(static_cast<std::int64_t>(rng() % 64));
        f.dst.push_back(d);
        f.eid.push_back(static_cast<std::int64_t>(f.eid.size()) + 7000);
      }
    }
    const Block with = to_block(f, dst);
    check_same(with, reference_block(f, dst));
    const Block without = to_block(Frontier{.src = f.src, .dst = f.dst, .eid = {}}, dst);
    check_same_but_eid(with, without);
  }
}

TEST_CASE("group_sources groups the other sources by key and keeps every edge", "[sampling]") {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const Case c = random_case(seed % 2 ? 300 : 1000000, 30 + seed * 5, 2000 + seed * 300, seed);
    const Block before = to_block(c.f, c.dst_nodes);
    Block b = before;
    const auto d = static_cast<std::size_t>(b.num_dst);
    const auto key = [](std::int64_t v) { return static_cast<std::int32_t>((v * 7 + 3) % 3); };
    std::vector<std::int32_t> group;
    for (std::size_t j = d; j < b.src_nodes.size(); ++j) group.push_back(key(b.src_nodes[j]));
    group_sources(b, group, 3);
    // Destinations, offsets and edge IDs stay; the sources are the same set.
    CHECK(b.num_dst == before.num_dst);
    CHECK(b.indptr == before.indptr);
    CHECK(b.eid == before.eid);
    REQUIRE(b.src_nodes.size() == before.src_nodes.size());
    CHECK(std::equal(b.src_nodes.begin(), b.src_nodes.begin() + static_cast<std::ptrdiff_t>(d),
                     before.src_nodes.begin()));
    CHECK(std::is_permutation(b.src_nodes.begin(), b.src_nodes.end(), before.src_nodes.begin()));
    // Grouped by key, ascending, and in first-appearance order within a key.
    for (std::size_t j = d + 1; j < b.src_nodes.size(); ++j)
      REQUIRE(key(b.src_nodes[j - 1]) <= key(b.src_nodes[j]));
    for (std::int32_t k = 0; k < 3; ++k) {
      std::vector<std::int64_t> was, is;
      for (std::size_t j = d; j < before.src_nodes.size(); ++j)
        if (key(before.src_nodes[j]) == k) was.push_back(before.src_nodes[j]);
      for (std::size_t j = d; j < b.src_nodes.size(); ++j)
        if (key(b.src_nodes[j]) == k) is.push_back(b.src_nodes[j]);
      CHECK(was == is);
    }
    // Every edge joins the same two nodes as before.
    REQUIRE(b.indices.size() == before.indices.size());
    for (std::size_t e = 0; e < b.indices.size(); ++e)
      REQUIRE(b.src_nodes[static_cast<std::size_t>(b.indices[e])] ==
              before.src_nodes[static_cast<std::size_t>(before.indices[e])]);
    // Already grouped: nothing moves.
    Block again = b;
    std::vector<std::int32_t> sorted_group;
    for (std::size_t j = d; j < again.src_nodes.size(); ++j)
      sorted_group.push_back(key(again.src_nodes[j]));
    group_sources(again, sorted_group, 3);
    check_same(again, b);
  }
}

TEST_CASE("group_sources rejects a group list of the wrong length or range",
          "[sampling][bad_input]") {
  Block b = to_block(Frontier{.src = {5, 6, 1}, .dst = {1, 1, 2}, .eid = {}},
                     std::vector<std::int64_t>{1, 2});
  const Block before = b;
  CHECK_THROWS_AS(group_sources(b, std::vector<std::int32_t>{0}, 2), ShapeError);
  CHECK_THROWS_AS(group_sources(b, std::vector<std::int32_t>{0, 2}, 2), IdOutOfRange);
  CHECK_THROWS_AS(group_sources(b, std::vector<std::int32_t>{-1, 0}, 2), IdOutOfRange);
  check_same(b, before);  // nothing renumbered
  group_sources(b, std::vector<std::int32_t>{1, 0}, 2);
  CHECK(b.src_nodes == std::vector<std::int64_t>{1, 2, 6, 5});
  CHECK(b.indices == std::vector<std::int64_t>{3, 2, 0});
  // Many possible groups cost nothing beyond those present.
  group_sources(b, std::vector<std::int32_t>{1'000'000'000, 7}, 2'000'000'000);
  CHECK(b.src_nodes == std::vector<std::int64_t>{1, 2, 5, 6});
  CHECK(b.indices == std::vector<std::int64_t>{2, 3, 0});
}

TEST_CASE("to_block rejects inconsistent frontiers and destinations", "[sampling][bad_input]") {
  const std::vector<std::int64_t> dst{1, 2};
  CHECK_THROWS_AS(to_block(Frontier{.src = {1}, .dst = {2}, .eid = {0, 1}}, dst), ShapeError);
  CHECK_THROWS_AS(to_block(Frontier{.src = {1, 1}, .dst = {2}, .eid = {}}, dst), ShapeError);
  CHECK_THROWS_WITH(to_block(Frontier{.src = {5}, .dst = {3}, .eid = {0}}, dst),
                    Catch::Contains("goes to node 3"));
  // A stranger after a run of a real destination, and a run of strangers.
  CHECK_THROWS_WITH(to_block(Frontier{.src = {5, 6, 7}, .dst = {2, 2, 4}, .eid = {0, 1, 2}}, dst),
                    Catch::Contains("edge 2 goes to node 4"));
  CHECK_THROWS_WITH(to_block(Frontier{.src = {5, 6}, .dst = {8, 8}, .eid = {0, 1}}, dst),
                    Catch::Contains("edge 0 goes to node 8"));
  const std::vector<std::int64_t> twice{1, 2, 1};
  CHECK_THROWS_WITH(to_block(Frontier{}, twice), Catch::Contains("dst node 1 listed twice"));
  CHECK_THROWS_AS(to_block(Frontier{.src = {-4}, .dst = {1}, .eid = {0}}, dst), IdOutOfRange);
  const std::vector<std::int64_t> negative{-1};
  CHECK_THROWS_AS(to_block(Frontier{}, negative), IdOutOfRange);
}

}  // namespace test_sampling_block

#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "distgraph/partition/range_partition_book.hpp"

namespace test_partition_range_partition_book {

using namespace distgraph;

namespace {

// 3 partitions, node types user/item, edge types buys/follows; partition 1 owns no users.
// Nodes: p0 = users [0, 2) items [2, 5); p1 = items [5, 9); p2 = users [9, 14) items [14, 15).
RangePartitionBook toy_book() {
  return RangePartitionBook({"user", "item"}, {{2, 3}, {0, 4}, {5, 1}}, {"buys", "follows"},
                            {{4, 1}, {2, 0}, {3, 3}});
}

std::vector<std::int32_t> parts_of(const RangePartitionBook& b, std::vector<std::int64_t> ids) {
  std::vector<std::int32_t> out(ids.size());
  b.node_partition(ids, out);
  return out;
}

}  // namespace

TEST_CASE("range book maps the first and last ID of each partition and type to that partition",
          "[partition]") {
  const auto b = toy_book();
  REQUIRE(b.num_partitions() == 3);
  REQUIRE(b.num_nodes() == 15);
  REQUIRE(b.num_edges() == 13);
  CHECK(parts_of(b, {0, 1, 2, 4, 5, 8, 9, 13, 14}) ==
        std::vector<std::int32_t>{0, 0, 0, 0, 1, 1, 2, 2, 2});

  std::vector<std::int64_t> edges{0, 4, 5, 6, 7, 8, 12};
  std::vector<std::int32_t> eparts(edges.size());
  b.edge_partition(edges, eparts);
  CHECK(eparts == std::vector<std::int32_t>{0, 0, 1, 1, 2, 2, 2});

  // Type-wise: first and last of every non-empty (partition, type) range.
  for (std::int32_t t = 0; t < b.num_node_types(); ++t) {
    const auto ranges = b.node_ranges(NodeType(t));
    for (std::int32_t p = 0; p < 3; ++p) {
      const auto [s, e] = ranges[static_cast<std::size_t>(p)];
      if (s == e) continue;
      std::vector<std::int64_t> ends{s, e - 1};
      std::vector<std::int32_t> types(2);
      std::vector<std::int64_t> per(2);
      b.node_to_per_type(ends, types, per);
      CHECK(parts_of(b, ends) == std::vector<std::int32_t>{p, p});
      CHECK(types == std::vector<std::int32_t>{t, t});
    }
  }
}

TEST_CASE("range book reports each type's ranges as the partition config stores them",
          "[partition]") {
  const auto b = toy_book();
  using R = RangePartitionBook::Range;
  CHECK(b.node_ranges(NodeType(0)) == std::vector<R>{{0, 2}, {5, 5}, {9, 14}});
  CHECK(b.node_ranges(NodeType(1)) == std::vector<R>{{2, 5}, {5, 9}, {14, 15}});
  CHECK(b.edge_ranges(EdgeType(0)) == std::vector<R>{{0, 4}, {5, 7}, {7, 10}});
  CHECK(b.edge_ranges(EdgeType(1)) == std::vector<R>{{4, 5}, {7, 7}, {10, 13}});
  CHECK(b.node_range(PartId(1)) == R{5, 9});
  CHECK(b.num_nodes(NodeType(0)) == 7);
  CHECK(b.num_nodes(NodeType(1)) == 8);
  CHECK(b.num_owned_nodes(PartId(1), NodeType(0)) == 0);
  CHECK(b.owned_nodes(PartId(2), NodeType(0)) == std::vector<std::int64_t>{9, 10, 11, 12, 13});

  const auto again = RangePartitionBook::from_ranges(
      b.node_type_names(), {b.node_ranges(NodeType(0)), b.node_ranges(NodeType(1))},
      b.edge_type_names(), {b.edge_ranges(EdgeType(0)), b.edge_ranges(EdgeType(1))});
  CHECK(again.node_ranges(NodeType(0)) == b.node_ranges(NodeType(0)));
  CHECK(again.edge_ranges(EdgeType(1)) == b.edge_ranges(EdgeType(1)));
  CHECK(again.num_nodes() == 15);
}

TEST_CASE("range book local and global IDs round-trip", "[partition]") {
  const auto b = toy_book();
  std::vector<std::int64_t> all(static_cast<std::size_t>(b.num_nodes()));
  std::iota(all.begin(), all.end(), 0);
  std::vector<std::int64_t> local(all.size());
  std::vector<std::int32_t> parts(all.size());
  b.node_to_local(all, local);
  b.node_partition(all, parts);
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::int64_t g = -1;
    b.node_to_global(PartId(parts[i]), std::span(&local[i], 1), std::span(&g, 1));
    CHECK(g == all[i]);
  }
  // Local IDs of partition 2 are 0..5 in global order.
  std::vector<std::int64_t> l2{0, 5}, g2(2);
  b.node_to_global(PartId(2), l2, g2);
  CHECK(g2 == std::vector<std::int64_t>{9, 14});
}

TEST_CASE("range book per-type IDs number each type across partitions in order", "[partition]") {
  const auto b = toy_book();
  std::vector<std::int64_t> ids{0, 1, 9, 13, 2, 5, 14};
  std::vector<std::int32_t> types(ids.size());
  std::vector<std::int64_t> per(ids.size());
  b.node_to_per_type(ids, types, per);
  CHECK(types == std::vector<std::int32_t>{0, 0, 0, 0, 1, 1, 1});
  CHECK(per == std::vector<std::int64_t>{0, 1, 2, 6, 0, 3, 7});
  std::vector<std::int64_t> users{0, 1, 2, 6}, back(4);
  b.per_type_to_node(NodeType(0), users, back);
  CHECK(back == std::vector<std::int64_t>{0, 1, 9, 13});
  std::vector<std::int64_t> items{0, 3, 7}, iback(3);
  b.per_type_to_node(NodeType(1), items, iback);
  CHECK(iback == std::vector<std::int64_t>{2, 5, 14});
}

TEST_CASE("range book owned sets are disjoint and cover every ID", "[partition]") {
  const auto b = toy_book();
  std::set<std::int64_t> seen;
  std::int64_t total = 0;
  for (std::int32_t p = 0; p < b.num_partitions(); ++p) {
    const auto owned = b.owned_nodes(PartId(p));
    CHECK(static_cast<std::int64_t>(owned.size()) == b.num_owned_nodes(PartId(p)));
    total += static_cast<std::int64_t>(owned.size());
    seen.insert(owned.begin(), owned.end());
  }
  CHECK(total == b.num_nodes());
  CHECK(static_cast<std::int64_t>(seen.size()) == b.num_nodes());
}

TEST_CASE("range book throws IdOutOfRange naming the kind and the value", "[partition]") {
  const auto b = toy_book();
  std::vector<std::int32_t> parts(2);
  std::vector<std::int64_t> bad{3, 15};
  CHECK_THROWS_AS(b.node_partition(bad, parts), IdOutOfRange);
  CHECK_THROWS_WITH(b.node_partition(bad, parts),
                    Catch::Contains("node id") && Catch::Contains("15"));
  std::vector<std::int64_t> neg{-1, 0};
  CHECK_THROWS_WITH(b.edge_partition(neg, parts),
                    Catch::Contains("edge id") && Catch::Contains("-1"));
  try {
    b.node_partition(bad, parts);
  } catch (const IdOutOfRange& e) {
    CHECK(e.value() == 15);
    CHECK(e.upper() == 15);
  }
  std::vector<std::int64_t> local{4}, out(1);
  CHECK_THROWS_AS(b.node_to_global(PartId(1), local, out), IdOutOfRange);
  CHECK_THROWS_AS(b.node_to_global(PartId(3), local, out), IdOutOfRange);
  CHECK_THROWS_AS(b.owned_nodes(PartId(-1)), IdOutOfRange);
  CHECK_THROWS_AS(b.per_type_to_node(NodeType(2), local, out), IdOutOfRange);
  std::vector<std::int64_t> per{7};
  CHECK_THROWS_WITH(b.per_type_to_node(NodeType(0), per, out), Catch::Contains("user"));
}

TEST_CASE("range book rejects output spans of the wrong length before writing", "[partition]") {
  const auto b = toy_book();
  std::vector<std::int64_t> ids{0, 1};
  std::vector<std::int32_t> parts{-7};
  CHECK_THROWS_AS(b.node_partition(ids, parts), ShapeError);
  CHECK(parts[0] == -7);
}

TEST_CASE("range book rejects ragged, negative or mismatched counts", "[partition]") {
  CHECK_THROWS_AS(RangePartitionBook({"a", "b"}, {{1, 2}, {3}}, {"e"}, {{1}, {1}}),
                  InvalidArgument);
  CHECK_THROWS_AS(RangePartitionBook({"a"}, {{1}, {-1}}, {"e"}, {{1}, {1}}), InvalidArgument);
  CHECK_THROWS_AS(RangePartitionBook({"a"}, {{1}, {1}}, {"e"}, {{1}}), InvalidArgument);
  CHECK_THROWS_AS(RangePartitionBook(std::vector<std::int64_t>{}, {}), InvalidArgument);
}

TEST_CASE("from_ranges rejects ranges that do not tile the IDs partition-major", "[partition]") {
  using R = RangePartitionBook::Range;
  // Type-major layout (all users first) is not what relabeling produces.
  CHECK_THROWS_AS(
      RangePartitionBook::from_ranges({"user", "item"}, {{{0, 2}, {2, 4}}, {{4, 5}, {5, 6}}},
                                      {"_E"}, {{{0, 1}, {1, 2}}}),
      PartitionError);
  CHECK_THROWS_WITH(
      RangePartitionBook::from_ranges({"_N"}, {{{0, 2}, {3, 4}}}, {"_E"}, {{{0, 1}, {1, 2}}}),
      Catch::Contains("node_map['_N'][1]") && Catch::Contains("3"));
  CHECK_NOTHROW(
      RangePartitionBook::from_ranges({"_N"}, {{R{0, 2}, R{2, 4}}}, {"_E"}, {{R{0, 1}, R{1, 2}}}));
}

TEST_CASE("homogeneous range book uses DGL's default type names", "[partition]") {
  const RangePartitionBook b({3, 4}, {5, 6});
  CHECK(b.node_type_names() == std::vector<std::string>{"_N"});
  CHECK(b.edge_type_names() == std::vector<std::string>{"_E"});
  CHECK(b.num_nodes() == 7);
  CHECK(b.num_edges() == 11);
  CHECK(b.owned_edges(PartId(1)).front() == 5);
  const RangePartitionBook copy = b;
  CHECK(copy.node_range(PartId(1)) == b.node_range(PartId(1)));
}

}  // namespace test_partition_range_partition_book

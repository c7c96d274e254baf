#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "distgraph/partition/basic_partition_book.hpp"
#include "distgraph/partition/range_partition_book.hpp"

namespace test_partition_basic_partition_book {

using namespace distgraph;

namespace {

std::vector<std::int64_t> iota_ids(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

}  // namespace

TEST_CASE("basic book agrees with range book on a relabeled layout", "[partition]") {
  // The layout of a relabeled graph: p0 = users [0, 2) items [2, 5); p1 = items [5, 9);
  // p2 = users [9, 14) items [14, 15); edges likewise per (partition, edge type).
  const RangePartitionBook range({"user", "item"}, {{2, 3}, {0, 4}, {5, 1}}, {"buys", "follows"},
                                 {{4, 1}, {2, 0}, {3, 3}});
  const BasicPartitionBook basic(
      3, Buffer<std::int32_t>({0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}),
      Buffer<std::int32_t>({0, 0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 2}),
      {.ntypes = {"user", "item"},
       .node_types = Buffer<std::int32_t>({0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1}),
       .etypes = {"buys", "follows"},
       .edge_types = Buffer<std::int32_t>({0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1})});

  REQUIRE(basic.num_nodes() == range.num_nodes());
  REQUIRE(basic.num_edges() == range.num_edges());
  CHECK(basic.node_type_names() == range.node_type_names());

  const auto nodes = iota_ids(range.num_nodes());
  const auto n = nodes.size();
  std::vector<std::int32_t> pa(n), pb(n), ta(n), tb(n);
  std::vector<std::int64_t> la(n), lb(n), qa(n), qb(n);
  range.node_partition(nodes, pa);
  basic.node_partition(nodes, pb);
  CHECK(pa == pb);
  range.node_to_local(nodes, la);
  basic.node_to_local(nodes, lb);
  CHECK(la == lb);
  range.node_to_per_type(nodes, ta, qa);
  basic.node_to_per_type(nodes, tb, qb);
  CHECK(ta == tb);
  CHECK(qa == qb);

  const auto edges = iota_ids(range.num_edges());
  std::vector<std::int32_t> ea(edges.size()), eb(edges.size()), eta(edges.size()),
      etb(edges.size());
  std::vector<std::int64_t> ela(edges.size()), elb(edges.size()), eqa(edges.size()),
      eqb(edges.size());
  range.edge_partition(edges, ea);
  basic.edge_partition(edges, eb);
  CHECK(ea == eb);
  range.edge_to_local(edges, ela);
  basic.edge_to_local(edges, elb);
  CHECK(ela == elb);
  range.edge_to_per_type(edges, eta, eqa);
  basic.edge_to_per_type(edges, etb, eqb);
  CHECK(eta == etb);
  CHECK(eqa == eqb);

  for (std::int32_t p = 0; p < 3; ++p) {
    CHECK(basic.owned_nodes(PartId(p)) == range.owned_nodes(PartId(p)));
    CHECK(basic.owned_edges(PartId(p)) == range.owned_edges(PartId(p)));
    for (std::int32_t t = 0; t < 2; ++t) {
      CHECK(basic.owned_nodes(PartId(p), NodeType(t)) == range.owned_nodes(PartId(p), NodeType(t)));
      CHECK(basic.num_owned_edges(PartId(p), EdgeType(t)) ==
            range.num_owned_edges(PartId(p), EdgeType(t)));
    }
  }
  for (std::int32_t t = 0; t < 2; ++t) {
    const auto per = iota_ids(range.num_nodes(NodeType(t)));
    std::vector<std::int64_t> ga(per.size()), gb(per.size());
    range.per_type_to_node(NodeType(t), per, ga);
    basic.per_type_to_node(NodeType(t), per, gb);
    CHECK(ga == gb);
  }
}

TEST_CASE("basic book numbers local IDs by rank within a scattered partition", "[partition]") {
  const BasicPartitionBook b(2, Buffer<std::int32_t>({1, 0, 1, 1, 0}),
                             Buffer<std::int32_t>({0, 1}));
  const auto ids = iota_ids(5);
  std::vector<std::int64_t> local(5);
  b.node_to_local(ids, local);
  CHECK(local == std::vector<std::int64_t>{0, 0, 1, 2, 1});
  CHECK(b.owned_nodes(PartId(1)) == std::vector<std::int64_t>{0, 2, 3});
  const auto view = b.owned_nodes_view(PartId(0));
  CHECK(std::vector<std::int64_t>(view.begin(), view.end()) == std::vector<std::int64_t>{1, 4});
  std::vector<std::int64_t> l{2, 0}, g(2);
  b.node_to_global(PartId(1), l, g);
  CHECK(g == std::vector<std::int64_t>{3, 0});
  CHECK(b.node_type_names() == std::vector<std::string>{"_N"});
}

TEST_CASE("basic book shares an int32 partition array and narrows an int64 one", "[partition]") {
  Buffer<std::int32_t> part({0, 1, 1, 0});
  const BasicPartitionBook b(2, part, Buffer<std::int32_t>({1}));
  CHECK(b.node_part().data() == part.data());
  const BasicPartitionBook copy = b;
  CHECK(copy.node_part().data() == part.data());

  const BasicPartitionBook wide(2, Buffer<std::int64_t>({0, 1, 1, 0}), Buffer<std::int64_t>({1}));
  CHECK(wide.owned_nodes(PartId(1)) == b.owned_nodes(PartId(1)));
}

TEST_CASE("basic book rejects partition and type entries out of range", "[partition]") {
  CHECK_THROWS_WITH(BasicPartitionBook(2, Buffer<std::int32_t>({0, 2}), Buffer<std::int32_t>()),
                    Catch::Contains("node_part[1]") && Catch::Contains("2"));
  CHECK_THROWS_AS(BasicPartitionBook(2, Buffer<std::int64_t>({0, -1}), Buffer<std::int64_t>()),
                  IdOutOfRange);
  CHECK_THROWS_AS(BasicPartitionBook(0, Buffer<std::int32_t>(), Buffer<std::int32_t>()),
                  InvalidArgument);
  CHECK_THROWS_AS(
      BasicPartitionBook(1, Buffer<std::int32_t>({0, 0}), Buffer<std::int32_t>(),
                         {.ntypes = {"a", "b"}, .node_types = Buffer<std::int32_t>({0, 2})}),
      IdOutOfRange);
  CHECK_THROWS_AS(
      BasicPartitionBook(1, Buffer<std::int32_t>({0, 0}), Buffer<std::int32_t>(),
                         {.ntypes = {"a", "b"}, .node_types = Buffer<std::int32_t>({0})}),
      ShapeError);
  CHECK_THROWS_AS(BasicPartitionBook(1, Buffer<std::int32_t>({0, 0}), Buffer<std::int32_t>(),
                                     {.ntypes = {"a", "b"}}),
                  InvalidArgument);
}

TEST_CASE("basic book throws IdOutOfRange naming the kind and the value", "[partition]") {
  const BasicPartitionBook b(2, Buffer<std::int32_t>({1, 0, 1}), Buffer<std::int32_t>({0, 1}));
  std::vector<std::int64_t> bad{0, 3};
  std::vector<std::int64_t> out(2);
  CHECK_THROWS_WITH(b.node_to_local(bad, out), Catch::Contains("node id") && Catch::Contains("3"));
  std::vector<std::int64_t> ebad{2, 0};
  std::vector<std::int32_t> parts(2);
  CHECK_THROWS_WITH(b.edge_partition(ebad, parts),
                    Catch::Contains("edge id") && Catch::Contains("2"));
  std::vector<std::int64_t> local{1};
  std::vector<std::int64_t> g(1);
  CHECK_THROWS_AS(b.node_to_global(PartId(0), local, g), IdOutOfRange);
}

}  // namespace test_partition_basic_partition_book

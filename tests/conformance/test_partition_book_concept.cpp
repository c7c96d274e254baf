#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include "distgraph/partition/basic_partition_book.hpp"
#include "distgraph/partition/concepts.hpp"
#include "distgraph/partition/range_partition_book.hpp"

namespace test_conformance_partition_book_concept {

using namespace distgraph;

namespace {

// One layout for every model: 3 partitions, node types a/b, edge types x/y; partition 1
// owns no type-a nodes. Nodes: p0 = a [0, 2) b [2, 5); p1 = b [5, 9); p2 = a [9, 14)
// b [14, 15). Edges: p0 = x [0, 4) y [4, 5); p1 = x [5, 7); p2 = x [7, 10) y [10, 13).
template <class B>
B make_book();

template <>
RangePartitionBook make_book<RangePartitionBook>() {
  return RangePartitionBook({"a", "b"}, {{2, 3}, {0, 4}, {5, 1}}, {"x", "y"},
                            {{4, 1}, {2, 0}, {3, 3}});
}

template <>
BasicPartitionBook make_book<BasicPartitionBook>() {
  return BasicPartitionBook(
      3, Buffer<std::int32_t>({0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}),
      Buffer<std::int32_t>({0, 0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 2}),
      {.ntypes = {"a", "b"},
       .node_types = Buffer<std::int32_t>({0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1}),
       .etypes = {"x", "y"},
       .edge_types = Buffer<std::int32_t>({0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1})});
}

std::vector<std::int64_t> iota_ids(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

}  // namespace

TEMPLATE_TEST_CASE("partition books satisfy the shared contract on one layout",
                   "[conformance][partition]", RangePartitionBook, BasicPartitionBook) {
  static_assert(PartitionBook<TestType>);
  const TestType book = make_book<TestType>();
  const TestType copy = book;  // copies are cheap and equivalent

  CHECK(book.num_partitions() == 3);
  CHECK(book.num_nodes() == 15);
  CHECK(book.num_edges() == 13);
  CHECK(book.num_node_types() == 2);
  CHECK(book.num_edge_types() == 2);
  CHECK(book.num_nodes(NodeType(0)) == 7);
  CHECK(book.num_edges(EdgeType(1)) == 4);

  SECTION("owned nodes and edges are disjoint, ascending and cover every ID") {
    std::set<std::int64_t> nodes, edges;
    for (std::int32_t p = 0; p < 3; ++p) {
      const auto on = book.owned_nodes(PartId(p));
      const auto oe = book.owned_edges(PartId(p));
      CHECK(std::is_sorted(on.begin(), on.end()));
      CHECK(static_cast<std::int64_t>(on.size()) == book.num_owned_nodes(PartId(p)));
      CHECK(static_cast<std::int64_t>(oe.size()) == book.num_owned_edges(PartId(p)));
      std::int64_t by_type = 0;
      for (std::int32_t t = 0; t < 2; ++t) by_type += book.num_owned_nodes(PartId(p), NodeType(t));
      CHECK(by_type == book.num_owned_nodes(PartId(p)));
      nodes.insert(on.begin(), on.end());
      edges.insert(oe.begin(), oe.end());
    }
    CHECK(static_cast<std::int64_t>(nodes.size()) == book.num_nodes());
    CHECK(static_cast<std::int64_t>(edges.size()) == book.num_edges());
    CHECK(book.num_owned_nodes(PartId(1), NodeType(0)) == 0);
    CHECK(book.owned_nodes(PartId(1), NodeType(0)).empty());
  }

  SECTION("partition and local IDs agree with owned lists and round-trip") {
    for (const bool edges : {false, true}) {
      const auto ids = iota_ids(edges ? book.num_edges() : book.num_nodes());
      std::vector<std::int32_t> parts(ids.size());
      std::vector<std::int64_t> local(ids.size()), back(ids.size());
      if (edges) {
        copy.edge_partition(ids, parts);
        copy.edge_to_local(ids, local);
      } else {
        copy.node_partition(ids, parts);
        copy.node_to_local(ids, local);
      }
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const PartId p(parts[i]);
        const auto owned = edges ? book.owned_edges(p) : book.owned_nodes(p);
        REQUIRE(local[i] < static_cast<std::int64_t>(owned.size()));
        CHECK(owned[static_cast<std::size_t>(local[i])] == ids[i]);
        if (edges)
          book.edge_to_global(p, std::span(&local[i], 1), std::span(&back[i], 1));
        else
          book.node_to_global(p, std::span(&local[i], 1), std::span(&back[i], 1));
      }
      CHECK(back == ids);
    }
    const std::vector<std::int64_t> expected_parts_of{0, 4, 5, 8, 9, 14};
    std::vector<std::int32_t> parts(expected_parts_of.size());
    book.node_partition(expected_parts_of, parts);
    CHECK(parts == std::vector<std::int32_t>{0, 0, 1, 1, 2, 2});
  }

  SECTION("per-type IDs number each type in global order and round-trip") {
    const auto ids = iota_ids(book.num_nodes());
    std::vector<std::int32_t> types(ids.size());
    std::vector<std::int64_t> per(ids.size());
    book.node_to_per_type(ids, types, per);
    CHECK(types == std::vector<std::int32_t>{0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1});
    CHECK(per == std::vector<std::int64_t>{0, 1, 0, 1, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 7});
    for (std::size_t i = 0; i < ids.size(); ++i) {
      std::int64_t g = -1;
      book.per_type_to_node(NodeType(types[i]), std::span(&per[i], 1), std::span(&g, 1));
      CHECK(g == ids[i]);
    }
    const auto eids = iota_ids(book.num_edges());
    std::vector<std::int32_t> et(eids.size());
    std::vector<std::int64_t> ep(eids.size()), eback(eids.size());
    book.edge_to_per_type(eids, et, ep);
    for (std::size_t i = 0; i < eids.size(); ++i)
      book.per_type_to_edge(EdgeType(et[i]), std::span(&ep[i], 1), std::span(&eback[i], 1));
    CHECK(eback == eids);
  }

  SECTION("bad IDs throw IdOutOfRange and bad output spans ShapeError, before writing") {
    std::vector<std::int32_t> parts{-5, -5};
    std::vector<std::int64_t> out{-5, -5};
    std::vector<std::int64_t> bad{1, 15};
    CHECK_THROWS_AS(book.node_partition(bad, parts), IdOutOfRange);
    CHECK_THROWS_WITH(book.node_to_local(bad, out),
                      Catch::Contains("node id") && Catch::Contains("15"));
    std::vector<std::int64_t> ebad{-1, 0};
    CHECK_THROWS_WITH(book.edge_to_local(ebad, out),
                      Catch::Contains("edge id") && Catch::Contains("-1"));
    CHECK(parts == std::vector<std::int32_t>{-5, -5});
    CHECK(out == std::vector<std::int64_t>{-5, -5});
    std::vector<std::int64_t> local{4};
    std::vector<std::int64_t> one(1);
    CHECK_THROWS_AS(book.node_to_global(PartId(1), local, one), IdOutOfRange);
    CHECK_THROWS_AS(book.node_to_global(PartId(3), local, one), IdOutOfRange);
    CHECK_THROWS_AS(book.num_owned_nodes(PartId(-1)), IdOutOfRange);
    CHECK_THROWS_AS(book.per_type_to_node(NodeType(2), local, one), IdOutOfRange);
    std::vector<std::int64_t> per_bad{7};
    CHECK_THROWS_AS(book.per_type_to_node(NodeType(0), per_bad, one), IdOutOfRange);
    std::vector<std::int64_t> ok{0, 1};
    std::vector<std::int32_t> short_parts(1);
    CHECK_THROWS_AS(book.node_partition(ok, short_parts), ShapeError);
  }
}

}  // namespace test_conformance_partition_book_concept

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/type_map.hpp"

namespace test_graph_type_map {

using namespace distgraph;

namespace {

// user: 3 nodes [0, 3), item: 4 nodes [3, 7), tag: 2 nodes [7, 9).
TypeMap three_types() {
  return TypeMap({"user", "item", "tag"}, {3, 4, 2},
                 {{"user", "buys", "item"}, {"item", "has", "tag"}, {"user", "follows", "user"}},
                 {5, 2, 3});
}

}  // namespace

TEST_CASE("each node type owns a contiguous homogeneous ID range in declaration order", "[graph]") {
  const TypeMap t = three_types();
  CHECK(t.num_node_types() == 3);
  CHECK(t.num_nodes() == 9);
  CHECK(t.num_edges() == 10);
  CHECK(t.node_range(t.node_type("item")) == IdRange{3, 7});
  CHECK(t.num_nodes(NodeType(2)) == 2);
  CHECK(t.edge_range(t.edge_type("follows")) == IdRange{7, 10});
  CHECK(t.edge_type(CanonicalEdgeType{"item", "has", "tag"}) == EdgeType(1));
  CHECK(t.node_offsets() == std::vector<std::int64_t>{0, 3, 7, 9});
  CHECK(t.node_type_name(NodeType(1)) == "item");
  CHECK_FALSE(t.is_homogeneous());
}

TEST_CASE("typed and homogeneous node IDs round-trip for three node types", "[graph]") {
  const TypeMap t = three_types();
  for (std::int32_t ty = 0; ty < 3; ++ty) {
    const std::int64_t n = t.num_nodes(NodeType(ty));
    std::vector<std::int64_t> typed(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) typed[static_cast<std::size_t>(i)] = n - 1 - i;
    std::vector<std::int64_t> homo(typed.size());
    t.to_homogeneous(NodeType(ty), typed, homo);
    std::vector<std::int32_t> types_back(typed.size());
    std::vector<std::int64_t> typed_back(typed.size());
    t.to_typed(homo, types_back, typed_back);
    CHECK(typed_back == typed);
    CHECK(types_back == std::vector<std::int32_t>(typed.size(), ty));
  }
  const std::vector<std::int64_t> all{8, 0, 3, 2, 6, 7};
  std::vector<std::int32_t> ty(all.size());
  std::vector<std::int64_t> tw(all.size());
  t.to_typed(all, ty, tw);
  CHECK(ty == std::vector<std::int32_t>{2, 0, 1, 0, 1, 2});
  CHECK(tw == std::vector<std::int64_t>{1, 0, 0, 2, 3, 0});
  std::vector<std::int64_t> eh(2);
  t.edge_to_homogeneous(EdgeType(2), std::vector<std::int64_t>{0, 2}, eh);
  CHECK(eh == std::vector<std::int64_t>{7, 9});
  std::vector<std::int32_t> et(2);
  std::vector<std::int64_t> ew(2);
  t.edge_to_typed(eh, et, ew);
  CHECK(et == std::vector<std::int32_t>{2, 2});
  CHECK(ew == std::vector<std::int64_t>{0, 2});
}

TEST_CASE("the homogeneous map is the one-type case with DGL's default names", "[graph]") {
  const TypeMap t = TypeMap::homogeneous(10, 20);
  CHECK(t.is_homogeneous());
  CHECK(t.node_type_names() == std::vector<std::string>{"_N"});
  CHECK(t.edge_types().front() == CanonicalEdgeType{"_N", "_E", "_N"});
  std::vector<std::int64_t> out(2);
  t.to_homogeneous(t.node_type("_N"), std::vector<std::int64_t>{4, 9}, out);
  CHECK(out == std::vector<std::int64_t>{4, 9});
}

TEST_CASE("unknown type names and out-of-range IDs name the type at fault", "[graph]") {
  const TypeMap t = three_types();
  CHECK_THROWS_AS(t.node_type("movie"), InvalidArgument);
  CHECK_THROWS_WITH(t.node_type("movie"), Catch::Matchers::Contains("'movie'"));
  CHECK_THROWS_AS(t.edge_type("likes"), InvalidArgument);
  CHECK_THROWS_WITH(t.edge_type("likes"), Catch::Matchers::Contains("'likes'"));
  std::vector<std::int64_t> out(1);
  try {
    t.to_homogeneous(t.node_type("tag"), std::vector<std::int64_t>{2}, out);
    FAIL("expected IdOutOfRange");
  } catch (const IdOutOfRange& e) {
    CHECK(e.subject() == "node type 'tag'");
    CHECK(e.value() == 2);
    CHECK(e.upper() == 2);
  }
  CHECK_THROWS_AS(t.validate_node_ids(NodeType(0), std::vector<std::int64_t>{0, 3}), IdOutOfRange);
  CHECK_NOTHROW(t.validate_node_ids(NodeType(0), std::vector<std::int64_t>{0, 2}));
  const std::vector<std::int64_t> edge_five{5};
  CHECK_THROWS_AS(t.validate_edge_ids(EdgeType(0), edge_five), IdOutOfRange);
  CHECK_THROWS_WITH(t.validate_edge_ids(EdgeType(0), edge_five),
                    Catch::Matchers::Contains("('user', 'buys', 'item')"));
  std::vector<std::int32_t> ty(1);
  std::vector<std::int64_t> tw(1);
  CHECK_THROWS_AS(t.to_typed(std::vector<std::int64_t>{9}, ty, tw), IdOutOfRange);
  CHECK_THROWS_AS(t.to_typed(std::vector<std::int64_t>{1, 2}, ty, tw), ShapeError);
  CHECK_THROWS_AS(t.node_range(NodeType(3)), IdOutOfRange);
  CHECK_THROWS_AS(TypeMap({"a"}, {1}, {{"a", "r", "b"}}, {0}), InvalidArgument);
  CHECK_THROWS_AS(TypeMap({"a", "a"}, {1, 1}, {{"a", "r", "a"}}, {0}), InvalidArgument);
  CHECK_THROWS_AS(TypeMap({"a"}, {1, 2}, {{"a", "r", "a"}}, {0}), ShapeError);
  CHECK_THROWS_AS(TypeMap({"a"}, {-1}, {{"a", "r", "a"}}, {0}), InvalidArgument);
}

TEST_CASE("a typed graph keeps each edge type's edges in its own edge-ID range", "[graph]") {
  const TypeMap t = three_types();
  // Edges grouped by type: buys (user->item), has (item->tag), follows (user->user).
  const std::vector<std::int64_t> src{0, 0, 1, 2, 0, 3, 6, 1, 1, 2};
  const std::vector<std::int64_t> dst{3, 3, 4, 6, 5, 7, 8, 0, 0, 2};
  const Coo coo{9, Buffer<std::int64_t>(src), Buffer<std::int64_t>(dst)};
  const Graph plain = build_graph(coo, t);
  CHECK(plain.types.num_edges() == 10);
  const Graph g = build_graph(coo, t, {.remove_self_loops = true, .remove_duplicates = true});
  // buys loses a duplicate (0->3), follows loses a duplicate (1->0) and a self loop (2->2).
  CHECK(g.types.num_edges(EdgeType(0)) == 4);
  CHECK(g.types.num_edges(EdgeType(1)) == 2);
  CHECK(g.types.num_edges(EdgeType(2)) == 1);
  CHECK(g.num_edges() == 7);
  const Coo back = g.to_coo();
  for (std::int32_t e = 0; e < 3; ++e) {
    const auto& c = g.types.edge_type(EdgeType(e));
    const IdRange sr = g.types.node_range(g.types.node_type(c.src_type));
    const IdRange dr = g.types.node_range(g.types.node_type(c.dst_type));
    const IdRange er = g.types.edge_range(EdgeType(e));
    for (std::int64_t i = er.begin; i < er.end; ++i) {
      CHECK(back.src[static_cast<std::size_t>(i)] >= sr.begin);
      CHECK(back.src[static_cast<std::size_t>(i)] < sr.end);
      CHECK(back.dst[static_cast<std::size_t>(i)] >= dr.begin);
      CHECK(back.dst[static_cast<std::size_t>(i)] < dr.end);
    }
  }
  CHECK(back.src[6] == 1);
  CHECK(back.dst[6] == 0);
}

TEST_CASE("typed graph building rejects edges outside their types' node ranges", "[graph]") {
  const TypeMap t = three_types();
  std::vector<std::int64_t> src{0, 0, 1, 2, 0, 3, 6, 1, 1, 2};
  std::vector<std::int64_t> dst{3, 3, 4, 6, 5, 7, 8, 0, 0, 2};
  dst[1] = 1;  // buys must end at an item
  const Coo coo{9, Buffer<std::int64_t>(src), Buffer<std::int64_t>(dst)};
  CHECK_THROWS_AS(build_graph(coo, t), IdOutOfRange);
  CHECK_THROWS_WITH(build_graph(coo, t),
                    Catch::Matchers::Contains("dst of edge type ('user', 'buys', 'item')"));
  dst[1] = 3;
  const Coo ok{9, Buffer<std::int64_t>(src), Buffer<std::int64_t>(dst)};
  CHECK_THROWS_AS(build_graph(ok, t, {.symmetrize = true}), InvalidArgument);
  CHECK_THROWS_AS(build_graph(ok, TypeMap::homogeneous(9, 3)), ShapeError);
}

}  // namespace test_graph_type_map

// PartitionSite: what a loaded partition offers samplers (edge types by position, typed
// node and edge data, in-degrees, original IDs).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/type_map.hpp"
#include "distgraph/partition/partition_graph.hpp"
#include "distgraph/server/partition_site.hpp"
#include "distgraph/storage/in_memory_storage.hpp"
#include "support/temp_dir.hpp"

namespace test_server_partition_site {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

/// 40 papers and 30 authors; edge types author:writes:paper, paper:cites:paper and
/// paper:written_by:author, 150 random edges each (input edges grouped by type).
Graph typed_random_graph() {
  const std::int64_t papers = 40, authors = 30, per_type = 150;
  std::mt19937_64 rng(7);
  std::vector<std::int64_t> src, dst;
  auto add = [&](std::int64_t s0, std::int64_t ns, std::int64_t d0, std::int64_t nd) {
    for (std::int64_t i = 0; i < per_type; ++i) {
      src.push_back(s0 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(ns)));
      dst.push_back(d0 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(nd)));
    }
  };
  add(papers, authors, 0, papers);
  add(0, papers, 0, papers);
  add(0, papers, papers, authors);
  TypeMap types({"paper", "author"}, {papers, authors},
                {{"author", "writes", "paper"},
                 {"paper", "cites", "paper"},
                 {"paper", "written_by", "author"}},
                {per_type, per_type, per_type});
  return build_graph(Coo{papers + authors, Buffer<std::int64_t>(std::move(src)),
                         Buffer<std::int64_t>(std::move(dst))},
                     std::move(types), BuildOptions{.num_threads = 1});
}

/// typed_random_graph, written in two partitions under `dir`.
Graph partition_typed_graph(const TempDir& dir) {
  Graph g = typed_random_graph();
  partition_graph(g, "g", 2, dir.path(),
                  {.method = PartMethod::random, .seed = 1, .num_threads = 1});
  return g;
}

/// Partition `p` of a random homogeneous graph of 60 nodes and 300 edges in two
/// partitions, written under `dir` by the first call.
Partition random_partition(const TempDir& dir, int p) {
  if (std::filesystem::exists(dir / "g.json")) return load_partition(dir / "g.json", p);
  std::mt19937_64 rng(11);
  std::vector<std::int64_t> src, dst;
  for (int i = 0; i < 300; ++i) {
    src.push_back(static_cast<std::int64_t>(rng() % 60));
    dst.push_back(static_cast<std::int64_t>(rng() % 60));
  }
  const Graph g = build_graph(
      Coo{60, Buffer<std::int64_t>(std::move(src)), Buffer<std::int64_t>(std::move(dst))},
      BuildOptions{.num_threads = 1});
  partition_graph(g, "g", 2, dir.path(),
                  {.method = PartMethod::random, .seed = 3, .num_threads = 1});
  return load_partition(dir / "g.json", p);
}

/// Tensor `stored` of `rows` x `cols` values, value i = f(i), in `storage`.
template <class T, class F>
void put(InMemoryStorage& storage, const std::string& stored, std::int64_t rows, std::int64_t cols,
         F f) {
  std::vector<T> values(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = f(static_cast<std::int64_t>(i));
  storage.create({stored, dtype_of<T>, rows, cols}, std::as_bytes(std::span(values)));
}

using Site = PartitionSite<AnyPartitionBook, InMemoryStorage>;

}  // namespace

TEST_CASE("a partition site gives int64 and float node data by local node, zero for halo nodes",
          "[server]") {
  TempDir dir;
  for (int p = 0; p < 2; ++p) {
    const Partition part = random_partition(dir, p);
    auto storage = std::make_shared<InMemoryStorage>();
    const std::int64_t owned = part.num_inner_nodes;
    put<std::int64_t>(*storage, "node:rank", owned, 1,
                      [&](std::int64_t i) { return part.nid[static_cast<std::size_t>(i)] * 10; });
    put<float>(*storage, "node:score", owned, 2,
               [](std::int64_t i) { return 0.5f * static_cast<float>(i); });
    Site site(part, part.book, storage);
    CHECK(site.num_owned_nodes() == owned);
    REQUIRE(owned < site.view().num_rows());  // the test needs halo nodes

    const SiteValues<std::int64_t> rank = site.node_values<std::int64_t>("rank");
    const SiteValues<float> score = site.node_values<float>("score");
    REQUIRE(rank.size() == site.view().num_rows());
    REQUIRE(score.size() == site.view().num_rows());
    CHECK(rank.cols() == 1);
    CHECK(score.cols() == 2);
    for (std::int64_t v = 0; v < site.view().num_rows(); ++v) {
      const bool mine = v < owned;
      REQUIRE(rank[v] == (mine ? part.nid[static_cast<std::size_t>(v)] * 10 : 0));
      REQUIRE(score.row(v)[0] == (mine ? 0.5f * static_cast<float>(2 * v) : 0.0f));
      REQUIRE(score.row(v)[1] == (mine ? 0.5f * static_cast<float>(2 * v + 1) : 0.0f));
    }
  }
}

TEST_CASE("a partition site refuses node data of another dtype or name, naming the tensor",
          "[server]") {
  TempDir dir;
  const Partition part = random_partition(dir, 0);
  auto storage = std::make_shared<InMemoryStorage>();
  put<std::int64_t>(*storage, "node:rank", part.num_inner_nodes, 1,
                    [](std::int64_t i) { return i; });
  Site site(part, part.book, storage);
  CHECK_THROWS_AS(site.node_values<float>("rank"), DTypeError);
  CHECK_THROWS_WITH(site.node_values<float>("rank"),
                    Catch::Matchers::StartsWith("node data 'rank': dtype int64") &&
                        Catch::Matchers::Contains("float32"));
  CHECK_THROWS_AS(site.node_values<std::int64_t>("missing"), NotFound);
  CHECK_THROWS_WITH(site.node_values<std::int64_t>("missing"),
                    Catch::Matchers::StartsWith("node data 'missing': "));
  CHECK_THROWS_WITH(site.edge_values<std::int64_t>("rank"),
                    Catch::Matchers::StartsWith("edge data 'rank': "));
  // Without a storage (a trainer's co-located site) there is no data to read.
  Site bare(part, part.book, nullptr);
  CHECK_THROWS_AS(bare.node_values<std::int64_t>("rank"), InvalidArgument);
  // Also where a sampler reads it, inside cached() (which records what it reads).
  CHECK_THROWS_AS(bare.cached("bare",
                              [&] {
                                return std::static_pointer_cast<const void>(
                                    std::make_shared<const std::int64_t>(
                                        bare.node_values<std::int64_t>("rank")[0]));
                              }),
                  InvalidArgument);
}

TEST_CASE("a partition site gives edge data of any dtype by edge position", "[server]") {
  TempDir dir;
  const Partition part = random_partition(dir, 1);
  auto storage = std::make_shared<InMemoryStorage>();
  const std::int64_t owned = part.num_inner_edges;
  put<std::int64_t>(*storage, "edge:id2", owned, 2, [](std::int64_t i) { return i; });
  put<float>(*storage, "edge:w", owned, 1,
             [](std::int64_t i) { return 1.0f + static_cast<float>(i); });
  Site site(part, part.book, storage);
  const SiteValues<std::int64_t> ids = site.edge_values<std::int64_t>("id2");
  REQUIRE(ids.size() == site.view().num_edges());
  const auto& pos_of = site.edge_positions();
  REQUIRE(static_cast<std::int64_t>(pos_of.size()) == owned);
  for (std::size_t l = 0; l < pos_of.size(); ++l) {
    REQUIRE(ids.row(pos_of[l])[0] == static_cast<std::int64_t>(2 * l));
    REQUIRE(ids.row(pos_of[l])[1] == static_cast<std::int64_t>(2 * l + 1));
  }
  // The float32 reader every weighted sampler uses agrees with the typed one.
  const Buffer<float> w = site.edge_values_by_position("w");
  const SiteValues<float> typed = site.edge_values<float>("w");
  REQUIRE(w.size() == typed.values().size());
  CHECK(std::equal(w.begin(), w.end(), typed.values().begin()));
  CHECK_THROWS_AS(site.edge_values_by_position("id2"), DTypeError);
}

TEST_CASE("a partition site's in-degrees and original IDs are its partition's", "[server]") {
  TempDir dir;
  for (int p = 0; p < 2; ++p) {
    const Partition part = random_partition(dir, p);
    Site site(part, part.book, nullptr);
    const Buffer<std::int64_t> deg = site.in_degrees();
    REQUIRE(static_cast<std::int64_t>(deg.size()) == part.graph.num_rows);
    for (std::int64_t v = 0; v < part.graph.num_rows; ++v)
      REQUIRE(deg[static_cast<std::size_t>(v)] ==
              part.graph.indptr[static_cast<std::size_t>(v + 1)] -
                  part.graph.indptr[static_cast<std::size_t>(v)]);
    const auto orig = site.orig_node_ids();
    REQUIRE(orig.size() == part.orig_nid.size());
    CHECK(std::equal(orig.begin(), orig.end(), part.orig_nid.begin()));
  }
}

TEST_CASE("a partition site makes cached node-derived data again after the node data changes",
          "[server]") {
  TempDir dir;
  const Partition part = random_partition(dir, 0);
  auto storage = std::make_shared<InMemoryStorage>();
  put<std::int64_t>(*storage, "node:rank", part.num_inner_nodes, 1, [](std::int64_t) { return 1; });
  Site site(part, part.book, storage);
  auto first_of = [&] {
    auto made = site.cached("first", [&] {
      return std::static_pointer_cast<const void>(
          std::make_shared<const std::int64_t>(site.node_values<std::int64_t>("rank")[0]));
    });
    return *static_cast<const std::int64_t*>(made.get());
  };
  CHECK(first_of() == 1);
  const std::vector<std::int64_t> row0 = {0};
  const std::int64_t seven = 7;
  storage->write_rows("node:rank", row0, std::as_bytes(std::span(&seven, 1)));
  CHECK(first_of() == 7);
}

TEST_CASE("a partition site of a typed partition gives the edge type of every edge position",
          "[server]") {
  TempDir dir;
  const Graph g = partition_typed_graph(dir);
  const auto& off = g.types.edge_offsets();
  for (int p = 0; p < 2; ++p) {
    const Partition part = load_partition(dir / "g.json", p);
    PartitionSite<AnyPartitionBook, InMemoryStorage> site(part, part.book, nullptr);
    CHECK(site.num_edge_types() == 3);
    const auto types = site.edge_types_by_position();
    REQUIRE(types.size() == part.eid.size());
    REQUIRE(types.size() == static_cast<std::size_t>(site.view().num_edges()));
    // Each position's type is the type of the input edge it holds.
    for (std::size_t i = 0; i < types.size(); ++i) {
      const auto want =
          std::upper_bound(off.begin(), off.end(), part.orig_eid[i]) - off.begin() - 1;
      REQUIRE(types[i] == want);
    }
  }
}

TEST_CASE("a partition site gives typed node data at the local IDs of its type's nodes",
          "[server]") {
  TempDir dir;
  partition_typed_graph(dir);
  for (int p = 0; p < 2; ++p) {
    const Partition part = load_partition(dir / "g.json", p);
    // author/score of the partition's k-th author is k + 1 (authors are node type 1).
    const auto authors = part.book.owned_nodes(PartId(p), NodeType(1));
    REQUIRE(!authors.empty());
    auto storage = std::make_shared<InMemoryStorage>();
    put<float>(*storage, "node:author/score", static_cast<std::int64_t>(authors.size()), 1,
               [](std::int64_t i) { return static_cast<float>(i + 1); });
    Site site(part, part.book, storage);
    const SiteValues<float> score = site.node_values<float>("author/score");
    REQUIRE(score.size() == site.view().num_rows());
    std::size_t k = 0;
    for (std::int64_t v = 0; v < site.view().num_rows(); ++v) {
      const bool author = k < authors.size() &&
                          part.nid[static_cast<std::size_t>(v)] == authors[k] &&
                          v < part.num_inner_nodes;
      REQUIRE(score[v] == (author ? static_cast<float>(++k) : 0.0f));
    }
    CHECK(k == authors.size());
  }
}

TEST_CASE("a partition site of a homogeneous partition has one edge type and no type array",
          "[server]") {
  const Graph g = build_graph(Coo{4, Buffer<std::int64_t>(std::vector<std::int64_t>{0, 1, 2, 3}),
                                  Buffer<std::int64_t>(std::vector<std::int64_t>{1, 2, 3, 0})},
                              BuildOptions{.num_threads = 1});
  TempDir dir;
  partition_graph(g, "g", 2, dir.path(),
                  {.method = PartMethod::random, .seed = 1, .num_threads = 1});
  const Partition part = load_partition(dir / "g.json", 0);
  PartitionSite<AnyPartitionBook, InMemoryStorage> site(part, part.book, nullptr);
  CHECK(site.num_edge_types() == 1);
  CHECK(site.edge_types_by_position().empty());
}

}  // namespace test_server_partition_site

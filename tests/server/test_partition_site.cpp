// PartitionSite: what a loaded partition offers samplers (edge types by position).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
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

}  // namespace

TEST_CASE("a partition site of a typed partition gives the edge type of every edge position",
          "[server]") {
  const Graph g = typed_random_graph();
  TempDir dir;
  partition_graph(g, "g", 2, dir.path(),
                  {.method = PartMethod::random, .seed = 1, .num_threads = 1});
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

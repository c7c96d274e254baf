// 64-bit IDs end to end where a graph of 2^31 nodes cannot be held: a partition of a graph
// of 2^32 + 16 nodes (its partition 1 written, 16 owned nodes, halos from partition 0) and
// a chunked graph of 2^33 nodes, both written and read through the real writers and
// readers. Every node ID, edge ID, range and per-type ID past 2^31 must come back whole.
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "distgraph/io/chunked.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/partition/partition_config.hpp"
#include "distgraph/partition/partition_graph.hpp"
#include "support/temp_dir.hpp"

namespace test_partition_ids_past_2_31 {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

constexpr std::int64_t k2_31 = std::int64_t{1} << 31;
constexpr std::int64_t k2_32 = std::int64_t{1} << 32;

// Nodes: partition 0 holds users [0, 3 * 2^30) and items [3 * 2^30, 2^32); partition 1
// users [2^32, 2^32 + 6) and items [2^32 + 6, 2^32 + 16). Edges (users buy items):
// partition 0 [0, 2^31 + 40), partition 1 [2^31 + 40, 2^31 + 64).
constexpr std::int64_t kUsers0 = 3 * (std::int64_t{1} << 30);
constexpr std::int64_t kFirst1 = k2_32, kOwned1 = 16, kUsers1 = 6;
constexpr std::int64_t kNodes = k2_32 + kOwned1;
constexpr std::int64_t kEdges0 = k2_31 + 40, kEdges = k2_31 + 64;
constexpr std::int64_t kOwnedEdges1 = kEdges - kEdges0;

/// Partition 1 as the writer gets it: local nodes (owned, then halo users 7 and 2^31 + 5
/// and halo item 3 * 2^30 + 9 of partition 0) and the in-edges of the owned items.
struct PartOne {
  std::vector<std::int64_t> nid, orig_nid, indptr{0}, src_local, eid, orig_eid;
  std::vector<float> item_feat;  ///< 2 columns per owned item
};

PartOne part_one() {
  PartOne p;
  for (std::int64_t i = 0; i < kOwned1; ++i) p.nid.push_back(kFirst1 + i);
  for (const std::int64_t h : {std::int64_t{7}, k2_31 + 5, kUsers0 + 9}) p.nid.push_back(h);
  for (std::size_t i = 0; i < p.nid.size(); ++i)  // input IDs: distinct, past 2^31
    p.orig_nid.push_back(k2_31 + 1 + 3 * static_cast<std::int64_t>(i) * (1 << 20));
  // Items (local rows 6..15) each buy-from 2 or 3 users: owned ones and the two halo users.
  const std::int64_t users[] = {0, 16, 3, 17, 5};
  std::int64_t e = 0;
  for (std::int64_t row = 0; row < static_cast<std::int64_t>(p.nid.size()); ++row) {
    const bool item = row >= kUsers1 && row < kOwned1;
    for (std::int64_t k = 0; item && k < (row < 10 ? 3 : 2); ++k, ++e) {
      p.src_local.push_back(users[(row + k) % 5]);
      p.eid.push_back(kEdges0 + e);
      p.orig_eid.push_back(kEdges - 1 - e);
    }
    p.indptr.push_back(e);
  }
  REQUIRE(e == kOwnedEdges1);
  for (std::int64_t i = 0; i < kOwned1 - kUsers1; ++i) {
    p.item_feat.push_back(static_cast<float>(i) + 0.5f);
    p.item_feat.push_back(-static_cast<float>(i));
  }
  return p;
}

PartitionConfig config_at(const std::filesystem::path& path) {
  PartitionConfig c;
  c.path = path;
  c.graph_name = "big";
  c.part_method = "custom";
  c.num_parts = 2;
  c.num_nodes = kNodes;
  c.num_edges = kEdges;
  c.ntypes = {"user", "item"};
  c.etypes = {"user:buys:item"};
  c.node_ranges = {{{0, kUsers0}, {kFirst1, kFirst1 + kUsers1}},
                   {{kUsers0, k2_32}, {kFirst1 + kUsers1, kNodes}}};
  c.edge_ranges = {{{0, kEdges0}, {kEdges0, kEdges}}};
  for (int i = 0; i < 2; ++i) {
    const std::string d = "part" + std::to_string(i);
    c.parts.push_back({d + "/graph", d + "/node_feat", d + "/edge_feat"});
  }
  // Partition 0's files are not written (2^32 nodes); its counts are what they would be.
  c.counts = {{k2_32, 0, kEdges0, kEdges0}, {kOwned1, 3, kOwnedEdges1, kOwnedEdges1}};
  c.node_feats = {{"item/feat", "float32", {(k2_32 - kUsers0) + (kOwned1 - kUsers1), 2}}};
  return c;
}

}  // namespace

TEST_CASE("a partition of 2^32 + 16 nodes keeps every node and edge ID past 2^31", "[partition]") {
  TempDir dir;
  const PartOne p = part_one();
  const PartitionConfig config = config_at(dir / "big.json");
  const auto graph = dir.path() / "part1" / "graph";
  std::filesystem::create_directories(graph);
  std::filesystem::create_directories(dir.path() / "part1" / "node_feat" / "item");
  const detail::GraphFileShape shape{static_cast<std::int64_t>(p.nid.size()), kOwned1,
                                     static_cast<std::int64_t>(p.eid.size())};
  detail::write_partition_graph(
      graph, shape,
      [&](std::int64_t r) {
        return p.indptr[static_cast<std::size_t>(r) + 1] - p.indptr[static_cast<std::size_t>(r)];
      },
      [&](auto&& push) {
        for (std::size_t e = 0; e < p.eid.size(); ++e)
          push(p.src_local[e], p.eid[e], p.orig_eid[e], true);
      },
      [&](std::int64_t i) { return p.nid[static_cast<std::size_t>(i)]; }, p.orig_nid);
  write_npy(dir.path() / "part1" / "node_feat" / "item" / "feat.npy", p.item_feat,
            {kOwned1 - kUsers1, 2});
  write_partition_config(config);

  const Partition part = load_partition(config.path, 1);
  CHECK(part.config.node_ranges == config.node_ranges);
  CHECK(part.config.edge_ranges == config.edge_ranges);
  CHECK(std::vector<std::int64_t>(part.nid.begin(), part.nid.end()) == p.nid);
  CHECK(std::vector<std::int64_t>(part.orig_nid.begin(), part.orig_nid.end()) == p.orig_nid);
  CHECK(std::vector<std::int64_t>(part.eid.begin(), part.eid.end()) == p.eid);
  CHECK(std::vector<std::int64_t>(part.orig_eid.begin(), part.orig_eid.end()) == p.orig_eid);
  CHECK(part.num_inner_nodes == kOwned1);
  CHECK(part.num_inner_edges == kOwnedEdges1);
  const auto* feat = part.node_feats.at("item/feat").data_as<float>();
  CHECK(std::vector<float>(feat, feat + p.item_feat.size()) == p.item_feat);

  const AnyPartitionBook& book = part.book;
  CHECK(book.num_nodes() == kNodes);
  CHECK(book.num_owned_nodes(PartId(0)) == k2_32);
  const std::vector<std::int64_t> ids{7, k2_31 + 5, kUsers0 + 9, k2_32 - 1, k2_32, kNodes - 1};
  std::vector<std::int32_t> parts(ids.size());
  book.node_partition(ids, parts);
  CHECK(parts == std::vector<std::int32_t>{0, 0, 0, 0, 1, 1});
  std::vector<std::int64_t> local(ids.size());
  book.node_to_local(ids, local);
  CHECK(local == std::vector<std::int64_t>{7, k2_31 + 5, kUsers0 + 9, k2_32 - 1, 0, 15});
  // Per-type IDs: partition 1's users follow partition 0's 3 * 2^30 users, its items the
  // 2^30 items of partition 0.
  std::vector<std::int32_t> types(ids.size());
  std::vector<std::int64_t> per_type(ids.size());
  book.node_to_per_type(ids, types, per_type);
  CHECK(types == std::vector<std::int32_t>{0, 0, 1, 1, 0, 1});
  CHECK(per_type == std::vector<std::int64_t>{7, k2_31 + 5, 9, (std::int64_t{1} << 30) - 1, kUsers0,
                                              (std::int64_t{1} << 30) + 9});
  std::vector<std::int64_t> back(1);
  book.per_type_to_node(NodeType(0), std::vector<std::int64_t>{kUsers0 + 3}, back);
  CHECK(back[0] == kFirst1 + 3);
  const std::vector<std::int64_t> edges{0, kEdges0 - 1, kEdges0, kEdges - 1};
  std::vector<std::int32_t> edge_parts(edges.size());
  book.edge_partition(edges, edge_parts);
  CHECK(edge_parts == std::vector<std::int32_t>{0, 0, 1, 1});
  std::vector<std::int64_t> edge_local(edges.size());
  book.edge_to_local(edges, edge_local);
  CHECK(edge_local == std::vector<std::int64_t>{0, kEdges0 - 1, 0, kOwnedEdges1 - 1});
}

TEST_CASE("a chunked graph of 2^33 nodes reads its IDs past 2^31 whole and refuses 2^33",
          "[partition]") {
  TempDir dir;
  const std::int64_t n = std::int64_t{1} << 33;
  std::filesystem::create_directories(dir.path() / "edges");
  const std::vector<std::int64_t> src0{0, k2_31, k2_32 + 1}, dst0{n - 1, k2_31 - 1, 3 * k2_31};
  const std::vector<std::int64_t> src1{n - 2, 5}, dst1{k2_32, n};  // n is one past the end
  write_npy(dir.path() / "edges" / "src-0.npy", src0);
  write_npy(dir.path() / "edges" / "dst-0.npy", dst0);
  write_npy(dir.path() / "edges" / "src-1.npy", src1);
  write_npy(dir.path() / "edges" / "dst-1.npy", dst1);
  const nlohmann::json meta = {
      {"format", chunked_format_name},
      {"version", 1},
      {"graph_name", "big"},
      {"num_nodes", n},
      {"num_edges", 5},
      {"edges",
       {{"chunk_bounds", {0, 3, 5}},
        {"src", {"edges/src-0.npy", "edges/src-1.npy"}},
        {"dst", {"edges/dst-0.npy", "edges/dst-1.npy"}}}},
      {"node_data", {{"chunk_bounds", {0, k2_32 + 7, n}}, {"arrays", nlohmann::json::object()}}}};
  std::ofstream(dir.path() / chunked_metadata_name) << meta.dump();

  const ChunkedGraph g = read_chunked_graph(dir.path());
  CHECK(g.num_nodes == n);
  CHECK(g.node_bounds == std::vector<std::int64_t>{0, k2_32 + 7, n});
  const auto [s, d] = read_edge_chunk(g, 0);
  CHECK(std::vector<std::int64_t>(s.begin(), s.end()) == src0);
  CHECK(std::vector<std::int64_t>(d.begin(), d.end()) == dst0);
  try {
    (void)read_edge_chunk(g, 1);
    FAIL("an ID of 2^33 in a graph of 2^33 nodes was accepted");
  } catch (const IdOutOfRange& e) {
    CHECK_THAT(e.what(), Catch::Contains("dst-1.npy"));
    CHECK_THAT(e.what(), Catch::Contains(std::to_string(n)));
  }
}

}  // namespace test_partition_ids_past_2_31

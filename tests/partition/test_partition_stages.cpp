// partition_graph's stages one by one: assign, relabel, halo, build, measure and publish.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "distgraph/graph/builder.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/partition/partition_graph.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "support/small_hsbm.hpp"
#include "support/temp_dir.hpp"

namespace test_partition_partition_stages {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

/// A directed graph of `n` nodes and `m` random edges (repeats and loops kept).
Graph random_graph(std::int64_t n, std::int64_t m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> node(0, n - 1);
  std::vector<std::int64_t> src, dst;
  for (std::int64_t e = 0; e < m; ++e) {
    src.push_back(node(rng));
    dst.push_back(node(rng));
  }
  return build_graph(
      Coo{n, Buffer<std::int64_t>(std::move(src)), Buffer<std::int64_t>(std::move(dst))});
}

/// A partition per node, dealt by `v * 7 % parts` (every partition non-empty).
std::vector<std::int32_t> dealt(std::int64_t n, std::int64_t parts) {
  std::vector<std::int32_t> part(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v)
    part[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(v * 7 % parts);
  return part;
}

}  // namespace

TEST_CASE("assign_partitions takes a given assignment as is, and deals random ones evenly",
          "[partition]") {
  const Graph g = random_graph(101, 400, 1);
  const auto given = dealt(101, 3);
  const auto a = detail::assign_partitions(g, 3, {.assignment = given}, 0, 1);
  CHECK(a.method == "custom");
  CHECK(a.part == given);
  CHECK(a.metis_edge_cut == -1);
  const auto r = detail::assign_partitions(g, 4, {.method = PartMethod::random, .seed = 5}, 0, 1);
  CHECK(r.method == "random");
  std::vector<std::int64_t> count(4, 0);
  for (auto p : r.part) ++count[static_cast<std::size_t>(p)];
  for (auto c : count) CHECK((c == 25 || c == 26));
  const auto m = detail::assign_partitions(g, 2, {.seed = 1}, 0, 1);
  CHECK(m.method == "metis");
  CHECK(m.metis_edge_cut >= 0);
  CHECK(std::count(m.part.begin(), m.part.end(), 0) > 0);
  CHECK(std::count(m.part.begin(), m.part.end(), 1) > 0);
}

TEST_CASE("relabel gives each partition a contiguous ID range per type, in partition order",
          "[partition]") {
  const HeteroDataset d = distgraph::test::small_hsbm();
  const Graph g = hetero_graph(d);
  const std::int64_t K = 3, n = g.num_nodes(), m = g.num_edges();
  const auto part = dealt(n, K);
  const auto r = detail::relabel(g, part, K, true, true, 2);
  REQUIRE(r.ntypes == g.types.num_node_types());
  REQUIRE(r.node_off.size() == static_cast<std::size_t>(K * r.ntypes + 1));
  CHECK(std::is_sorted(r.node_off.begin(), r.node_off.end()));
  CHECK(r.node_off.front() == 0);
  CHECK(r.node_off.back() == n);
  for (std::int64_t v = 0; v < n; ++v) {
    const auto key =
        part[static_cast<std::size_t>(v)] * r.ntypes + detail::range_of(g.types.node_offsets(), v);
    const auto id = r.new_nid[static_cast<std::size_t>(v)];
    REQUIRE(id >= r.node_off[static_cast<std::size_t>(key)]);
    REQUIRE(id < r.node_off[static_cast<std::size_t>(key) + 1]);
    REQUIRE(r.node_order[static_cast<std::size_t>(id)] == v);
  }
  // Edges go with their destinations, each partition's run again split by edge type.
  for (std::int64_t v = 0; v < n; ++v)
    for (const std::int64_t e : g.in.edges(v)) {
      REQUIRE(r.edge_part[static_cast<std::size_t>(e)] == part[static_cast<std::size_t>(v)]);
      const auto key = part[static_cast<std::size_t>(v)] * r.etypes +
                       detail::range_of(g.types.edge_offsets(), e);
      const auto id = r.global_eid(e);
      REQUIRE(id >= r.edge_off[static_cast<std::size_t>(key)]);
      REQUIRE(id < r.edge_off[static_cast<std::size_t>(key) + 1]);
      REQUIRE(r.edge_order[static_cast<std::size_t>(id)] == e);
    }
  CHECK(r.edge_off.back() == m);
}

TEST_CASE("without relabeling, IDs stay the input IDs and each partition lists its own ascending",
          "[partition]") {
  const Graph g = random_graph(90, 300, 2);
  const auto part = dealt(90, 4);
  const auto r = detail::relabel(g, part, 4, false, true, 1);
  for (std::int64_t v = 0; v < 90; ++v) REQUIRE(r.new_nid[static_cast<std::size_t>(v)] == v);
  CHECK(r.new_eid.empty());
  CHECK(r.global_eid(17) == 17);
  for (std::int64_t p = 0; p < 4; ++p) {
    const auto inner = r.inner_nodes(p);
    CHECK(std::is_sorted(inner.begin(), inner.end()));
    for (auto v : inner) REQUIRE(part[static_cast<std::size_t>(v)] == p);
    const auto owned = r.owned_edges(p);
    CHECK(std::is_sorted(owned.begin(), owned.end()));
    CHECK(static_cast<std::int64_t>(owned.size()) == r.num_owned_edges(p));
    for (auto e : owned) REQUIRE(r.edge_part[static_cast<std::size_t>(e)] == p);
  }
}

TEST_CASE("halos hold exactly the in-neighbours from other partitions up to halo_hops",
          "[partition]") {
  const std::int64_t n = 200;
  const Graph g = random_graph(n, 500, 3);
  const auto part = dealt(n, 3);
  const auto r = detail::relabel(g, part, 3, true, false, 1);
  for (int hops = 1; hops <= 3; ++hops) {
    for (std::int64_t p = 0; p < 3; ++p) {
      const auto inner = r.inner_nodes(p);
      std::vector<std::int64_t> local_of(static_cast<std::size_t>(n), -1), local_nodes;
      const std::size_t edge_rows = detail::gather_halo(g, inner, hops, r, local_of, local_nodes);
      // Level by level, from the graph itself: each level's in-neighbours not seen yet.
      std::set<std::int64_t> seen(inner.begin(), inner.end());
      std::vector<std::int64_t> level(inner.begin(), inner.end()), expected = level;
      std::size_t expected_rows = expected.size();
      for (int h = 1; h <= hops && !level.empty(); ++h) {
        expected_rows = expected.size();
        std::vector<std::int64_t> next;
        for (auto v : level)
          for (auto u : g.in.neighbors(v))
            if (seen.insert(u).second) next.push_back(u);
        if (h == 1)
          for (auto u : next) REQUIRE(part[static_cast<std::size_t>(u)] != p);
        std::sort(next.begin(), next.end(), [&](std::int64_t a, std::int64_t b) {
          return r.new_nid[static_cast<std::size_t>(a)] < r.new_nid[static_cast<std::size_t>(b)];
        });
        expected.insert(expected.end(), next.begin(), next.end());
        level = next;
      }
      REQUIRE(local_nodes == expected);
      CHECK(edge_rows == expected_rows);
      for (std::size_t i = 0; i < local_nodes.size(); ++i)
        REQUIRE(local_of[static_cast<std::size_t>(local_nodes[i])] == static_cast<std::int64_t>(i));
    }
  }
}

TEST_CASE("build_partition writes its nodes, halo and owned edges, and leaves its scratch clean",
          "[partition]") {
  TempDir tmp;
  const std::int64_t n = 120;
  const Graph g = random_graph(n, 600, 4);
  const auto part = dealt(n, 2);
  const PartitionOptions opts{.halo_hops = 2};
  const TensorList none;
  const auto in = detail::check_partition_input(g, "g", 2, opts, none, none);
  const auto r = detail::relabel(g, part, 2, true, false, 1);
  const detail::PartitionJob job{g, opts, none, none, in, r, tmp.path()};
  std::vector<std::int64_t> local_of(static_cast<std::size_t>(n), -1), local_nodes;
  const PartitionStats st = detail::build_partition(job, 1, local_of, local_nodes);
  CHECK(std::all_of(local_of.begin(), local_of.end(), [](std::int64_t x) { return x == -1; }));
  const auto dir = tmp / "part1" / "graph";
  const auto nid = read_npy_as<std::int64_t>(dir / "nid.npy");
  const auto orig = read_npy_as<std::int64_t>(dir / "orig_nid.npy");
  const auto indptr = read_npy_as<std::int64_t>(dir / "indptr.npy");
  const auto inner_edge = read_npy_as<bool>(dir / "inner_edge.npy");
  REQUIRE(static_cast<std::int64_t>(nid.size()) == st.inner_nodes + st.halo_nodes);
  REQUIRE(st.inner_nodes == static_cast<std::int64_t>(r.inner_nodes(1).size()));
  std::int64_t owned_in_degree = 0;
  for (std::int64_t i = 0; i < st.inner_nodes; ++i) {
    const auto v = orig[static_cast<std::size_t>(i)];
    REQUIRE(part[static_cast<std::size_t>(v)] == 1);
    REQUIRE(nid[static_cast<std::size_t>(i)] == r.new_nid[static_cast<std::size_t>(v)]);
    owned_in_degree += g.in.degree(v);
  }
  CHECK(st.inner_edges == owned_in_degree);
  CHECK(indptr[static_cast<std::size_t>(st.inner_nodes)] == owned_in_degree);
  CHECK(indptr[indptr.size() - 1] == st.local_edges);
  CHECK(std::count(inner_edge.begin(), inner_edge.end(), true) == owned_in_degree);
}

TEST_CASE("measure_partitions counts cross edges and each class per partition", "[partition]") {
  // 0 -> 1 -> 2 -> 3 and 3 -> 0: partitions {0, 1} and {2, 3}, so two edges cross.
  const Graph g = build_graph(Coo{4, Buffer<std::int64_t>(std::vector<std::int64_t>{0, 1, 2, 3}),
                                  Buffer<std::int64_t>(std::vector<std::int64_t>{1, 2, 3, 0})});
  const std::vector<std::int32_t> part{0, 0, 1, 1};
  const std::vector<std::int64_t> classes{0, 1, 1, 1};
  PartitionResult result;
  result.parts.resize(2);
  result.parts[0].inner_nodes = result.parts[1].inner_nodes = 2;
  detail::CheckedInput in;
  in.classes = classes;
  in.num_classes = 2;
  detail::measure_partitions(g, part, in, result);
  CHECK(result.cross_edges == 2);
  CHECK(result.parts[0].class_counts == std::vector<std::int64_t>{1, 1});
  CHECK(result.parts[1].class_counts == std::vector<std::int64_t>{0, 2});
  CHECK(result.node_balance == 1.0);
  CHECK(result.class_balance[0] == 2.0);
}

TEST_CASE("a new partition removes a stale config and staging first, and publishes it last",
          "[partition]") {
  namespace fs = std::filesystem;
  TempDir tmp;
  const fs::path out = tmp / "out";
  fs::create_directories(out / (staging_folder_prefix("g") + "12345"));
  write_file_durably((out / "g.json").string(), "{}");
  detail::clear_for_new_partition(out, "g");
  CHECK_FALSE(fs::exists(out / "g.json"));
  CHECK_FALSE(fs::exists(out / (staging_folder_prefix("g") + "12345")));

  PartitionConfig c;
  c.path = out / "g.json";
  c.graph_name = "g";
  c.node_ranges = c.edge_ranges = {{{0, 0}}};
  {
    const detail::StagingFolder staging(out / (staging_folder_prefix("g") + "1"));
    fs::create_directories(staging.path() / "part0");
    // A missing item fails the move: the config, written last, is not written at all.
    CHECK_THROWS_AS(detail::publish_partition(staging.path(), out, {"part0", "part1"}, c), IoError);
    CHECK(fs::exists(out / "part0"));
    CHECK_FALSE(fs::exists(out / "g.json"));
    fs::create_directories(staging.path() / "part1");
    detail::publish_partition(staging.path(), out, {"part1"}, c);
    CHECK(fs::exists(out / "part1"));
    CHECK(fs::exists(out / "g.json"));
  }
  // The staging folder goes with everything still in it.
  CHECK_FALSE(fs::exists(out / (staging_folder_prefix("g") + "1")));
}

TEST_CASE("check_data_rows finds each tensor's type and refuses rows of the wrong count",
          "[partition]") {
  const HeteroDataset d = distgraph::test::small_hsbm();
  const Graph g = hetero_graph(d);
  const TensorList data = hetero_node_data(d);
  const auto types = detail::check_data_rows(g, data, true);
  REQUIRE(types.size() == data.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto& name = data[i].first;
    CHECK(g.types.node_type_names()[static_cast<std::size_t>(types[i])] ==
          name.substr(0, name.find('/')));
  }
  TensorList wrong;
  wrong.emplace_back("x", HostTensor::from(Buffer<float>(std::vector<float>(3, 1.0f))));
  CHECK_THROWS_AS(detail::check_data_rows(g, wrong, true), ShapeError);
}

TEST_CASE("write_partition_graph pads indptr past the edge rows and keeps the edges in order",
          "[partition]") {
  TempDir tmp;
  // 3 local nodes (2 own, 1 halo without edges); 3 edges, the first 2 owned.
  const std::vector<std::int64_t> degree{2, 1, 0}, nid{10, 11, 40}, orig{5, 6, 7};
  const std::vector<std::int64_t> src{1, 2, 0}, eid{20, 21, 90}, input_eid{3, 4, 8};
  detail::write_partition_graph(
      tmp.path(), {.num_local = 3, .num_inner = 2, .local_edges = 3},
      [&](std::int64_t r) { return degree[static_cast<std::size_t>(r)]; },
      [&](auto&& push) {
        for (std::size_t e = 0; e < 3; ++e) push(src[e], eid[e], input_eid[e], e < 2);
      },
      [&](std::int64_t i) { return nid[static_cast<std::size_t>(i)]; }, orig);
  auto read = [&](const char* file) {
    const auto b = read_npy_as<std::int64_t>(tmp / file);
    return std::vector<std::int64_t>(b.begin(), b.end());
  };
  CHECK(read("indptr.npy") == std::vector<std::int64_t>{0, 2, 3, 3});
  CHECK(read("indices.npy") == src);
  CHECK(read("eid.npy") == eid);
  CHECK(read("orig_eid.npy") == input_eid);
  CHECK(read("nid.npy") == nid);
  CHECK(read("orig_nid.npy") == orig);
  const auto inner_edge = read_npy_as<bool>(tmp / "inner_edge.npy");
  const auto inner_node = read_npy_as<bool>(tmp / "inner_node.npy");
  CHECK(std::vector<bool>(inner_edge.begin(), inner_edge.end()) ==
        std::vector<bool>{true, true, false});
  CHECK(std::vector<bool>(inner_node.begin(), inner_node.end()) ==
        std::vector<bool>{true, true, false});
}

}  // namespace test_partition_partition_stages

// partition_graph + load_partition: ownership, halos, books, round trips, balance, bad input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <variant>

#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "support/temp_dir.hpp"

namespace test_partition_partition_graph {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

Dataset small_sbm(std::int64_t n = 600, std::uint64_t seed = 3) {
  SbmOptions o;
  o.num_nodes = n;
  o.num_classes = 4;
  o.avg_degree = 8;
  o.feat_dim = 5;
  o.seed = seed;
  return sbm_dataset(o);
}

/// Checks the invariants every partition folder must satisfy against its input.
void check_partitions(const Dataset& d, const std::filesystem::path& config, int halo_hops) {
  const Graph g = dataset_graph(d);
  const PartitionConfig c = read_partition_config(config);
  std::vector<int> node_owned(static_cast<std::size_t>(d.num_nodes), 0);
  std::vector<int> edge_owned(static_cast<std::size_t>(d.num_edges()), 0);
  std::vector<std::int64_t> new_of_orig(static_cast<std::size_t>(d.num_nodes), -1);
  for (std::int64_t p = 0; p < c.num_parts; ++p) {
    const Partition part = load_partition(config, p);
    const auto L = part.graph.num_rows;
    for (std::int64_t i = 0; i < part.num_inner_nodes; ++i) {
      node_owned[static_cast<std::size_t>(part.orig_nid[static_cast<std::size_t>(i)])]++;
      new_of_orig[static_cast<std::size_t>(part.orig_nid[static_cast<std::size_t>(i)])] =
          part.nid[static_cast<std::size_t>(i)];
    }
    // Every local edge is an input edge with the right endpoints.
    for (std::int64_t r = 0; r < L; ++r) {
      for (std::int64_t k = part.graph.indptr[static_cast<std::size_t>(r)];
           k < part.graph.indptr[static_cast<std::size_t>(r) + 1]; ++k) {
        const auto e = part.orig_eid[static_cast<std::size_t>(k)];
        const auto src = part.orig_nid[static_cast<std::size_t>(
            part.graph.indices[static_cast<std::size_t>(k)])];
        const auto dst = part.orig_nid[static_cast<std::size_t>(r)];
        REQUIRE(d.src[static_cast<std::size_t>(e)] == src);
        REQUIRE(d.dst[static_cast<std::size_t>(e)] == dst);
        REQUIRE(part.inner_edge[static_cast<std::size_t>(k)] == (r < part.num_inner_nodes));
        if (part.inner_edge[static_cast<std::size_t>(k)]) edge_owned[static_cast<std::size_t>(e)]++;
      }
    }
    // Halo = exactly the nodes within halo_hops in-hops of the owned nodes.
    std::set<std::int64_t> expect(part.orig_nid.begin(),
                                  part.orig_nid.begin() + part.num_inner_nodes);
    std::set<std::int64_t> frontier = expect;
    for (int h = 0; h < halo_hops; ++h) {
      std::set<std::int64_t> next;
      for (auto v : frontier)
        for (auto u : g.in_neighbors(v))
          if (!expect.count(u)) next.insert(u);
      expect.insert(next.begin(), next.end());
      frontier = next;
    }
    std::set<std::int64_t> got(part.orig_nid.begin(), part.orig_nid.end());
    REQUIRE(got == expect);
    REQUIRE(static_cast<std::int64_t>(got.size()) == L);  // no local node twice
    // Owned node rows carry the input's features and labels.
    const auto& feat = part.node_feats.at("feat");
    const float* f = feat.data_as<float>("feat");
    const std::int64_t* lab = part.node_feats.at("label").data_as<std::int64_t>("label");
    for (std::int64_t i = 0; i < part.num_inner_nodes; ++i) {
      const auto v = static_cast<std::size_t>(part.orig_nid[static_cast<std::size_t>(i)]);
      REQUIRE(lab[i] == d.label[v]);
      for (std::int64_t k = 0; k < d.feat_dim; ++k)
        REQUIRE(f[i * d.feat_dim + k] ==
                d.feat[v * static_cast<std::size_t>(d.feat_dim) + static_cast<std::size_t>(k)]);
    }
    // The book agrees with the files: owned nodes map to p and to their local index.
    part.book.visit(
        [&](const auto& book) {
          std::vector<std::int64_t> ids(part.nid.begin(), part.nid.begin() + part.num_inner_nodes);
          std::vector<std::int32_t> parts(ids.size());
          std::vector<std::int64_t> local(ids.size());
          book.node_partition(ids, parts);
          book.node_to_local(ids, local);
          for (std::size_t i = 0; i < ids.size(); ++i) {
            REQUIRE(parts[i] == p);
            REQUIRE(local[i] == static_cast<std::int64_t>(i));
          }
          std::vector<std::int64_t> halo(part.nid.begin() + part.num_inner_nodes, part.nid.end());
          std::vector<std::int32_t> hp(halo.size());
          book.node_partition(halo, hp);
          for (auto q : hp) REQUIRE(q != p);
        });
  }
  CHECK(std::all_of(node_owned.begin(), node_owned.end(), [](int k) { return k == 1; }));
  CHECK(std::all_of(edge_owned.begin(), edge_owned.end(), [](int k) { return k == 1; }));
  std::set<std::int64_t> new_ids(new_of_orig.begin(), new_of_orig.end());
  CHECK(static_cast<std::int64_t>(new_ids.size()) == d.num_nodes);
  CHECK(*new_ids.begin() == 0);
}

}  // namespace

TEST_CASE("METIS partitions own every node and edge once, with correct halos and features",
          "[partition]") {
  TempDir tmp;
  const Dataset d = small_sbm();
  auto r = partition_dataset(d, "sbm", 3, tmp.path(), {.method = PartMethod::metis, .seed = 1});
  CHECK(r.config.part_method == "metis");
  CHECK(r.metis_edge_cut >= 0);
  CHECK(r.cross_edges > 0);
  check_partitions(d, tmp / "sbm.json", 1);
}

TEST_CASE("random partitions without relabeling write node_map.npy and satisfy the invariants",
          "[partition]") {
  TempDir tmp;
  const Dataset d = small_sbm();
  partition_dataset(d, "g", 4, tmp.path(),
                    {.method = PartMethod::random, .relabel = false, .seed = 5});
  CHECK(std::filesystem::exists(tmp / "node_map.npy"));
  CHECK(std::filesystem::exists(tmp / "edge_map.npy"));
  const Partition p0 = load_partition(tmp / "g.json", 0);
  CHECK(p0.book.get_if<BasicPartitionBook>() != nullptr);
  // Without relabeling global IDs are input IDs.
  for (std::size_t i = 0; i < p0.nid.size(); ++i) CHECK(p0.nid[i] == p0.orig_nid[i]);
  check_partitions(d, tmp / "g.json", 1);
}

TEST_CASE("two halo hops hold the two-hop in-neighbourhood", "[partition]") {
  TempDir tmp;
  const Dataset d = small_sbm(300);
  partition_dataset(d, "g", 2, tmp.path(), {.method = PartMethod::metis, .halo_hops = 2});
  check_partitions(d, tmp / "g.json", 2);
}

TEST_CASE("random partitioning is reproducible from its seed", "[partition]") {
  TempDir a, b, c;
  const Dataset d = small_sbm();
  const PartitionOptions o1{.method = PartMethod::random, .relabel = false, .seed = 11};
  const PartitionOptions o2{.method = PartMethod::random, .relabel = false, .seed = 12};
  partition_dataset(d, "g", 3, a.path(), o1);
  partition_dataset(d, "g", 3, b.path(), o1);
  partition_dataset(d, "g", 3, c.path(), o2);
  auto map = [](const TempDir& t) {
    auto buf = read_npy_as<std::int32_t>(t / "node_map.npy");
    return std::vector<std::int32_t>(buf.begin(), buf.end());
  };
  CHECK(map(a) == map(b));
  CHECK(map(a) != map(c));
}

TEST_CASE("a user-supplied assignment is used as given", "[partition]") {
  TempDir tmp;
  const Dataset d = small_sbm(200);
  std::vector<std::int32_t> assign(200);
  for (std::size_t v = 0; v < assign.size(); ++v) assign[v] = static_cast<std::int32_t>(v % 2);
  auto r = partition_dataset(d, "g", 2, tmp.path(), {.assignment = assign});
  CHECK(r.config.part_method == "custom");
  const Partition p1 = load_partition(tmp / "g.json", 1);
  for (std::int64_t i = 0; i < p1.num_inner_nodes; ++i)
    CHECK(p1.orig_nid[static_cast<std::size_t>(i)] % 2 == 1);
}

TEST_CASE("balancing train nodes and edges measurably improves their balance", "[partition]") {
  // R-MAT is skewed: plain METIS balances node counts but not edges; a train set drawn
  // from the low IDs (the dense corner) is unevenly spread without a constraint.
  RmatOptions ro;
  ro.scale = 12;
  ro.edge_factor = 8;
  ro.seed = 3;
  const Graph g = build_graph(
      rmat(ro), {.remove_self_loops = true, .remove_duplicates = true, .symmetrize = true});
  std::vector<std::int64_t> cls(static_cast<std::size_t>(g.num_nodes()), 1);
  for (std::int64_t v = 0; v < g.num_nodes(); v += 7) cls[static_cast<std::size_t>(v)] = 0;
  TempDir a, b, c;
  auto plain = partition_graph(g, "g", 4, a.path(), {.method = PartMethod::metis, .seed = 1});
  auto by_class = partition_graph(g, "g", 4, b.path(),
                                  {.method = PartMethod::metis, .balance_ntypes = cls, .seed = 1});
  auto by_edges = partition_graph(g, "g", 4, c.path(),
                                  {.method = PartMethod::metis, .balance_edges = true, .seed = 1});
  // The class counts of the unconstrained run, measured the same way.
  std::vector<std::int64_t> train(4, 0);
  for (std::int64_t p = 0; p < 4; ++p) {
    const Partition part = load_partition(a / "g.json", p);
    for (std::int64_t i = 0; i < part.num_inner_nodes; ++i)
      train[static_cast<std::size_t>(p)] +=
          cls[static_cast<std::size_t>(part.orig_nid[static_cast<std::size_t>(i)])] == 0;
  }
  const double mean = static_cast<double>(train[0] + train[1] + train[2] + train[3]) / 4;
  const double plain_train_balance =
      static_cast<double>(*std::max_element(train.begin(), train.end())) / mean;
  REQUIRE(by_class.class_balance.size() == 2);
  CHECK(by_class.class_balance[0] <= 1.05);
  CHECK(by_class.class_balance[0] < plain_train_balance);
  CHECK(by_edges.edge_balance < plain.edge_balance);
  INFO("edge balance plain " << plain.edge_balance << " with balance_edges "
                             << by_edges.edge_balance);
}

TEST_CASE("partition_graph rejects bad arguments before touching the output",
          "[partition][bad_input]") {
  TempDir tmp;
  const Dataset d = small_sbm(100);
  partition_dataset(d, "g", 2, tmp.path(), {.method = PartMethod::random});
  const auto before = std::filesystem::last_write_time(tmp / "g.json");
  CHECK_THROWS_AS(partition_dataset(d, "g", 0, tmp.path()), InvalidArgument);
  CHECK_THROWS_AS(partition_dataset(d, "g", 101, tmp.path()), InvalidArgument);
  std::vector<std::int32_t> bad(100, 0);
  bad[7] = 2;
  CHECK_THROWS_AS(partition_dataset(d, "g", 2, tmp.path(), {.assignment = bad}), IdOutOfRange);
  CHECK_THROWS_AS(partition_dataset(d, "g", 2, tmp.path(), {.halo_hops = 0}), InvalidArgument);
  CHECK(std::filesystem::last_write_time(tmp / "g.json") == before);
  CHECK(load_partition(tmp / "g.json", 1).num_inner_nodes > 0);
}

namespace {
void rewrite_config(const std::filesystem::path& p, const std::function<void(nlohmann::json&)>& f) {
  nlohmann::json j;
  std::ifstream(p) >> j;
  f(j);
  std::ofstream(p) << j.dump();
}
}  // namespace

TEST_CASE("load_partition names the key or file when a partition disagrees with its config",
          "[partition][bad_input]") {
  TempDir tmp;
  const Dataset d = small_sbm(200);
  partition_dataset(d, "g", 2, tmp.path(), {.method = PartMethod::random, .seed = 2});
  const auto cfg = tmp / "g.json";
  const std::string good = [&] {
    std::ifstream in(cfg);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  auto restore = [&] { std::ofstream(cfg) << good; };

  SECTION("a missing config is an IoError") {
    CHECK_THROWS_AS(load_partition(tmp / "nope.json", 0), IoError);
  }
  SECTION("a config that is not JSON") {
    std::ofstream(cfg) << "{ not json";
    CHECK_THROWS_WITH(load_partition(cfg, 0), Catch::Contains("not valid JSON"));
    restore();
    CHECK_NOTHROW(load_partition(cfg, 0));
  }
  SECTION("a missing key is named") {
    rewrite_config(cfg, [](nlohmann::json& j) { j.erase("num_parts"); });
    CHECK_THROWS_WITH(load_partition(cfg, 0), Catch::Contains("missing key 'num_parts'"));
    restore();
    CHECK_NOTHROW(load_partition(cfg, 0));
  }
  SECTION("a key of the wrong type is named") {
    rewrite_config(cfg, [](nlohmann::json& j) { j["num_nodes"] = "many"; });
    CHECK_THROWS_WITH(load_partition(cfg, 0), Catch::Contains("'num_nodes'"));
    restore();
    CHECK_NOTHROW(load_partition(cfg, 0));
  }
  SECTION("node ranges that do not cover the nodes") {
    rewrite_config(cfg, [](nlohmann::json& j) { j["node_map"]["_N"][1][1] = 150; });
    CHECK_THROWS_AS(load_partition(cfg, 0), FormatError);
    restore();
    CHECK_NOTHROW(load_partition(cfg, 0));
  }
  SECTION("a partition id beyond num_parts") {
    CHECK_THROWS_AS(load_partition(cfg, 2), IdOutOfRange);
  }
  SECTION("a truncated array file") {
    const auto f = tmp / "part0" / "graph" / "indices.npy";
    std::filesystem::resize_file(f, std::filesystem::file_size(f) - 8);
    CHECK_THROWS_AS(load_partition(cfg, 0), FormatError);
    CHECK_NOTHROW(load_partition(cfg, 1));
  }
  SECTION("an array of the wrong length") {
    std::vector<std::int64_t> short_nid{0, 1, 2};
    write_npy(tmp / "part1" / "graph" / "nid.npy", short_nid);
    CHECK_THROWS_WITH(load_partition(cfg, 1), Catch::Contains("nid.npy"));
  }
  SECTION("an array of the wrong dtype") {
    const auto eid = read_npy_as<std::int64_t>(tmp / "part0" / "graph" / "eid.npy");
    std::vector<std::int32_t> narrow(eid.begin(), eid.end());
    write_npy(tmp / "part0" / "graph" / "eid.npy", narrow);
    CHECK_THROWS_AS(load_partition(cfg, 0), DTypeError);
  }
  SECTION("local source IDs out of range") {
    auto idx = read_npy_as<std::int64_t>(tmp / "part0" / "graph" / "indices.npy");
    std::vector<std::int64_t> v(idx.begin(), idx.end());
    v[0] = 1 << 30;
    write_npy(tmp / "part0" / "graph" / "indices.npy", v);
    CHECK_THROWS_AS(load_partition(cfg, 0), IdOutOfRange);
  }
  SECTION("a feature file with the wrong row count") {
    std::vector<std::int64_t> lab(3, 0);
    write_npy(tmp / "part0" / "node_feat" / "label.npy", lab);
    CHECK_THROWS_WITH(load_partition(cfg, 0), Catch::Contains("label.npy"));
  }
}

}  // namespace test_partition_partition_graph

// `distgraph chunk` and `mpirun -n 2 distgraph partition --distributed`, run as users run
// them: the partitions checked against the whole graph, bad chunks, a rank killed mid-run,
// and training on the result.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/io/chunked.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/hetero_dataset.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "support/child_process.hpp"
#include "support/program_run.hpp"
#include "support/small_hsbm.hpp"
#include "support/temp_dir.hpp"

namespace test_mpi_partition_mpi {

using namespace std::chrono_literals;
using distgraph::test::ChildProcess;
using distgraph::test::ProgramRun;
using distgraph::test::TempDir;
namespace fs = std::filesystem;

#ifdef DISTGRAPH_CLI

namespace {

/// Open MPI's mpirun (openmpi-bin), or "" when it is not installed.
std::string mpirun_path() {
  for (const char* p : {"/usr/bin/mpirun", "/usr/local/bin/mpirun"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

/// True when this distgraph can partition over MPI (built with distgraph::mpi).
bool distributed_available() {
  static const bool ok = [] {
    const ProgramRun r = distgraph::test::run_program(
        {DISTGRAPH_CLI, "partition", "--distributed", "--input", "rmat:4"}, 60s);
    return r.output.find("built without MPI") == std::string::npos;
  }();
  return ok;
}

/// The --partitioner values this build has: ptscotch, and zoltan where built with Zoltan.
std::vector<std::string> partitioners() {
#if DISTGRAPH_TEST_HAVE_ZOLTAN
  return {"ptscotch", "zoltan"};
#else
  return {"ptscotch"};
#endif
}

#define REQUIRE_MPI()                                                                         \
  if (mpirun_path().empty() || !distributed_available()) {                                    \
    WARN("SKIPPED: no mpirun, or this distgraph was built without MPI and 64-bit PT-Scotch"); \
    return;                                                                                   \
  }

/// mpirun -n `ranks` distgraph partition --distributed ARGS (as root where tests run as
/// root; --oversubscribe: more ranks than cores).
std::vector<std::string> mpirun_partition(int ranks, const std::vector<std::string>& args) {
  std::vector<std::string> a{
      mpirun_path(), "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
      "-n",          std::to_string(ranks), DISTGRAPH_CLI,     "partition", "--distributed"};
  a.insert(a.end(), args.begin(), args.end());
  return a;
}

ProgramRun run(const std::vector<std::string>& argv, std::chrono::milliseconds limit = 240s) {
  return distgraph::test::run_program(argv, limit);
}

distgraph::Dataset small_sbm(std::int64_t nodes = 1500) {
  distgraph::SbmOptions o;
  o.num_nodes = nodes;
  o.num_classes = 4;
  o.avg_degree = 8;
  o.feat_dim = 6;
  o.seed = 11;
  return distgraph::sbm_dataset(o);
}

/// `ds` written as a dataset folder and chunked into `chunks`; returns the chunked folder.
fs::path chunked_copy(const distgraph::Dataset& ds, const fs::path& tmp, int chunks) {
  distgraph::write_dataset(tmp / "dataset", ds);
  const ProgramRun r = run({DISTGRAPH_CLI, "chunk", (tmp / "dataset").string(), "--chunks",
                            std::to_string(chunks), "--out", (tmp / "chunks").string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return tmp / "chunks";
}

/// Checks the partition at `config` against the whole graph `ds`: every node owned once,
/// every edge owned once by its destination's partition with its input endpoints, each
/// partition's local nodes exactly those within halo_hops in-hops of its own, rows closer
/// than halo_hops holding all their in-edges, and node data rows those of the input IDs.
void check_against_graph(const fs::path& config, const distgraph::Dataset& ds, int halo_hops) {
  using distgraph::read_npy_as;
  const auto cfg = distgraph::read_partition_config(config);
  const std::int64_t n = ds.num_nodes, m = ds.num_edges();
  REQUIRE(cfg.num_nodes == n);
  REQUIRE(cfg.num_edges == m);
  std::vector<std::vector<std::int64_t>> in(static_cast<std::size_t>(n));
  for (std::int64_t e = 0; e < m; ++e)
    in[static_cast<std::size_t>(ds.dst[static_cast<std::size_t>(e)])].push_back(e);
  std::vector<int> node_seen(static_cast<std::size_t>(n), 0),
      edge_seen(static_cast<std::size_t>(m), 0);
  std::int64_t cross = 0;
  // New edge IDs: each owned edge's, by input edge ID; each halo edge's, to match.
  std::vector<std::int64_t> new_eid(static_cast<std::size_t>(m), -1);
  std::vector<std::pair<std::int64_t, std::int64_t>> halo_eids;  // (input ID, new ID)
  for (std::int64_t p = 0; p < cfg.num_parts; ++p) {
    // load_partition validates the files against the config (what servers do).
    const distgraph::Partition part = distgraph::load_partition(config, p);
    const fs::path dir = cfg.resolve(cfg.parts[static_cast<std::size_t>(p)].part_graph);
    const auto orig = read_npy_as<std::int64_t>(dir / "orig_nid.npy");
    const auto nid = read_npy_as<std::int64_t>(dir / "nid.npy");
    const auto indptr = read_npy_as<std::int64_t>(dir / "indptr.npy");
    const auto indices = read_npy_as<std::int64_t>(dir / "indices.npy");
    const auto orig_eid = read_npy_as<std::int64_t>(dir / "orig_eid.npy");
    const auto eid = read_npy_as<std::int64_t>(dir / "eid.npy");
    const auto inner_edge = read_npy_as<bool>(dir / "inner_edge.npy");
    // A partition's IDs: its range of the first type to the end of its range of the last.
    const auto first = cfg.node_ranges.front()[static_cast<std::size_t>(p)].first;
    const auto last = cfg.node_ranges.back()[static_cast<std::size_t>(p)].second;
    const auto efirst = cfg.edge_ranges.front()[static_cast<std::size_t>(p)].first;
    const auto elast = cfg.edge_ranges.back()[static_cast<std::size_t>(p)].second;
    const std::int64_t inner = last - first;
    REQUIRE(part.num_inner_nodes == inner);
    // Owned nodes: the partition's range of new IDs, in order.
    for (std::int64_t i = 0; i < inner; ++i) {
      CHECK(nid[static_cast<std::size_t>(i)] == first + i);
      ++node_seen[static_cast<std::size_t>(orig[static_cast<std::size_t>(i)])];
    }
    std::set<std::int64_t> owned(orig.begin(), orig.begin() + inner);
    // Expected local nodes: levels of in-hops from the owned nodes.
    std::map<std::int64_t, int> level;
    for (const auto v : owned) level[v] = 0;
    std::vector<std::int64_t> frontier(owned.begin(), owned.end());
    for (int h = 1; h <= halo_hops; ++h) {
      std::vector<std::int64_t> next;
      for (const auto v : frontier)
        for (const auto e : in[static_cast<std::size_t>(v)]) {
          const auto u = ds.src[static_cast<std::size_t>(e)];
          if (level.emplace(u, h).second) next.push_back(u);
        }
      frontier = std::move(next);
    }
    REQUIRE(orig.size() == level.size());
    std::int64_t expect_edges = 0;
    for (std::size_t i = 0; i < orig.size(); ++i) {
      const auto it = level.find(orig[i]);
      REQUIRE(it != level.end());
      const auto row_edges = indptr[i + 1] - indptr[i];
      if (it->second < halo_hops) {
        CHECK(row_edges == static_cast<std::int64_t>(in[static_cast<std::size_t>(orig[i])].size()));
        expect_edges += row_edges;
      } else {
        CHECK(row_edges == 0);
      }
      // Each local edge joins its input endpoints.
      for (auto k = indptr[i]; k < indptr[i + 1]; ++k) {
        const auto e = orig_eid[static_cast<std::size_t>(k)];
        CHECK(ds.dst[static_cast<std::size_t>(e)] == orig[i]);
        CHECK(ds.src[static_cast<std::size_t>(e)] ==
              orig[static_cast<std::size_t>(indices[static_cast<std::size_t>(k)])]);
        if (!inner_edge[static_cast<std::size_t>(k)])
          halo_eids.emplace_back(e, eid[static_cast<std::size_t>(k)]);
        if (inner_edge[static_cast<std::size_t>(k)]) {
          ++edge_seen[static_cast<std::size_t>(e)];
          new_eid[static_cast<std::size_t>(e)] = eid[static_cast<std::size_t>(k)];
          CHECK(eid[static_cast<std::size_t>(k)] >= efirst);
          CHECK(eid[static_cast<std::size_t>(k)] < elast);
          cross += owned.count(ds.src[static_cast<std::size_t>(e)]) == 0;
        }
      }
    }
    CHECK(static_cast<std::int64_t>(indices.size()) == expect_edges);
    // Node data: the input rows of the owned nodes, in local order.
    if (ds.has_features()) {
      const auto& feat = part.node_feats.at("feat");
      const auto* rows = reinterpret_cast<const float*>(feat.bytes.data());
      for (std::int64_t i = 0; i < inner; ++i)
        for (std::int64_t c = 0; c < ds.feat_dim; ++c)
          REQUIRE(rows[i * ds.feat_dim + c] ==
                  ds.feat[static_cast<std::size_t>(orig[static_cast<std::size_t>(i)] * ds.feat_dim +
                                                   c)]);
    }
  }
  CHECK(std::all_of(node_seen.begin(), node_seen.end(), [](int k) { return k == 1; }));
  CHECK(std::all_of(edge_seen.begin(), edge_seen.end(), [](int k) { return k == 1; }));
  CHECK(cfg.extra["cross_edges"].get<std::int64_t>() == cross);
  // New edge IDs are a permutation of [0, m), and a halo copy of an edge carries its ID.
  std::vector<std::int64_t> sorted(new_eid);
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t e = 0; e < m; ++e) REQUIRE(sorted[static_cast<std::size_t>(e)] == e);
  for (const auto& [e, id] : halo_eids) REQUIRE(new_eid[static_cast<std::size_t>(e)] == id);
}

/// The homogeneous view of `d` that `distgraph chunk` writes (node type t's node i is node
/// node_range(t).begin + i; edge type r's edge i is edge edge_range(r).begin + i), edges only.
distgraph::Dataset homogeneous_view(const distgraph::HeteroDataset& d) {
  distgraph::Dataset ds;
  ds.name = d.name;
  ds.num_nodes = d.num_nodes();
  std::vector<std::int64_t> src, dst;
  for (std::int32_t r = 0; r < d.types.num_edge_types(); ++r) {
    const auto& c = d.types.edge_type(distgraph::EdgeType(r));
    const auto so = d.types.node_range(d.types.node_type(c.src_type)).begin;
    const auto dof = d.types.node_range(d.types.node_type(c.dst_type)).begin;
    for (const auto v : d.src[static_cast<std::size_t>(r)]) src.push_back(v + so);
    for (const auto v : d.dst[static_cast<std::size_t>(r)]) dst.push_back(v + dof);
  }
  ds.src = distgraph::Buffer<std::int64_t>(std::move(src));
  ds.dst = distgraph::Buffer<std::int64_t>(std::move(dst));
  return ds;
}

/// The typed half of the checks on a partition of `d` (check_against_graph does the
/// graph): the config's types are d's; each partition's range of type t holds input nodes
/// of type t; each owned edge's ID lies in its partition's range of its input edge's type;
/// each row's edges are grouped by type in ascending order (what typed samplers expect);
/// each typed node array holds the input rows of the partition's nodes of its type.
void check_types(const fs::path& config, const distgraph::HeteroDataset& d) {
  using distgraph::read_npy_as;
  const auto cfg = distgraph::read_partition_config(config);
  const auto& types = d.types;
  REQUIRE(cfg.ntypes == types.node_type_names());
  REQUIRE(cfg.etypes.size() == static_cast<std::size_t>(types.num_edge_types()));
  for (std::int32_t r = 0; r < types.num_edge_types(); ++r) {
    const auto& c = types.edge_type(distgraph::EdgeType(r));
    CHECK(cfg.etypes[static_cast<std::size_t>(r)] ==
          c.src_type + ":" + c.edge_type + ":" + c.dst_type);
  }
  auto type_of = [](const std::vector<std::int64_t>& off, std::int64_t id) {
    return static_cast<std::size_t>(std::upper_bound(off.begin() + 1, off.end(), id) -
                                    (off.begin() + 1));
  };
  for (std::int64_t p = 0; p < cfg.num_parts; ++p) {
    const auto pi = static_cast<std::size_t>(p);
    const distgraph::Partition part = distgraph::load_partition(config, p);
    const fs::path dir = cfg.resolve(cfg.parts[pi].part_graph);
    const auto orig = read_npy_as<std::int64_t>(dir / "orig_nid.npy");
    const auto orig_eid = read_npy_as<std::int64_t>(dir / "orig_eid.npy");
    const auto eid = read_npy_as<std::int64_t>(dir / "eid.npy");
    const auto indptr = read_npy_as<std::int64_t>(dir / "indptr.npy");
    const auto inner_edge = read_npy_as<bool>(dir / "inner_edge.npy");
    const std::int64_t first = cfg.node_ranges.front()[pi].first;
    for (std::size_t t = 0; t < cfg.ntypes.size(); ++t) {
      const auto [b, e] = cfg.node_ranges[t][pi];
      for (auto id = b; id < e; ++id)
        REQUIRE(type_of(types.node_offsets(), orig[static_cast<std::size_t>(id - first)]) == t);
    }
    for (std::size_t row = 0; row + 1 < indptr.size(); ++row)
      for (auto k = indptr[row]; k < indptr[row + 1]; ++k) {
        const auto r = type_of(types.edge_offsets(), orig_eid[static_cast<std::size_t>(k)]);
        if (k > indptr[row])
          REQUIRE(type_of(types.edge_offsets(), orig_eid[static_cast<std::size_t>(k - 1)]) <= r);
        if (!inner_edge[static_cast<std::size_t>(k)]) continue;
        CHECK(eid[static_cast<std::size_t>(k)] >= cfg.edge_ranges[r][pi].first);
        CHECK(eid[static_cast<std::size_t>(k)] < cfg.edge_ranges[r][pi].second);
      }
    for (std::int32_t t = 0; t < types.num_node_types(); ++t) {
      const auto k = static_cast<std::size_t>(t);
      if (d.feat_dim[k] == 0) continue;
      const std::string name = types.node_type_name(distgraph::NodeType(t)) + "/feat";
      const auto* rows = part.node_feats.at(name).data_as<float>();
      const auto [b, e] = cfg.node_ranges[k][pi];
      const auto tb = types.node_range(distgraph::NodeType(t)).begin;
      for (auto id = b; id < e; ++id)
        for (std::int64_t c = 0; c < d.feat_dim[k]; ++c)
          REQUIRE(rows[(id - b) * d.feat_dim[k] + c] ==
                  d.feat[k][static_cast<std::size_t>(
                      (orig[static_cast<std::size_t>(id - first)] - tb) * d.feat_dim[k] + c)]);
    }
    const auto target = d.target();
    const auto* labels = part.node_feats.at(d.target_ntype + "/label").data_as<std::int64_t>();
    const auto [b, e] = cfg.node_ranges[static_cast<std::size_t>(target.value)][pi];
    const auto tb = types.node_range(target).begin;
    for (auto id = b; id < e; ++id)
      REQUIRE(labels[id - b] ==
              d.label[static_cast<std::size_t>(orig[static_cast<std::size_t>(id - first)] - tb)]);
    for (const auto& [mask, name] : {std::pair{&d.train_mask, "/train_mask"},
                                     {&d.val_mask, "/val_mask"},
                                     {&d.test_mask, "/test_mask"}}) {
      const auto* flags = part.node_feats.at(d.target_ntype + name).data_as<bool>();
      for (auto id = b; id < e; ++id)
        REQUIRE(flags[id - b] ==
                (*mask)[static_cast<std::size_t>(orig[static_cast<std::size_t>(id - first)] - tb)]);
    }
  }
}

/// Mean test accuracy of `distgraph train DATASET --part-config CONFIG` over `seeds`.
double mean_test_accuracy(const std::string& dataset, const fs::path& config,
                          const fs::path& out_root, const std::vector<int>& seeds) {
  double sum = 0;
  for (const int seed : seeds) {
    const fs::path out = out_root / std::to_string(seed);
    const ProgramRun t = run({DISTGRAPH_CLI, "train", dataset, "--part-config", config.string(),
                              "--seed", std::to_string(seed), "--out", out.string()},
                             300s);
    INFO(t.output);
    REQUIRE(t.exit_code == 0);
    std::ifstream in(out / "result.json");
    sum += nlohmann::json::parse(in)["test"].get<double>();
  }
  return sum / static_cast<double>(seeds.size());
}

/// True when this distgraph has `distgraph train` (built with libtorch).
bool can_train() { return run({DISTGRAPH_CLI, "train", "--help"}, 60s).exit_code == 0; }

nlohmann::json last_json_line(const std::string& output) {
  std::istringstream in(output);
  nlohmann::json j;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.front() == '{') j = nlohmann::json::parse(line);
  return j;
}

}  // namespace

TEST_CASE("distgraph chunk writes chunks that read back as the dataset, the metadata last",
          "[mpi][chunk]") {
  const TempDir tmp;
  const auto ds = small_sbm();
  const fs::path chunks = chunked_copy(ds, tmp.path(), 3);
  const auto g = distgraph::read_chunked_graph(chunks);
  CHECK(g.num_edge_chunks() == 3);
  CHECK(g.num_node_chunks() == 3);
  const auto back = distgraph::load_chunked_dataset(chunks);
  CHECK(back.num_nodes == ds.num_nodes);
  CHECK(std::equal(back.src.begin(), back.src.end(), ds.src.begin(), ds.src.end()));
  CHECK(std::equal(back.dst.begin(), back.dst.end(), ds.dst.begin(), ds.dst.end()));
  CHECK(std::equal(back.feat.begin(), back.feat.end(), ds.feat.begin(), ds.feat.end()));
  CHECK(std::equal(back.label.begin(), back.label.end(), ds.label.begin(), ds.label.end()));
  CHECK(std::equal(back.train_mask.begin(), back.train_mask.end(), ds.train_mask.begin(),
                   ds.train_mask.end()));
  CHECK(back.num_classes == ds.num_classes);
  // The built-in SBM graph at a size given on the command line, as sbm_dataset makes it.
  const ProgramRun sbm = run({DISTGRAPH_CLI, "chunk", "sbm", "--sbm-nodes", "700", "--sbm-classes",
                              "3", "--sbm-degree", "6", "--sbm-feat-dim", "4", "--seed", "5",
                              "--chunks", "2", "--out", (tmp / "sbm").string()});
  INFO(sbm.output);
  REQUIRE(sbm.exit_code == 0);
  distgraph::SbmOptions o;
  o.num_nodes = 700;
  o.num_classes = 3;
  o.avg_degree = 6;
  o.feat_dim = 4;
  o.seed = 5;
  const auto want = distgraph::sbm_dataset(o);
  const auto got = distgraph::load_chunked_dataset(tmp / "sbm");
  CHECK(std::equal(got.src.begin(), got.src.end(), want.src.begin(), want.src.end()));
  CHECK(std::equal(got.dst.begin(), got.dst.end(), want.dst.begin(), want.dst.end()));
  CHECK(std::equal(got.feat.begin(), got.feat.end(), want.feat.begin(), want.feat.end()));
  CHECK(got.num_classes == 3);
  // The built-in graph's options with another input: one line, not silently ignored.
  const ProgramRun stray = run({DISTGRAPH_CLI, "chunk", (tmp / "dataset").string(), "--sbm-nodes",
                                "9", "--out", (tmp / "stray").string()});
  CHECK(stray.exit_code == 2);
  CHECK(stray.output.find("--sbm-nodes is an option of the built-in graph") != std::string::npos);
  CHECK(!fs::exists(tmp / "stray"));
}

TEST_CASE("distgraph chunk writes a typed folder as its homogeneous view, types declared",
          "[mpi][chunk]") {
  const TempDir tmp;
  const auto d = distgraph::test::small_hsbm();
  distgraph::write_hetero_dataset(d, tmp / "typed");
  const ProgramRun r = run({DISTGRAPH_CLI, "chunk", (tmp / "typed").string(), "--chunks", "3",
                            "--out", (tmp / "chunks").string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto g = distgraph::read_chunked_graph(tmp / "chunks");
  CHECK(g.typed);
  CHECK(g.types.node_type_names() == d.types.node_type_names());
  CHECK(g.types.edge_types() == d.types.edge_types());
  CHECK(g.types.node_offsets() == d.types.node_offsets());
  CHECK(g.types.edge_offsets() == d.types.edge_offsets());
  const auto view = homogeneous_view(d);
  std::vector<std::int64_t> src, dst;
  for (std::int64_t c = 0; c < g.num_edge_chunks(); ++c) {
    const auto [s, t] = distgraph::read_edge_chunk(g, c);
    src.insert(src.end(), s.begin(), s.end());
    dst.insert(dst.end(), t.begin(), t.end());
  }
  CHECK(std::equal(src.begin(), src.end(), view.src.begin(), view.src.end()));
  CHECK(std::equal(dst.begin(), dst.end(), view.dst.begin(), view.dst.end()));
  // Each typed array reads back as the type's rows, across chunks that hold none of them.
  for (const auto& a : g.node_data) {
    INFO(a.name);
    std::vector<std::byte> rows(static_cast<std::size_t>(a.ids().size()) * a.row_bytes());
    distgraph::read_node_rows(g, a, a.ids().begin, a.ids().end, rows.data());
    const auto t = d.types.node_type(a.name.substr(0, a.name.find('/')));
    CHECK(a.ids() == d.types.node_range(t));
    const std::string what = a.name.substr(a.name.find('/') + 1);
    const void* want =
        what == "feat" ? static_cast<const void*>(d.feat[static_cast<std::size_t>(t.value)].data())
        : what == "label"      ? static_cast<const void*>(d.label.data())
        : what == "train_mask" ? static_cast<const void*>(d.train_mask.data())
        : what == "val_mask"   ? static_cast<const void*>(d.val_mask.data())
                               : static_cast<const void*>(d.test_mask.data());
    CHECK(std::memcmp(rows.data(), want, rows.size()) == 0);
  }
  // Typed metadata that lies: FormatError naming metadata.json and what is wrong.
  const fs::path meta_path = tmp / "chunks" / "metadata.json";
  const auto meta = [&] {
    std::ifstream in(meta_path);
    return nlohmann::json::parse(in);
  }();
  auto expect_refused = [&](nlohmann::json bad, const std::string& needle) {
    INFO(needle);
    std::ofstream(meta_path) << bad.dump();
    try {
      (void)distgraph::read_chunked_graph(tmp / "chunks");
      FAIL("the metadata was accepted");
    } catch (const distgraph::FormatError& e) {
      CHECK_THAT(e.what(), Catch::Contains("metadata.json"));
      CHECK_THAT(e.what(), Catch::Contains(needle));
    }
  };
  {
    auto bad = meta;
    bad["num_nodes_per_type"][0] = bad["num_nodes_per_type"][0].get<std::int64_t>() + 1;
    expect_refused(bad, "add up to");
  }
  {
    auto bad = meta;
    bad["edge_type"][0] = "paper:cites";
    expect_refused(bad, "src:etype:dst");
  }
  {
    auto bad = meta;
    bad["node_data"]["arrays"]["nobody/feat"] = bad["node_data"]["arrays"]["paper/feat"];
    expect_refused(bad, "'nobody' is not a declared node type");
  }
  {
    auto bad = meta;
    bad["node_type"][1] = bad["node_type"][0];
    expect_refused(bad, "declared twice");
  }
  {
    auto bad = meta;
    bad["node_type"][0] = "..";
    expect_refused(bad, "node type '..'");
  }
  {
    auto bad = meta;
    bad["num_nodes_per_type"][0] = -1;
    bad["num_nodes_per_type"][1] = bad["num_nodes_per_type"][1].get<std::int64_t>() + 1 +
                                   meta["num_nodes_per_type"][0].get<std::int64_t>();
    expect_refused(bad, "negative");
  }
  {
    auto bad = meta;
    bad["edge_type"][0] = "paper:writes:nobody";
    expect_refused(bad, "nobody");
  }
  std::ofstream(meta_path) << meta.dump();
  // An edge whose endpoint is not of its edge type's node type: IdOutOfRange naming the
  // chunk file and the type (edge 0 is of the first edge type).
  {
    const fs::path dst0 = tmp / "chunks" / g.dst_files[0];
    const auto keep = distgraph::read_npy_as<std::int64_t>(dst0);
    std::vector<std::int64_t> bad(keep.begin(), keep.end());
    const auto& first = d.types.edge_type(distgraph::EdgeType(0));
    const auto wrong = first.dst_type == d.types.node_type_names()[0] ? 1 : 0;
    bad[0] = d.types.node_range(distgraph::NodeType(wrong)).begin;
    fs::remove(dst0);
    distgraph::write_npy<std::int64_t>(dst0, bad);
    const auto g2 = distgraph::read_chunked_graph(tmp / "chunks");
    try {
      (void)distgraph::read_edge_chunk(g2, 0);
      FAIL("an edge between the wrong node types was accepted");
    } catch (const distgraph::IdOutOfRange& e) {
      CHECK_THAT(e.what(), Catch::Contains("dst-0.npy"));
      CHECK_THAT(e.what(), Catch::Contains(first.dst_type + " node"));
    }
    fs::remove(dst0);
    distgraph::write_npy<std::int64_t>(dst0, std::vector<std::int64_t>(keep.begin(), keep.end()));
  }
  // One process cannot read a typed chunked folder as a homogeneous dataset: one line.
  const ProgramRun single = run({DISTGRAPH_CLI, "partition", "--input", (tmp / "chunks").string(),
                                 "--out", (tmp / "p").string()});
  CHECK(single.exit_code != 0);
  CHECK(single.output.find("typed chunked graph") != std::string::npos);
}

TEST_CASE(
    "mpirun -n 2 partition --distributed: each node and edge owned once, halos and data as the "
    "whole graph says, for PT-Scotch, Zoltan and random, 1 and 2 hops",
    "[mpi][partition]") {
  REQUIRE_MPI();
  const TempDir tmp;
  const auto ds = small_sbm();
  const fs::path chunks = chunked_copy(ds, tmp.path(), 5);
  std::vector<std::tuple<std::string, std::string, int, int>> runs{
      {"metis", "ptscotch", 1, 2}, {"metis", "ptscotch", 2, 3}, {"random", "ptscotch", 1, 4}};
  if (partitioners().size() > 1) runs.emplace_back("metis", "zoltan", 2, 3);
  for (const auto& [method, partitioner, hops, parts] : runs) {
    INFO(method << " (" << partitioner << "), " << hops << " hop(s), " << parts << " parts");
    const fs::path out = tmp / (method + partitioner + std::to_string(hops));
    const ProgramRun r =
        run(mpirun_partition(2, {"--input", chunks.string(), "--parts", std::to_string(parts),
                                 "--out", out.string(), "--method", method, "--partitioner",
                                 partitioner, "--halo-hops", std::to_string(hops), "--json"}));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto summary = last_json_line(r.output);
    CHECK(summary["ranks"] == 2);
    CHECK(summary["method"] == (method == "random" ? "random" : partitioner));
    // The SBM's communities: a minimum-cut partitioner cuts far fewer than random's 1 - 1/K.
    if (method == "metis") CHECK(summary["edge_cut_fraction"].get<double>() < 0.5);
    CHECK(summary["peak_rss_bytes_per_rank"].size() == 2);
    check_against_graph(out / "sbm.json", ds, hops);
  }
}

TEST_CASE("rmat:S generated by 2 and 3 ranks is the graph one process builds from rmat:S",
          "[mpi][partition]") {
  REQUIRE_MPI();
  const TempDir tmp;
  // Scale 17 has 2 IDs per histogram bucket, so the ranks' blocks end on bucket edges that
  // are not every ID (each rank counts what it sends each owner from its buckets).
  for (const auto& [ranks, scale, factor, method] :
       {std::tuple{2, 11, 16, "metis"}, {3, 17, 2, "random"}}) {
    INFO(ranks << " ranks, rmat:" << scale << ":" << factor << ", " << method);
    const std::string name = "rmat" + std::to_string(scale);
    const fs::path out = tmp / name;
    const ProgramRun r = run(mpirun_partition(
        ranks, {"--input", "rmat:" + std::to_string(scale) + ":" + std::to_string(factor),
                "--parts", "2", "--method", method, "--out", out.string(), "--json"}));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    distgraph::RmatOptions o;
    o.scale = scale;
    o.edge_factor = factor;
    distgraph::BuildOptions b;
    b.remove_self_loops = b.remove_duplicates = b.symmetrize = true;
    const distgraph::Graph whole = distgraph::build_graph(distgraph::rmat(o), b);
    std::set<std::pair<std::int64_t, std::int64_t>> expect, got;
    for (std::int64_t v = 0; v < whole.num_nodes(); ++v)
      for (const auto u : whole.in.neighbors(v)) expect.emplace(u, v);
    const auto cfg = distgraph::read_partition_config(out / (name + ".json"));
    CHECK(cfg.num_edges == static_cast<std::int64_t>(expect.size()));
    std::set<std::int64_t> edge_ids;
    for (std::int64_t p = 0; p < 2; ++p) {
      const fs::path dir = out / ("part" + std::to_string(p)) / "graph";
      const auto orig = distgraph::read_npy_as<std::int64_t>(dir / "orig_nid.npy");
      const auto indptr = distgraph::read_npy_as<std::int64_t>(dir / "indptr.npy");
      const auto indices = distgraph::read_npy_as<std::int64_t>(dir / "indices.npy");
      const auto orig_eid = distgraph::read_npy_as<std::int64_t>(dir / "orig_eid.npy");
      const auto inner = distgraph::read_npy_as<bool>(dir / "inner_edge.npy");
      for (std::size_t i = 0; i + 1 < indptr.size(); ++i)
        for (auto k = indptr[i]; k < indptr[i + 1]; ++k)
          if (inner[static_cast<std::size_t>(k)]) {
            got.emplace(orig[static_cast<std::size_t>(indices[static_cast<std::size_t>(k)])],
                        orig[i]);
            edge_ids.insert(orig_eid[static_cast<std::size_t>(k)]);
          }
    }
    CHECK(got == expect);
    // Input edge IDs are 0..m-1, each once.
    CHECK(static_cast<std::int64_t>(edge_ids.size()) == cfg.num_edges);
    CHECK(*edge_ids.rbegin() == cfg.num_edges - 1);
  }
}

TEST_CASE("the ranks' blocks of a skewed graph hold about the same nodes + in-edges",
          "[mpi][partition]") {
  REQUIRE_MPI();
  const TempDir tmp;
  // R-MAT's low IDs are its hubs: blocks of equal node counts give the first rank several
  // times the in-edges of the last.
  distgraph::RmatOptions o;
  o.scale = 13;
  const distgraph::Coo coo = distgraph::rmat(o);
  distgraph::Dataset ds;
  ds.name = "skewed";
  ds.num_nodes = coo.num_nodes;
  ds.src = coo.src;
  ds.dst = coo.dst;
  const fs::path chunks = chunked_copy(ds, tmp.path(), 4);
  const ProgramRun r =
      run(mpirun_partition(2, {"--input", chunks.string(), "--parts", "2", "--method", "random",
                               "--out", (tmp / "p").string(), "--json"}));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto summary = last_json_line(r.output);
  const auto nodes = summary["block_nodes_per_rank"].get<std::vector<std::int64_t>>();
  const auto edges = summary["block_edges_per_rank"].get<std::vector<std::int64_t>>();
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0] + nodes[1] == ds.num_nodes);
  CHECK(edges[0] + edges[1] == ds.num_edges());
  std::int64_t first_half = 0;  // the in-edges an even split gives rank 0
  for (const auto v : ds.dst) first_half += v < ds.num_nodes / 2;
  INFO("even split: " << first_half << " of " << ds.num_edges() << " in-edges on rank 0");
  REQUIRE(first_half > 2 * (ds.num_edges() - first_half));  // the input is skewed
  const double w0 = static_cast<double>(nodes[0] + edges[0]),
               w1 = static_cast<double>(nodes[1] + edges[1]);
  INFO("block weights " << w0 << ", " << w1);
  CHECK(std::max(w0, w1) / std::min(w0, w1) < 1.1);
}

TEST_CASE("one heavy node leaves no rank of a PT-Scotch run empty", "[mpi][partition]") {
  REQUIRE_MPI();
  const TempDir tmp;
  // Node 0 receives 3 edges from every other node, each other node one: balanced on
  // weight alone, the first block would be node 0 and the next rank's block empty.
  distgraph::Dataset star;
  star.name = "star";
  star.num_nodes = 64;
  std::vector<std::int64_t> src, dst;
  for (std::int64_t v = 1; v < 64; ++v) {
    for (int k = 0; k < 3; ++k) src.push_back(v), dst.push_back(0);
    src.push_back(0), dst.push_back(v);
  }
  star.src = distgraph::Buffer<std::int64_t>(std::move(src));
  star.dst = distgraph::Buffer<std::int64_t>(std::move(dst));
  const fs::path chunks = chunked_copy(star, tmp.path(), 2);
  const ProgramRun r = run(mpirun_partition(
      4, {"--input", chunks.string(), "--parts", "2", "--out", (tmp / "p").string(), "--json"}));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto nodes = last_json_line(r.output)["block_nodes_per_rank"].get<std::vector<int>>();
  REQUIRE(nodes.size() == 4);
  for (const int k : nodes) CHECK(k > 0);
  check_against_graph(tmp / "p" / "star.json", star, 1);
}

TEST_CASE(
    "hubs join their neighbours' partitions and the balance holds: nodes by default, "
    "in-edges with --balance-edges",
    "[mpi][partition]") {
  REQUIRE_MPI();
  const TempDir tmp;
  // R-MAT's hubs, and a hub degree low enough that hundreds of nodes are hubs: placed by
  // their neighbours' votes alone they would overfill the partitions those neighbours share.
  for (const auto& partitioner : partitioners()) {
    for (const bool edges : {false, true}) {
      INFO(partitioner << (edges ? ", --balance-edges" : ""));
      const fs::path out = tmp / (partitioner + (edges ? "e" : "n"));
      std::vector<std::string> args{"--input",       "rmat:12",    "--parts",      "4",
                                    "--out",         out.string(), "--hub-degree", "48",
                                    "--partitioner", partitioner,  "--json"};
      if (edges) args.emplace_back("--balance-edges");
      const ProgramRun r = run(mpirun_partition(2, args));
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      std::ifstream in(out / "rmat12.json");
      const auto cfg = nlohmann::json::parse(in);
      REQUIRE(cfg["distgraph"]["distributed"]["hubs"].get<std::int64_t>() > 100);
      // Counted from the partitions' files, not taken from the summary.
      std::vector<std::int64_t> nodes, in_edges;
      for (int p = 0; p < 4; ++p) {
        const fs::path dir = out / ("part" + std::to_string(p)) / "graph";
        const auto inner_node = distgraph::read_npy_as<bool>(dir / "inner_node.npy");
        const auto inner_edge = distgraph::read_npy_as<bool>(dir / "inner_edge.npy");
        nodes.push_back(std::count(inner_node.begin(), inner_node.end(), true));
        in_edges.push_back(std::count(inner_edge.begin(), inner_edge.end(), true));
      }
      const auto n = std::accumulate(nodes.begin(), nodes.end(), std::int64_t{0});
      const auto m = std::accumulate(in_edges.begin(), in_edges.end(), std::int64_t{0});
      CHECK(n == 4096);
      const auto most = [](const std::vector<std::int64_t>& x) {
        return static_cast<double>(*std::max_element(x.begin(), x.end()));
      };
      INFO("nodes per partition " << nodes[0] << " " << nodes[1] << " " << nodes[2] << " "
                                  << nodes[3] << ", in-edges " << in_edges[0] << " " << in_edges[1]
                                  << " " << in_edges[2] << " " << in_edges[3]);
      if (edges) {
        // The partitioner's own slack (3%), and what one hub over it can add.
        CHECK(most(in_edges) / (static_cast<double>(m) / 4) < 1.15);
      } else {
        CHECK(most(nodes) <= std::ceil(1.03 * 4096 / 4));
      }
      // Fewer cut than random (3/4 of all edges) all the same.
      const auto summary = last_json_line(r.output);
      CHECK(summary["edge_cut_fraction"].get<double>() < 0.74);
      // The printed summary says when one partition took most edges (R-MAT 13's node-balanced
      // partitions do, 2.9-3.4x the mean), and only then.
      std::vector<std::string> print_args{"--input", "rmat:13",    "--parts",       "4",
                                          "--out",   out.string(), "--partitioner", partitioner};
      if (edges) print_args.emplace_back("--balance-edges");
      const ProgramRun printed = run(mpirun_partition(2, print_args));
      INFO(printed.output);
      REQUIRE(printed.exit_code == 0);
      const auto at = printed.output.find("balance (max/mean): nodes ");
      REQUIRE(at != std::string::npos);
      const auto edges_at = printed.output.find("edges ", at);
      REQUIRE(edges_at != std::string::npos);
      const double printed_balance = std::stod(printed.output.substr(edges_at + 6, 12));
      // Node-balanced partitions leave the edges uneven (usually 2.9-3.4x; PT-Scotch's
      // threaded phases vary its partition from run to run although it is seeded: 1.82x
      // once, 2026-12-06). Edge-balanced ones even them out.
      if (edges)
        CHECK(printed_balance == Approx(1.0).margin(0.15));
      else
        CHECK(printed_balance > 1.3);
      CHECK((printed.output.find("--balance-edges evens the edges out") != std::string::npos) ==
            (printed_balance > 2));
    }
  }
}

TEST_CASE("Zoltan's partition is the same for the same --seed and another for another",
          "[mpi][partition]") {
  REQUIRE_MPI();
  if (partitioners().size() < 2) {
    WARN("SKIPPED: this distgraph was built without Zoltan (libtrilinos-zoltan-dev)");
    return;
  }
  const TempDir tmp;
  // A chunked folder, not rmat:S, whose graph --seed would change as well.
  const fs::path chunks = chunked_copy(small_sbm(3000), tmp.path(), 4);
  // Each partition's input node IDs, in partition order.
  auto owners = [&](const std::string& seed, const std::string& name) {
    const fs::path out = tmp / name;
    const ProgramRun r =
        run(mpirun_partition(2, {"--input", chunks.string(), "--parts", "3", "--partitioner",
                                 "zoltan", "--seed", seed, "--out", out.string()}));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::vector<std::vector<std::int64_t>> ids;
    for (int p = 0; p < 3; ++p) {
      const fs::path dir = out / ("part" + std::to_string(p)) / "graph";
      const auto orig = distgraph::read_npy_as<std::int64_t>(dir / "orig_nid.npy");
      const auto inner = distgraph::read_npy_as<bool>(dir / "inner_node.npy");
      ids.emplace_back();
      for (std::size_t i = 0; i < orig.size(); ++i)
        if (inner[i]) ids.back().push_back(orig[i]);
    }
    return ids;
  };
  const auto a = owners("7", "a"), b = owners("7", "b"), c = owners("8", "c");
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE(
    "bad chunks fail every rank with an error naming the file, and no partition config "
    "appears",
    "[mpi][bad_input]") {
  REQUIRE_MPI();
  const TempDir tmp;
  const auto ds = small_sbm(600);
  const fs::path chunks = chunked_copy(ds, tmp.path(), 4);
  auto expect_failure = [&](const std::string& what, const std::string& needle) {
    INFO(what);
    const fs::path out = tmp / "out";
    const ProgramRun r = run(
        mpirun_partition(2, {"--input", chunks.string(), "--parts", "2", "--out", out.string()}));
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find(needle) != std::string::npos);
    CHECK(!fs::exists(out / "sbm.json"));
    CHECK(!fs::exists(out / "part0"));
  };
  const fs::path src1 = chunks / "edges" / "src-1.npy";
  const fs::path saved = tmp / "saved.npy";
  fs::copy_file(src1, saved);
  // Missing.
  fs::remove(src1);
  expect_failure("a missing chunk", "src-1.npy");
  // Truncated: the file ends before its header's shape.
  fs::copy_file(saved, src1);
  fs::resize_file(src1, fs::file_size(src1) - 16);
  expect_failure("a truncated chunk", "src-1.npy");
  // An ID outside [0, num_nodes), in the chunk the second rank reads.
  {
    auto s = distgraph::read_npy_as<std::int64_t>(saved);
    std::vector<std::int64_t> bad(s.begin(), s.end());
    bad[3] = ds.num_nodes + 7;
    fs::remove(src1);
    distgraph::write_npy<std::int64_t>(src1, bad);
  }
  expect_failure("an edge ID out of range", "src-1.npy");
  fs::remove(src1);
  fs::copy_file(saved, src1);
  // Counts that disagree: the metadata moves one edge from chunk 1 to chunk 0.
  {
    std::ifstream in(chunks / "metadata.json");
    auto j = nlohmann::json::parse(in);
    j["edges"]["chunk_bounds"][1] = j["edges"]["chunk_bounds"][1].get<std::int64_t>() + 1;
    std::ofstream(chunks / "metadata.json") << j.dump();
  }
  expect_failure("counts that disagree with the chunks", "src-0.npy");
}

TEST_CASE(
    "partition --distributed outside MPI, K above the node count, more ranks than nodes and "
    "an unknown partitioner are one clear line",
    "[mpi][bad_input]") {
  REQUIRE_MPI();
  const TempDir tmp;
  const ProgramRun alone = run({DISTGRAPH_CLI, "partition", "--distributed", "--input", "rmat:8",
                                "--out", (tmp / "p").string()});
  INFO(alone.output);
  CHECK(alone.exit_code == 2);
  CHECK(alone.output.find("mpirun -n P") != std::string::npos);
  CHECK(std::count(alone.output.begin(), alone.output.end(), '\n') == 1);
  // The distributed partitioner's options without --distributed: one line, nothing written.
  for (const std::string option : {"--partitioner", "--hub-degree", "--scotch-strategy"}) {
    const ProgramRun r =
        run({DISTGRAPH_CLI, "partition", "--input", "rmat:8", option,
             option == "--hub-degree" ? "100" : "zoltan", "--out", (tmp / "single").string()});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(option + " is only for --distributed") != std::string::npos);
    CHECK(!fs::exists(tmp / "single"));
  }
  // Refused by every rank: non-zero, the reason given, no config written.
  auto refused = [&](int ranks, const std::string& input, const std::string& parts,
                     const std::string& reason) {
    INFO(ranks << " ranks, " << input << ", " << parts << " parts");
    const ProgramRun r = run(mpirun_partition(
        ranks, {"--input", input, "--parts", parts, "--out", (tmp / "p").string()}));
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find(reason) != std::string::npos);
    CHECK(!fs::exists(tmp / "p" / ("rmat" + input.substr(5) + ".json")));
  };
  refused(2, "rmat:4", "100", "num_parts 100: expected [1, 16]");
  // 2 nodes on 4 ranks: PT-Scotch cannot run with a rank holding none.
  refused(4, "rmat:1", "2", "leave a rank without nodes");
  // A partitioner this program does not know.
  const ProgramRun unknown = run(mpirun_partition(
      2, {"--input", "rmat:4", "--partitioner", "parmetis", "--out", (tmp / "p").string()}));
  INFO(unknown.output);
  CHECK(unknown.exit_code != 0);
  CHECK(unknown.output.find("--partitioner 'parmetis': expected ptscotch or zoltan") !=
        std::string::npos);
  CHECK(!fs::exists(tmp / "p" / "rmat4.json"));
}

TEST_CASE("a rank killed mid-run ends the job non-zero and leaves no partition config",
          "[mpi][fault]") {
  REQUIRE_MPI();
  const TempDir tmp;
  const fs::path out = tmp / "p";
  ChildProcess job(
      mpirun_partition(2, {"--input", "rmat:16", "--parts", "2", "--out", out.string()}));
  // Rank 0 prints a stage's line as it ends: the ranks are past reading and partitioning.
  REQUIRE(job.wait_for_line("read input", 120s));
  // Rank 1: mpirun's child with OMPI_COMM_WORLD_RANK=1.
  pid_t victim = -1;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream status(e.path() / "status");
    std::string line;
    bool child = false;
    while (std::getline(status, line))
      if (line.rfind("PPid:", 0) == 0) child = std::stol(line.substr(5)) == job.pid();
    if (!child) continue;
    std::ifstream environ(e.path() / "environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
    if (env.find(std::string("OMPI_COMM_WORLD_RANK=1") + '\0') != std::string::npos)
      victim = std::stoi(pid);
  }
  REQUIRE(victim > 0);
  REQUIRE(::kill(victim, SIGKILL) == 0);
  const auto st = job.wait(120s);
  INFO(job.output());
  REQUIRE(st.has_value());
  CHECK((!WIFEXITED(*st) || WEXITSTATUS(*st) != 0));
  CHECK(!fs::exists(out / "rmat16.json"));
}

TEST_CASE(
    "mpirun -n 2 partition --distributed of a typed graph: types kept, every node and edge "
    "owned once, typed data in place, for PT-Scotch and random",
    "[mpi][partition][hetero]") {
  REQUIRE_MPI();
  const TempDir tmp;
  const auto d = distgraph::test::small_hsbm();
  distgraph::write_hetero_dataset(d, tmp / "typed");
  const ProgramRun chunk = run({DISTGRAPH_CLI, "chunk", (tmp / "typed").string(), "--chunks", "5",
                                "--out", (tmp / "chunks").string()});
  REQUIRE(chunk.exit_code == 0);
  const auto view = homogeneous_view(d);
  for (const auto& [method, hops, parts] :
       {std::tuple{"metis", 1, 2}, {"random", 2, 3}, {"metis", 1, 3}}) {
    INFO(method << ", " << hops << " hop(s), " << parts << " parts");
    const fs::path out = tmp / (std::string(method) + std::to_string(hops) + std::to_string(parts));
    const ProgramRun r = run(
        mpirun_partition(2, {"--input", (tmp / "chunks").string(), "--parts", std::to_string(parts),
                             "--out", out.string(), "--method", method, "--halo-hops",
                             std::to_string(hops), "--balance-ntypes", "train", "--json"}));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const fs::path config = out / (d.name + ".json");
    check_against_graph(config, view, hops);
    check_types(config, d);
    // --balance-ntypes: every partition has its share of each type and of the training set.
    const auto summary = last_json_line(r.output);
    for (const auto& b : summary["class_balance"]) CHECK(b.get<double>() <= 1.2);
  }
}

TEST_CASE("the typed graph partitioned by 2 ranks trains as a single-process partition does",
          "[mpi][train][hetero]") {
  REQUIRE_MPI();
  if (!can_train()) {
    WARN("SKIPPED: this distgraph was built without libtorch (no `distgraph train`)");
    return;
  }
  const TempDir tmp;
  const ProgramRun chunk =
      run({DISTGRAPH_CLI, "chunk", "hsbm", "--chunks", "4", "--out", (tmp / "chunks").string()});
  REQUIRE(chunk.exit_code == 0);
  const ProgramRun dist = run(mpirun_partition(
      2, {"--input", (tmp / "chunks").string(), "--parts", "2", "--out", (tmp / "dist").string()}));
  INFO(dist.output);
  REQUIRE(dist.exit_code == 0);
  const ProgramRun single = run({DISTGRAPH_CLI, "partition", "--input", "hsbm", "--parts", "2",
                                 "--out", (tmp / "single").string()});
  INFO(single.output);
  REQUIRE(single.exit_code == 0);
  const double dm = mean_test_accuracy("hsbm", tmp / "dist" / "hsbm.json", tmp / "train_dist", {0});
  const double sm =
      mean_test_accuracy("hsbm", tmp / "single" / "hsbm.json", tmp / "train_single", {0});
  std::printf("mpi: hsbm test accuracy: distributed partition %.4f, single-process %.4f\n", dm, sm);
  INFO("distributed partition " << dm << ", single-process " << sm);
  // Paper features alone score near chance (0.25): the typed neighbourhood is what lifts a
  // model past 0.9, so a partition that lost edge types or typed rows would show here.
  CHECK(sm > 0.85);
  CHECK(dm > 0.85);
  CHECK(std::abs(dm - sm) <= 0.03);
}

TEST_CASE("Cora partitioned by 2 ranks trains to the accuracy of a single-process partition",
          "[mpi][train][data]") {
  REQUIRE_MPI();
  DISTGRAPH_REQUIRE_DATASET(cora, "cora");
  if (!can_train()) {
    WARN("SKIPPED: this distgraph was built without libtorch (no `distgraph train`)");
    return;
  }
  const TempDir tmp;
  const ProgramRun chunk = run(
      {DISTGRAPH_CLI, "chunk", cora.string(), "--chunks", "4", "--out", (tmp / "chunks").string()});
  REQUIRE(chunk.exit_code == 0);
  const ProgramRun single = run({DISTGRAPH_CLI, "partition", "--input", cora.string(), "--parts",
                                 "2", "--out", (tmp / "single").string()});
  INFO(single.output);
  REQUIRE(single.exit_code == 0);
  const double s = mean_test_accuracy(cora.string(), tmp / "single" / "cora.json",
                                      tmp / "train_single", {0, 1, 2});
  CHECK(s > 0.75);
  for (const auto& partitioner : partitioners()) {
    const fs::path out = tmp / ("dist_" + partitioner);
    const ProgramRun dist =
        run(mpirun_partition(2, {"--input", (tmp / "chunks").string(), "--parts", "2",
                                 "--partitioner", partitioner, "--out", out.string()}));
    INFO(dist.output);
    REQUIRE(dist.exit_code == 0);
    const double d = mean_test_accuracy(cora.string(), out / "cora.json",
                                        tmp / ("train_" + partitioner), {0, 1, 2});
    std::printf(
        "mpi: Cora test accuracy, mean of 3 seeds: distributed partition (%s) %.4f, "
        "single-process %.4f\n",
        partitioner.c_str(), d, s);
    INFO(partitioner << ": distributed partition " << d << ", single-process " << s);
    // The partitioners' partitions differ from METIS's and from run to run (PT-Scotch is not
    // bit-reproducible), and with them the sampled neighbourhoods: 0.03 is about twice the
    // spread seen between runs (0.80-0.82).
    CHECK(d > 0.75);
    CHECK(std::abs(d - s) <= 0.03);
  }
}

#endif

}  // namespace test_mpi_partition_mpi

// distgraph info: load the built-in SBM/HSBM or a dataset folder and print its statistics.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/dataset_stats.hpp"
#include "distgraph/io/hetero_dataset.hpp"
#include "distgraph/io/hetero_synthetic.hpp"
#include "distgraph/io/synthetic.hpp"

namespace distgraph::cli {
namespace {

nlohmann::json stats_json(const Dataset& d, const DatasetStats& s, double load_s) {
  const auto& g = s.in_degree;
  return {{"name", d.name},
          {"num_nodes", s.num_nodes},
          {"num_edges", s.num_edges},
          {"feat_shape", {s.feat_dim > 0 ? s.num_nodes : 0, s.feat_dim}},
          {"num_classes", s.num_classes},
          {"class_counts", s.class_counts},
          {"split", {{"train", s.train}, {"val", s.val}, {"test", s.test}}},
          {"in_degree",
           {{"min", g.min},
            {"max", g.max},
            {"mean", g.mean},
            {"median", g.median},
            {"p90", g.p90},
            {"p99", g.p99},
            {"isolated_nodes", g.isolated},
            {"self_loops", g.self_loops},
            {"log2_histogram", g.log2_histogram}}},
          {"load_s", load_s}};
}

void print_table(const Dataset& d, const DatasetStats& s, double load_s) {
  const auto& g = s.in_degree;
  auto ll = [](std::int64_t x) { return static_cast<long long>(x); };
  std::printf("dataset      %s (loaded in %.3f s)\n", d.name.c_str(), load_s);
  std::printf("nodes        %lld\n", ll(s.num_nodes));
  std::printf("edges        %lld (directed)\n", ll(s.num_edges));
  std::printf("features     %lld x %lld float32\n", ll(s.feat_dim > 0 ? s.num_nodes : 0),
              ll(s.feat_dim));
  std::printf("classes      %lld:", ll(s.num_classes));
  for (auto c : s.class_counts) std::printf(" %lld", ll(c));
  std::printf("\nsplit        train %lld / val %lld / test %lld\n", ll(s.train), ll(s.val),
              ll(s.test));
  std::printf("in-degree    min %lld, median %lld, mean %.2f, p90 %lld, p99 %lld, max %lld\n",
              ll(g.min), ll(g.median), g.mean, ll(g.p90), ll(g.p99), ll(g.max));
  std::printf("             isolated nodes %lld, self-loops %lld\n", ll(g.isolated),
              ll(g.self_loops));
  std::printf("degree histogram (in-degree range: nodes)\n");
  for (std::size_t k = 0; k < g.log2_histogram.size(); ++k) {
    const long long lo = (1LL << k) - 1, hi = (2LL << k) - 2;
    std::printf("  %8lld-%-8lld %lld\n", lo, hi, ll(g.log2_histogram[k]));
  }
}

/// Degrees of one node type under one edge type: min, mean, max over all its nodes.
struct DegreeRange {
  std::int64_t min = 0, max = 0;
  double mean = 0;
};

/// Per canonical edge type: its edges, out-degrees over the src type, in-degrees over the
/// dst type.
struct EdgeTypeStats {
  CanonicalEdgeType type;
  std::int64_t num_edges = 0;
  DegreeRange out_degree, in_degree;
};

/// What `distgraph info` prints for a typed dataset. O(N + E) time, O(max N_t) memory.
struct HeteroStats {
  std::vector<EdgeTypeStats> edge_types;
  std::vector<std::int64_t> class_counts;
  std::int64_t train = 0, val = 0, test = 0;
};

DegreeRange degree_range(std::span<const std::int64_t> ids, std::int64_t num_nodes) {
  DegreeRange r;
  if (num_nodes <= 0) return r;
  std::vector<std::int64_t> deg(static_cast<std::size_t>(num_nodes), 0);
  for (auto v : ids) deg[static_cast<std::size_t>(v)]++;
  const auto [lo, hi] = std::minmax_element(deg.begin(), deg.end());
  r.min = *lo;
  r.max = *hi;
  r.mean = static_cast<double>(ids.size()) / static_cast<double>(num_nodes);
  return r;
}

HeteroStats describe_hetero(const HeteroDataset& d) {
  HeteroStats s;
  const auto& types = d.types;
  for (std::int32_t e = 0; e < types.num_edge_types(); ++e) {
    const auto& c = types.edge_type(EdgeType(e));
    const auto ez = static_cast<std::size_t>(e);
    s.edge_types.push_back(
        {c, types.num_edges(EdgeType(e)),
         degree_range(d.src[ez].span(), types.num_nodes(types.node_type(c.src_type))),
         degree_range(d.dst[ez].span(), types.num_nodes(types.node_type(c.dst_type)))});
  }
  if (!d.label.empty() && d.num_classes > 0) {
    s.class_counts.assign(static_cast<std::size_t>(d.num_classes), 0);
    for (std::int64_t c : d.label) s.class_counts[static_cast<std::size_t>(c)]++;
  }
  s.train = Dataset::count(d.train_mask);
  s.val = Dataset::count(d.val_mask);
  s.test = Dataset::count(d.test_mask);
  return s;
}

nlohmann::json hetero_json(const HeteroDataset& d, const HeteroStats& s, double load_s) {
  const auto range = [](const DegreeRange& r) {
    return nlohmann::json{{"min", r.min}, {"mean", r.mean}, {"max", r.max}};
  };
  nlohmann::json ntypes = nlohmann::json::array(), etypes = nlohmann::json::array();
  for (std::int32_t t = 0; t < d.types.num_node_types(); ++t)
    ntypes.push_back({{"name", d.types.node_type_name(NodeType(t))},
                      {"num_nodes", d.types.num_nodes(NodeType(t))},
                      {"feat_dim", d.feat_dim[static_cast<std::size_t>(t)]}});
  for (const auto& e : s.edge_types)
    etypes.push_back({{"src_type", e.type.src_type},
                      {"edge_type", e.type.edge_type},
                      {"dst_type", e.type.dst_type},
                      {"num_edges", e.num_edges},
                      {"out_degree", range(e.out_degree)},
                      {"in_degree", range(e.in_degree)}});
  return {{"name", d.name},
          {"typed", true},
          {"num_nodes", d.num_nodes()},
          {"num_edges", d.num_edges()},
          {"node_types", ntypes},
          {"edge_types", etypes},
          {"target_ntype", d.target_ntype},
          {"num_classes", d.num_classes},
          {"class_counts", s.class_counts},
          {"split", {{"train", s.train}, {"val", s.val}, {"test", s.test}}},
          {"load_s", load_s}};
}

void print_hetero_table(const HeteroDataset& d, const HeteroStats& s, double load_s) {
  auto ll = [](std::int64_t x) { return static_cast<long long>(x); };
  const auto& types = d.types;
  std::printf("dataset      %s (typed, loaded in %.3f s)\n", d.name.c_str(), load_s);
  std::printf("nodes        %lld in %d types\n", ll(d.num_nodes()), types.num_node_types());
  int width = 0;
  for (const auto& n : types.node_type_names()) width = std::max(width, static_cast<int>(n.size()));
  for (std::int32_t t = 0; t < types.num_node_types(); ++t) {
    const auto f = d.feat_dim[static_cast<std::size_t>(t)];
    std::printf("  %-*s %10lld  ", width, types.node_type_name(NodeType(t)).c_str(),
                ll(types.num_nodes(NodeType(t))));
    if (f > 0)
      std::printf("features %lld float32\n", ll(f));
    else
      std::printf("featureless\n");
  }
  std::printf(
      "edges        %lld in %d types (directed; out-degree over the source type, "
      "in-degree over the destination type: min / mean / max)\n",
      ll(d.num_edges()), types.num_edge_types());
  std::vector<std::string> labels;
  std::size_t lw = 0;
  for (const auto& e : s.edge_types) {
    labels.push_back(TypeMap::edge_type_label(e.type));
    lw = std::max(lw, labels.back().size());
  }
  for (std::size_t i = 0; i < s.edge_types.size(); ++i) {
    const auto& e = s.edge_types[i];
    std::printf("  %-*s %10lld  out %lld / %.2f / %lld  in %lld / %.2f / %lld\n",
                static_cast<int>(lw), labels[i].c_str(), ll(e.num_edges), ll(e.out_degree.min),
                e.out_degree.mean, ll(e.out_degree.max), ll(e.in_degree.min), e.in_degree.mean,
                ll(e.in_degree.max));
  }
  if (d.target_ntype.empty()) {
    std::printf("target       none (no labels)\n");
    return;
  }
  std::printf("target       %s, %lld classes:", d.target_ntype.c_str(), ll(d.num_classes));
  for (auto c : s.class_counts) std::printf(" %lld", ll(c));
  std::printf("\nsplit        train %lld / val %lld / test %lld\n", ll(s.train), ll(s.val),
              ll(s.test));
}

}  // namespace

int run_info(std::vector<std::string> argv) {
  Args args("info", std::move(argv));
  args.flag("json", "print one JSON object instead of a table")
      .option("sbm-nodes", "nodes of the built-in SBM graph (default 10000)")
      .option("sbm-classes", "classes of the built-in SBM graph (default 8)")
      .option("hsbm-papers", "papers of the built-in typed HSBM graph (default 20000)")
      .option("seed", "seed of the built-in SBM or HSBM graph (default 42)");
  args.parse(1);
  if (args.help()) {
    args.print_help(
        "distgraph info [DATASET_DIR | hsbm] [--json]\n\n"
        "Without DATASET_DIR, describes the built-in stochastic block model graph; with\n"
        "`hsbm` (and no folder of that name), the built-in typed graph (papers, authors,\n"
        "venues). A typed dataset folder (meta.json with ntypes) is described per node and\n"
        "edge type.");
    return 0;
  }
  const std::string input = args.positional().empty() ? "" : args.positional().front();
  std::error_code ec;
  const bool builtin_hsbm = input == "hsbm" && !std::filesystem::exists(input, ec);
  if (builtin_hsbm || (!input.empty() && is_hetero_dataset(input))) {
    Stopwatch hclock;
    HeteroDataset h;
    if (builtin_hsbm) {
      HsbmOptions opts;
      opts.num_papers = args.get_int("hsbm-papers", opts.num_papers, 1, std::int64_t{1} << 32);
      opts.seed = static_cast<std::uint64_t>(
          args.get_int("seed", static_cast<std::int64_t>(opts.seed), 0, INT64_MAX));
      h = hsbm_dataset(opts);
    } else {
      h = load_hetero_dataset(input);
    }
    const double hload_s = hclock.seconds();
    const HeteroStats hs = describe_hetero(h);
    if (args.has("json"))
      std::printf("%s\n", hetero_json(h, hs, hload_s).dump().c_str());
    else
      print_hetero_table(h, hs, hload_s);
    return 0;
  }
  Stopwatch clock;
  Dataset d;
  if (args.positional().empty()) {
    SbmOptions opts;
    opts.num_nodes = args.get_int("sbm-nodes", opts.num_nodes, 2, std::int64_t{1} << 32);
    opts.num_classes = static_cast<int>(args.get_int("sbm-classes", opts.num_classes, 1, 1 << 16));
    opts.seed = static_cast<std::uint64_t>(
        args.get_int("seed", static_cast<std::int64_t>(opts.seed), 0, INT64_MAX));
    d = sbm_dataset(opts);
  } else {
    d = load_dataset(args.positional().front());
  }
  const double load_s = clock.seconds();
  const DatasetStats s = describe(d);
  if (args.has("json"))
    std::printf("%s\n", stats_json(d, s, load_s).dump().c_str());
  else
    print_table(d, s, load_s);
  return 0;
}

}  // namespace distgraph::cli

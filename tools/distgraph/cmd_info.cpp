// distgraph info: load the built-in SBM or a dataset folder and print its statistics.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/dataset_stats.hpp"
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

}  // namespace

int run_info(std::vector<std::string> argv) {
  Args args("info", std::move(argv));
  args.flag("json", "print one JSON object instead of a table")
      .option("sbm-nodes", "nodes of the built-in SBM graph (default 10000)")
      .option("sbm-classes", "classes of the built-in SBM graph (default 8)")
      .option("seed", "seed of the built-in SBM graph (default 42)");
  args.parse(1);
  if (args.help()) {
    args.print_help(
        "distgraph info [DATASET_DIR] [--json]\n\n"
        "Without DATASET_DIR, describes the built-in stochastic block model graph.");
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

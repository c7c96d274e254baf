// distgraph chunk: write a dataset folder as a chunked graph folder (edge chunks, node-data
// row chunks, metadata.json), the input of `distgraph partition --distributed`.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/io/chunked.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/synthetic.hpp"
#include "typed_dataset_input.hpp"

namespace distgraph::cli {

namespace {

/// The built-in SBM graph's options from --sbm-nodes, --sbm-classes, --sbm-degree,
/// --sbm-feat-dim and --seed.
SbmOptions sbm_options(const Args& args) {
  SbmOptions o;
  o.num_nodes = args.get_int("sbm-nodes", o.num_nodes, 2, std::int64_t{1} << 32);
  o.num_classes = static_cast<int>(args.get_int("sbm-classes", o.num_classes, 1, 1 << 16));
  o.avg_degree = args.get_double("sbm-degree", o.avg_degree, 0.01, 65536);
  o.feat_dim = args.get_int("sbm-feat-dim", o.feat_dim, 0, 1 << 16);
  o.seed = static_cast<std::uint64_t>(
      args.get_int("seed", static_cast<std::int64_t>(o.seed), 0, INT64_MAX));
  return o;
}

}  // namespace

int run_chunk(std::vector<std::string> argv) {
  Args args("chunk", std::move(argv));
  args.option("chunks", "number of edge chunks, and of node-data row chunks (default 4)")
      .option("node-chunks", "number of node-data row chunks (default: --chunks)")
      .option("out", "output folder (required)")
      .option("sbm-nodes", "with `sbm`: nodes of the built-in SBM graph (default 10000)")
      .option("sbm-classes", "with `sbm`: its classes (default 8)")
      .option("sbm-degree", "with `sbm`: its mean degree (default 16)")
      .option("sbm-feat-dim", "with `sbm`: its feature width (default 32)")
      .option("seed", "with `sbm`: its seed (default 42)")
      .flag("json", "print the result as one JSON object");
  args.parse(1);
  if (args.help()) {
    args.print_help(
        "distgraph chunk DATASET_DIR --chunks C --out DIR [--node-chunks C2] [--json]\n\n"
        "DATASET_DIR is a dataset folder, homogeneous or typed, or `sbm` / `hsbm` (the\n"
        "built-in graphs, made here: `sbm` at any size with the --sbm-* options): a typed\n"
        "graph is written as its homogeneous view with its node and edge types declared and\n"
        "its node data per type (docs/FORMATS.md).");
    return 0;
  }
  if (args.positional().empty())
    throw UsageError("chunk: a dataset folder is required (see --help)");
  const std::string input = args.positional()[0];
  const auto out = args.get("out");
  if (!out) throw UsageError("chunk: --out is required (see --help)");
  const std::int64_t chunks = args.get_int("chunks", 4, 1, 1 << 20);
  const std::int64_t node_chunks = args.get_int("node-chunks", chunks, 1, 1 << 20);
  Stopwatch timer;
  if (input != "sbm")
    for (const char* o : {"sbm-nodes", "sbm-classes", "sbm-degree", "sbm-feat-dim", "seed"})
      if (args.has(o))
        throw UsageError(std::string("chunk: --") + o +
                         " is an option of the built-in graph `sbm`");
  // A typed folder is chunked as its homogeneous view, with its types in the metadata.
  const ChunkedGraph g = [&] {
    if (is_hetero_input(input)) {
      const HeteroDataset d = load_hetero_input(input);
      return write_chunked(d, *out, chunks, std::min(node_chunks, d.num_nodes()));
    }
    // `sbm` is the built-in graph, as for partition --input; its options go nowhere else.
    const Dataset ds = input == "sbm" ? sbm_dataset(sbm_options(args)) : load_dataset(input);
    return write_chunked(ds, *out, chunks, std::min(node_chunks, ds.num_nodes));
  }();
  const nlohmann::json j = {{"input", input},
                            {"out", *out},
                            {"graph_name", g.name},
                            {"num_nodes", g.num_nodes},
                            {"num_edges", g.num_edges},
                            {"typed", g.typed},
                            {"node_types", g.types.node_type_names()},
                            {"edge_chunks", g.num_edge_chunks()},
                            {"node_chunks", g.num_node_chunks()},
                            {"seconds", timer.seconds()}};
  if (args.has("json"))
    std::printf("%s\n", j.dump().c_str());
  else
    std::printf("chunked %s (%lld nodes, %lld edges) into %lld edge and %lld node chunks -> %s\n",
                input.c_str(), static_cast<long long>(g.num_nodes),
                static_cast<long long>(g.num_edges), static_cast<long long>(g.num_edge_chunks()),
                static_cast<long long>(g.num_node_chunks()), out->c_str());
  return 0;
}

}  // namespace distgraph::cli

// distgraph partition: split a dataset folder, an edge list or a generated graph into
// partitions for N machines, and summarise the split.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.hpp"
#include "distgraph/core/progress.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/io/chunked.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/edge_list.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "partition_distributed_command.hpp"
#include "partition_summary.hpp"
#include "rmat_spec.hpp"
#include "typed_dataset_input.hpp"

namespace distgraph::cli {
namespace {

/// The input as a Dataset plus the graph to partition. `rmat:S[:K]` generates R-MAT
/// (scale S, edge factor K, symmetrised, without self-loops or duplicates), `sbm` the
/// built-in SBM, a folder is a dataset folder or a chunked graph folder (read whole), and a
/// file an edge list.
struct Input {
  Dataset data;
  Graph graph;
};

Input load_input(const std::string& spec, std::uint64_t seed, unsigned threads) {
  Input in;
  if (auto r = parse_rmat_spec(spec, seed)) {
    r->num_threads = threads;
    Coo coo = rmat(*r);
    BuildOptions b;
    b.remove_self_loops = true;
    b.remove_duplicates = true;
    b.symmetrize = true;
    b.num_threads = threads;
    in.graph = build_graph(coo, b);
    in.data.name = "rmat" + std::to_string(r->scale);
    in.data.num_nodes = in.graph.num_nodes();
    return in;
  }
  if (spec == "sbm") {
    in.data = sbm_dataset();
  } else if (is_chunked_folder(spec)) {
    in.data = load_chunked_dataset(spec);  // whole, in this one process
  } else if (std::filesystem::is_directory(spec)) {
    in.data = load_dataset(spec);
  } else if (std::filesystem::exists(spec)) {
    in.data = read_edge_list(spec);
  } else {
    throw IoError(spec, "no such dataset folder or edge-list file");
  }
  in.graph = dataset_graph(in.data, threads);
  return in;
}

/// Declares `distgraph partition`'s options and parses `argv`. Throws UsageError.
Args parse_partition_args(std::vector<std::string> argv) {
  Args args("partition", std::move(argv));
  args.option("input",
              "dataset folder (homogeneous or typed), chunked graph folder, edge-list file, "
              "'sbm', 'hsbm' (typed) or 'rmat:SCALE[:EDGE_FACTOR]'")
      .option("name", "graph name (config file <name>.json); default: the dataset's name")
      .option("parts", "number of partitions (default 2)")
      .option("method", "metis (default) or random")
      .option("out", "output folder (default ./partitions)")
      .option("balance-ntypes", "'train': balance train/val/test/other nodes from the masks")
      .flag("balance-edges", "balance edges (in-degree sums) across partitions (METIS)")
      .flag("no-relabel", "keep input IDs; write node_map.npy and edge_map.npy")
      .option("halo-hops", "halo depth (default 1)")
      .option("feat-dtype",
              "bf16, f16 or f32 (default): the dtype node features are stored and served in")
      .option("seed", "seed for METIS, random assignment and generators (default 0)")
      .option("threads", "worker threads (default: all cores)")
      .flag("distributed",
            "run as one rank of an MPI job (mpirun -n P distgraph partition --distributed ...): "
            "the ranks read a chunked folder (distgraph chunk) or generate rmat:S between "
            "them, partition it with PT-Scotch or Zoltan and each writes the partitions it "
            "owns")
      .option("partitioner",
              "with --distributed and --method metis: ptscotch (default; PT-Scotch's k-way) "
              "or zoltan (Zoltan's parallel hypergraph partitioner on the graph)")
      .option("hub-degree",
              "with --distributed and --method metis: nodes of more neighbours than this stay "
              "out of the partitioner's graph and join the partition most of their neighbours "
              "are in (default: 16 x the mean degree, at least 64)")
      .option("scotch-strategy",
              "with --distributed: PT-Scotch's preset, speed (default), balance, quality or "
              "scalability")
      .flag("json", "print the summary as one JSON object");
  args.parse(0);
  return args;
}

/// What the flags ask of either partitioner, read in the order they are checked.
struct PartitionFlags {
  std::string input;
  PartitionOptions opts;
  std::int64_t parts = 2;
  bool json = false;
};

/// Reads the flags both partitioners take. Throws UsageError.
PartitionFlags read_partition_flags(const Args& args) {
  PartitionFlags f;
  const auto input = args.get("input");
  if (!input) throw UsageError("partition: --input is required (see --help)");
  f.input = *input;
  const std::string method = args.get_or("method", "metis");
  if (method == "metis")
    f.opts.method = PartMethod::metis;
  else if (method == "random")
    f.opts.method = PartMethod::random;
  else
    throw UsageError("partition: --method '" + method + "': expected metis or random");
  const std::string feat_dtype = args.get_or("feat-dtype", "f32");
  if (feat_dtype == "bf16")
    f.opts.feat_dtype = DType::bfloat16;
  else if (feat_dtype == "f16")
    f.opts.feat_dtype = DType::float16;
  else if (feat_dtype != "f32")
    throw UsageError("partition: --feat-dtype '" + feat_dtype + "': expected bf16, f16 or f32");
  f.parts = args.get_int("parts", 2, 1, 1 << 20);
  f.opts.relabel = !args.has("no-relabel");
  f.opts.halo_hops = static_cast<int>(args.get_int("halo-hops", 1, 1, 16));
  f.opts.seed = static_cast<std::uint64_t>(args.get_int("seed", 0, 0, INT64_MAX));
  f.opts.num_threads = static_cast<unsigned>(args.get_int("threads", 0, 0, 1024));
  f.opts.balance_edges = args.has("balance-edges");
  f.json = args.has("json");
  return f;
}

/// Whether --balance-ntypes asks for balancing ('train', the only value known). Throws
/// UsageError for another value.
bool balance_requested(const Args& args) {
  const auto b = args.get("balance-ntypes");
  if (!b) return false;
  if (*b != "train") throw UsageError("partition: --balance-ntypes '" + *b + "': expected 'train'");
  return true;
}

/// --distributed: this process as one rank of the MPI job.
int partition_as_rank(const Args& args, const PartitionFlags& f) {
  DistributedPartitionRequest req;
  req.input = f.input;
  req.name = args.get("name");
  req.parts = f.parts;
  req.out = args.get_or("out", "partitions");
  req.opts = f.opts;
  req.json = f.json;
  req.scotch_strategy = args.get_or("scotch-strategy", "speed");
  req.partitioner = args.get_or("partitioner", "ptscotch");
  req.hub_degree = args.get_int("hub-degree", 0, 1, INT64_MAX);
  if (!f.opts.relabel)
    throw UsageError("partition: --no-relabel is not available with --distributed");
  req.balance_train = balance_requested(args);
  return run_partition_distributed(req);
}

/// Partitions `graph` with `data` and prints the summary (one JSON object with --json).
int partition_and_print(const Args& args, const PartitionFlags& f, const Progress& progress,
                        const Graph& graph, const TensorList& data,
                        const std::string& dataset_name) {
  const std::string name = args.get_or("name", dataset_name.empty() ? "graph" : dataset_name);
  const std::filesystem::path out = args.get_or("out", "partitions");
  PartitionResult r = partition_graph(graph, name, f.parts, out, f.opts, data);
  r.stages = progress.stages();
  const nlohmann::json summary = summary_json(r, f.input);
  if (f.json)
    std::printf("%s\n", summary.dump().c_str());
  else
    print_summary(summary);
  return 0;
}

/// A typed input: per-type features, the target's split; --balance-ntypes balances every
/// node type and the target's train/val/test across partitions.
int partition_typed(const Args& args, PartitionFlags f, Progress& progress) {
  const HeteroDataset d = load_hetero_input(f.input);
  const auto classes = hetero_split_classes(d);
  if (balance_requested(args))
    f.opts.balance_ntypes = classes;
  else
    f.opts.count_ntypes = classes;
  progress.end();
  return partition_and_print(args, f, progress, hetero_graph(d, f.opts.num_threads),
                             hetero_node_data(d), d.name);
}

/// A homogeneous input. Train/val/test/other classes are always counted per partition for
/// the summary, and balanced only when asked.
int partition_homogeneous(const Args& args, PartitionFlags f, Progress& progress) {
  Input in = load_input(f.input, f.opts.seed, f.opts.num_threads);
  std::vector<std::int64_t> classes;
  if (!in.data.train_mask.empty()) classes = split_classes(in.data);
  if (balance_requested(args)) {
    if (classes.empty())
      throw UsageError("partition: --balance-ntypes train needs train/val/test masks; '" + f.input +
                       "' has none");
    f.opts.balance_ntypes = classes;
  } else {
    f.opts.count_ntypes = classes;
  }
  progress.end();
  return partition_and_print(args, f, progress, in.graph, dataset_node_data(in.data), in.data.name);
}

}  // namespace

int run_partition(std::vector<std::string> argv) {
  const Args args = parse_partition_args(std::move(argv));
  if (args.help()) {
    args.print_help(
        "distgraph partition --input DIR --name NAME --parts N --method metis|random --out DIR\n"
        "                    [--balance-ntypes train] [--balance-edges] [--no-relabel]\n"
        "                    [--halo-hops K] [--feat-dtype bf16|f16|f32] [--seed S] [--json]\n"
        "mpirun -n P distgraph partition --distributed --input CHUNKED_DIR|rmat:S --parts K "
        "--out DIR [...]");
    return 0;
  }
  PartitionFlags f = read_partition_flags(args);
  if (args.has("distributed")) return partition_as_rank(args, f);
  for (const char* only : {"partitioner", "hub-degree", "scotch-strategy"})
    if (args.get(only))
      throw UsageError(std::string("partition: --") + only + " is only for --distributed");
  Progress progress(f.json);
  f.opts.progress = &progress;
  progress.begin("load input");
  if (is_hetero_input(f.input)) return partition_typed(args, f, progress);
  return partition_homogeneous(args, f, progress);
}

}  // namespace distgraph::cli

// `distgraph infer`: every node's embedding and/or predicted class from a trained run's
// checkpoint, by layer-wise inference over the run's partition, written in the dataset's
// original node order. Standalone (one process) or on a loopback cluster like `distgraph
// train`, whose trainers run this same subcommand in the trainer role.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cli.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/infer/layerwise_inference.hpp"
#include "distgraph/infer/trained_node_model.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/partition/partition_config.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/runtime/initialize.hpp"
#include "distgraph/runtime/launcher.hpp"
#include "distgraph/runtime/loopback_cluster.hpp"
#include "distgraph/train/threads.hpp"
#include "infer_output.hpp"
#include "run_input.hpp"
#include "trainer_relaunch.hpp"

namespace distgraph::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* usage =
    "distgraph infer --checkpoint RUN_DIR [DATASET_DIR | --part-config C] [--standalone]\n"
    "                [--output embeddings|logits|both] [--out DIR] [--parts P] [--servers S]\n"
    "                [--trainers T] [--batch-size B] [--json]";

/// A fresh folder under the system's temporary folder, removed with everything in it.
class TempFolder {
 public:
  TempFolder() {
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("distgraph-infer-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const noexcept { return path_; }

 private:
  fs::path path_;
};

/// Throws CheckpointError unless `nodes`, `edges` (skipped when negative) and `feat` are
/// the graph the checkpoint's run was trained on; `where` names what holds the other graph.
void check_graph(const TrainedNodeModel& t, const std::string& where, std::int64_t nodes,
                 std::int64_t edges, std::int64_t feat) {
  const auto& run = t.run;
  const std::int64_t want_nodes = run.value("num_nodes", std::int64_t{-1});
  const std::int64_t want_edges = run.value("num_edges", std::int64_t{-1});
  const std::int64_t want_feat = run.value("in_feats", std::int64_t{-1});
  if (nodes == want_nodes && (edges < 0 || edges == want_edges) && feat == want_feat) return;
  const auto graph = [](std::int64_t n, std::int64_t m, std::int64_t f) {
    return std::to_string(n) + " nodes, " + (m >= 0 ? std::to_string(m) + " edges, " : "") +
           std::to_string(f) + " feature columns";
  };
  throw CheckpointError(t.path.string(),
                        "trained on a graph of " +
                            graph(want_nodes, edges < 0 ? -1 : want_edges, want_feat) + "; " +
                            where + " has " + graph(nodes, edges, feat) + " (another dataset?)");
}

void check_partition(const TrainedNodeModel& t, const fs::path& config) {
  const PartitionConfig c = read_partition_config(config);
  if (c.ntypes.size() != 1)
    throw PartitionError(config.string() + ": a typed graph; expected the homogeneous graph " +
                         t.path.string() + " was trained on");
  check_graph(t, "partition " + config.string(), c.num_nodes, c.num_edges, feat_columns(c));
}

/// Throws IoError unless files can be created in `out` (made when missing).
void check_writable(const fs::path& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  const fs::path probe = out / (".infer-probe-" + std::to_string(::getpid()));
  std::ofstream f(probe, std::ios::trunc);
  const bool ok = !ec && f && f.flush();
  f.close();
  fs::remove(probe, ec);
  if (!ok)
    throw IoError(out.string(), "cannot write files there; expected a writable --out folder");
}

/// What infer.json records of the run besides the figures.
nlohmann::json about_run(const TrainedNodeModel& t, const char* mode, std::int64_t parts,
                         std::int64_t trainers) {
  return {{"checkpoint", t.path.string()},
          {"model", t.run.value("model", std::string())},
          {"epochs_done", t.epochs_done},
          {"best_epoch", t.best_epoch},
          {"mode", mode},
          {"parts", parts},
          {"trainers", trainers}};
}

/// What every process of the run needs to know: the run folder, --out, --output,
/// --batch-size and --json.
struct InferRequest {
  fs::path run_dir, out;
  Outputs want;
  std::int64_t batch_size = 1024;
  bool json = false;
};

/// Declares every option of `distgraph infer` (--help prints them in this order).
void declare_infer_options(Args& args) {
  args.option("checkpoint",
              "RUN_DIR: a `distgraph train` run folder (its best.pt, else checkpoint.pt)")
      .option("part-config",
              "the partition to infer over (default: RUN_DIR/partition, or DATASET_DIR "
              "partitioned afresh)")
      .option("output",
              "embeddings (last hidden layer), logits (predicted classes) or both "
              "(default)")
      .option("out", "folder for embeddings.npy, predictions.npy, infer.json (default RUN_DIR)")
      .flag("standalone", "infer in this process with no servers")
      .option("parts",
              "DATASET_DIR only: partitions = loopback machines (default 2; "
              "standalone 1)")
      .option("servers", "servers per machine (default 1)")
      .option("trainers", "trainers per machine (default 1)")
      .option("batch-size", "destination nodes per 1-hop block (default 1024)")
      .flag("json", "print infer.json's object as one JSON line");
}

/// The request from the command line: UsageError without --checkpoint or with a bad value.
InferRequest request_from(const Args& args) {
  const auto ckpt_arg = args.get("checkpoint");
  if (!ckpt_arg) throw UsageError("infer: --checkpoint RUN_DIR is required");
  InferRequest r;
  r.run_dir = fs::absolute(*ckpt_arg);
  r.out = fs::absolute(args.get_or("out", r.run_dir.string()));
  r.want = parse_outputs(args.get_or("output", "both"));
  r.batch_size = args.get_int("batch-size", 1024, 1, 1 << 24);
  r.json = args.has("json");
  return r;
}

/// The trainer role: started by the launcher of a distributed `distgraph infer`, or as the
/// trainer program of a user's `distgraph launch`.
int run_trainer_role(const InferRequest& req) {
  Context ctx = initialize();
  if (ctx.is_server()) return 0;
  set_intra_op_threads(ctx.intra_op_threads());
  TrainedNodeModel t = load_trained_node_model(run_checkpoint(req.run_dir));
  const RuntimeGraph g = ctx.graph();
  // Under a launch of the user's own, nothing checked the partition against the run yet.
  check_graph(t, "the job's partition", g.num_nodes(), g.num_edges(),
              distgraph::detail::open_feature(g, "feat").num_cols());
  if (ctx.rank() == 0) check_writable(req.out);
  const auto about = about_run(t, "distributed", g.book().num_partitions(), ctx.world_size());
  infer_on(g, t.model, req.want, req.out, ctx.rank(), req.batch_size, about);
  return 0;
}

/// The input and cluster flags, checked against each other; returns the cluster's size.
LoopbackSize check_layout(const Args& args) {
  if (!args.positional().empty() && args.has("part-config"))
    throw UsageError("infer: give a DATASET_DIR or --part-config, not both");
  check_standalone_size(args, "infer");
  if (args.has("parts") && args.positional().empty())
    throw UsageError("infer: --parts is for a DATASET_DIR (a partition has its own)");
  return loopback_size(args);
}

/// The partition to infer over: DATASET_DIR's graph (checked against the checkpoint)
/// partitioned afresh in `tmp`, --part-config's, or the run folder's own.
fs::path infer_input(const Args& args, const InferRequest& req, const TrainedNodeModel& t,
                     const fs::path& tmp) {
  if (!args.positional().empty()) {
    const Dataset data = load_dataset(args.positional()[0]);
    check_graph(t, "dataset " + args.positional()[0], data.num_nodes, -1, data.feat_dim);
    const auto parts = args.get_int("parts", args.has("standalone") ? 1 : 2, 1, 4096);
    return fresh_partition(data, tmp, parts,
                           {.method = parts == 1 ? PartMethod::random : PartMethod::metis});
  }
  if (const auto pc = args.get("part-config")) return fs::absolute(*pc);
  return run_folder_partition(req.run_dir);
}

/// --standalone: this process serves every partition and infers over all of them.
int infer_standalone(TrainedNodeModel& t, const InferRequest& req, const fs::path& config,
                     std::int64_t num_parts) {
  InitOptions io;
  io.part_config = config;
  Context ctx = make_context(Environment{}, io);
  set_intra_op_threads(ctx.intra_op_threads());
  const auto j = infer_on(ctx.graph(), t.model, req.want, req.out, 0, req.batch_size,
                          about_run(t, "standalone", num_parts, 1));
  print_infer_result(j, req.json);
  return 0;
}

/// A loopback cluster (its ip config in `cluster_dir`) whose trainers run this subcommand
/// in the trainer role.
int infer_on_loopback(const InferRequest& req, const fs::path& cluster_dir, const fs::path& config,
                      std::int64_t num_parts, LoopbackSize size) {
  LaunchOptions lo = loopback_launch(cluster_dir, config, num_parts, size.servers, size.trainers);
  const TrainerRelaunch r{
      .command = "infer",
      .trainer_args = {"--checkpoint", req.run_dir.string(), "--out", req.out.string(), "--output",
                       req.want.name, "--batch-size", std::to_string(req.batch_size)},
      .out = req.out,
      .result_file = "infer.json",
      .json = req.json};
  const RelaunchResult done = relaunch_as_trainers(std::move(lo), r);
  if (done.exit_code != 0) return done.exit_code;
  print_infer_result(done.result, req.json);
  return 0;
}

}  // namespace

int run_infer(std::vector<std::string> argv) {
  Args args("infer", std::move(argv));
  declare_infer_options(args);
  args.parse(1);
  if (args.help()) {
    args.print_help(usage);
    return 0;
  }
  const InferRequest req = request_from(args);
  if (launched_in_a_role()) return run_trainer_role(req);
  const LoopbackSize size = check_layout(args);
  // Everything is checked before anything is written: the checkpoint, then the graph.
  TrainedNodeModel t = load_trained_node_model(run_checkpoint(req.run_dir));
  TempFolder tmp;
  const fs::path config = infer_input(args, req, t, tmp.path());
  check_partition(t, config);
  check_writable(req.out);
  const std::int64_t num_parts = read_partition_config(config).num_parts;
  if (args.has("standalone")) return infer_standalone(t, req, config, num_parts);
  return infer_on_loopback(req, tmp.path(), config, num_parts, size);
}

}  // namespace distgraph::cli

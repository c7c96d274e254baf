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
#include "run_command.hpp"

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

/// The partition config of run folder `run`: the one `partition/*.json` it holds.
fs::path run_partition(const fs::path& run) {
  const fs::path dir = run / "partition";
  std::vector<fs::path> configs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") configs.push_back(e.path());
  if (configs.size() != 1)
    throw PartitionError(dir.string() + ": " +
                         (configs.empty() ? "no partition config" : "several partition configs") +
                         "; expected the run's one partition (or give --part-config or a "
                         "dataset folder)");
  return configs.front();
}

/// Columns of node data "feat" in partition config `c` (-1 when it has none).
std::int64_t feat_columns(const PartitionConfig& c) {
  for (const auto& f : c.node_feats)
    if (f.name == "feat" && f.shape.size() == 2) return f.shape[1];
  return -1;
}

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
  throw CheckpointError(t.path.string(), "trained on a graph of " +
                                             graph(want_nodes, edges < 0 ? -1 : want_edges,
                                                   want_feat) +
                                             "; " + where + " has " + graph(nodes, edges, feat) +
                                             " (another dataset?)");
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

void print_result(const nlohmann::json& j, bool json) {
  if (json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::string layers;
    for (const auto& s : j["layer_s"]) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%.3f", layers.empty() ? "" : ", ", s.get<double>());
      layers += buf;
    }
    std::printf(
        "inferred %lld nodes (%s) in %.3f s: layers %s s, writing %.3f s; %s, %lld part(s), "
        "%lld trainer(s)\n",
        j["nodes"].get<long long>(), j["output"].get<std::string>().c_str(),
        j["seconds"].get<double>(), layers.c_str(), j["write_s"].get<double>(),
        j["mode"].get<std::string>().c_str(), j["parts"].get<long long>(),
        j["trainers"].get<long long>());
  }
  std::fflush(stdout);
}

/// The trainer role: started by the launcher of a distributed `distgraph infer`, or as the
/// trainer program of a user's `distgraph launch`.
int run_trainer_role(const fs::path& run_dir, const fs::path& out,
                     const Outputs& want, std::int64_t batch_size) {
  Context ctx = initialize();
  if (ctx.is_server()) return 0;
  set_intra_op_threads(ctx.intra_op_threads());
  TrainedNodeModel t = load_trained_node_model(run_checkpoint(run_dir));
  const RuntimeGraph g = ctx.graph();
  // Under a launch of the user's own, nothing checked the partition against the run yet.
  check_graph(t, "the job's partition", g.num_nodes(), g.num_edges(),
              distgraph::detail::open_feature(g, "feat").num_cols());
  if (ctx.rank() == 0) check_writable(out);
  const auto about =
      about_run(t, "distributed", g.book().num_partitions(), ctx.world_size());
  infer_on(g, t.model, want, out, ctx.rank(), batch_size, about);
  return 0;
}

}  // namespace

int run_infer(std::vector<std::string> argv) {
  Args args("infer", std::move(argv));
  args.option("checkpoint",
              "RUN_DIR: a `distgraph train` run folder (its best.pt, else checkpoint.pt)")
      .option("part-config",
              "the partition to infer over (default: RUN_DIR/partition, or DATASET_DIR "
              "partitioned afresh)")
      .option("output", "embeddings (last hidden layer), logits (predicted classes) or both "
                        "(default)")
      .option("out", "folder for embeddings.npy, predictions.npy, infer.json (default RUN_DIR)")
      .flag("standalone", "infer in this process with no servers")
      .option("parts", "DATASET_DIR only: partitions = loopback machines (default 2; "
                       "standalone 1)")
      .option("servers", "servers per machine (default 1)")
      .option("trainers", "trainers per machine (default 1)")
      .option("batch-size", "destination nodes per 1-hop block (default 1024)")
      .flag("json", "print infer.json's object as one JSON line");
  args.parse(1);
  if (args.help()) {
    args.print_help(usage);
    return 0;
  }
  const auto ckpt_arg = args.get("checkpoint");
  if (!ckpt_arg) throw UsageError("infer: --checkpoint RUN_DIR is required");
  const fs::path run_dir = fs::absolute(*ckpt_arg);
  const fs::path out = fs::absolute(args.get_or("out", run_dir.string()));
  const Outputs want = parse_outputs(args.get_or("output", "both"));
  const std::int64_t batch_size = args.get_int("batch-size", 1024, 1, 1 << 24);
  const bool json = args.has("json"), standalone = args.has("standalone");
  if (std::getenv("DISTGRAPH_ROLE") != nullptr && *std::getenv("DISTGRAPH_ROLE") != '\0')
    return run_trainer_role(run_dir, out, want, batch_size);
  if (!args.positional().empty() && args.has("part-config"))
    throw UsageError("infer: give a DATASET_DIR or --part-config, not both");
  if (standalone && (args.has("servers") || args.has("trainers")))
    throw UsageError("infer: --servers and --trainers need a distributed run (drop --standalone)");
  if (args.has("parts") && args.positional().empty())
    throw UsageError("infer: --parts is for a DATASET_DIR (a partition has its own)");
  const auto servers = static_cast<std::int32_t>(args.get_int("servers", 1, 1, 64));
  const auto trainers = static_cast<std::int32_t>(args.get_int("trainers", 1, 1, 1024));

  // Everything is checked before anything is written: the checkpoint, then the graph.
  TrainedNodeModel t = load_trained_node_model(run_checkpoint(run_dir));
  TempFolder tmp;
  fs::path config;
  if (!args.positional().empty()) {
    const Dataset data = load_dataset(args.positional()[0]);
    check_graph(t, "dataset " + args.positional()[0], data.num_nodes, -1, data.feat_dim);
    const auto parts = args.get_int("parts", standalone ? 1 : 2, 1, 4096);
    partition_dataset(data, data.name, parts, tmp.path() / "partition",
                      {.method = parts == 1 ? PartMethod::random : PartMethod::metis});
    config = tmp.path() / "partition" / (data.name + ".json");
  } else if (const auto pc = args.get("part-config")) {
    config = fs::absolute(*pc);
  } else {
    config = run_partition(run_dir);
  }
  check_partition(t, config);
  check_writable(out);

  const std::int64_t num_parts = read_partition_config(config).num_parts;
  if (standalone) {
    InitOptions io;
    io.part_config = config;
    Context ctx = make_context(Environment{}, io);
    set_intra_op_threads(ctx.intra_op_threads());
    const auto j = infer_on(ctx.graph(), t.model, want, out, 0, batch_size,
                            about_run(t, "standalone", num_parts, 1));
    print_result(j, json);
    return 0;
  }

  // A loopback cluster whose trainers run this subcommand in the trainer role.
  LaunchOptions lo = loopback_launch(tmp.path(), config, num_parts, servers, trainers);
  lo.distgraph_program = sibling_program("distgraph");  // servers: no libtorch to load
  lo.report = out / "processes.json";                    // each process's time and peak RSS
  lo.program = {self_program(), "--checkpoint", run_dir.string(), "--out", out.string(),
                "--output", want.name, "--batch-size", std::to_string(batch_size)};
  const auto started = fs::file_time_type::clock::now();
  // With --json stdout carries only the result line: the processes' output goes to stderr.
  const int rc = run_launch(lo, json ? stderr : stdout);
  if (rc != 0) {
    std::fprintf(stderr, "distgraph infer: the distributed run failed (see above)\n");
    return rc;
  }
  std::error_code ec;
  const auto written = fs::last_write_time(out / "infer.json", ec);
  std::ifstream rf(out / "infer.json");
  if (ec || written < started || !rf)
    throw IoError((out / "infer.json").string(), "the trainers wrote no result");
  print_result(nlohmann::json::parse(rf), json);
  return 0;
}

}  // namespace distgraph::cli

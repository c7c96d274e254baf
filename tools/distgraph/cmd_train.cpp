// `distgraph train`: the main job. Without a role in the environment it prepares a run
// (dataset, partition, loopback cluster) and either trains in this process (--standalone)
// or launches servers and trainers that run this same subcommand in the trainer role.
// Its options are train_recipe.hpp's; what it prints, train_output.hpp's.
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "distgraph/core/memory.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/runtime/initialize.hpp"
#include "distgraph/runtime/launcher.hpp"
#include "distgraph/runtime/loopback_cluster.hpp"
#include "distgraph/train/allreduce.hpp"
#include "distgraph/train/threads.hpp"
#include "run_input.hpp"
#include "tls_flags.hpp"
#include "train_output.hpp"
#include "train_recipe.hpp"
#include "trainer_relaunch.hpp"
#include "typed_dataset_input.hpp"

namespace distgraph::cli {

namespace {

namespace fs = std::filesystem;

/// torch's out-of-memory message without its advice and backtrace: what was asked for and
/// what the device had ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total
/// capacity of 79.19 GiB of which 1.06 GiB is free.").
std::string oom_summary(const c10::Error& e) {
  std::string m = e.what_without_backtrace();
  if (const auto nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
  for (const char* tail : {" Including non-PyTorch", " Of the allocated", " If reserved"})
    if (const auto at = m.find(tail); at != std::string::npos) m.resize(at);
  return m;
}

/// Runs `train` (a trainer's work on `device`), turning torch's device errors into one
/// line that names `who` (the trainer) and, when it ran out of memory, the allocation.
template <class Train>
int on_device(const std::string& who, torch::Device device, Train&& train) {
  try {
    return train();
  } catch (const c10::OutOfMemoryError& e) {
    throw DeviceError(who + " on " + device.str() + ": out of GPU memory: " + oom_summary(e));
  } catch (const c10::Error& e) {
    if (device.is_cpu()) throw;
    std::string m = e.what_without_backtrace();
    if (const auto nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
    throw DeviceError(who + " on " + device.str() + ": " + m);
  }
}

/// Runs the task `--task` names on `g` (collective over `groups`); `report`: this process
/// prints the epochs.
template <class Graph>
RunResult run_task(const Args& a, const Graph& g, const NodeClassificationOptions& recipe,
                   const TrainerGroups& groups, bool report,
                   const std::optional<std::string>& target) {
  const auto printer = [&](std::int64_t epochs) {
    return report ? epoch_printer(a.has("json"), epochs) : EpochCallback{};
  };
  if (target) {
    check_typed_recipe(a, recipe);
    const auto o = hetero_recipe_from(a, recipe, *target);
    return train_hetero_node_classification(g, o, groups, printer(o.epochs));
  }
  if (is_typed_model(a.get_or("model", "sage")))
    throw UsageError("train: --model " + a.get_or("model", "sage") +
                     " is for typed graphs; expected sage, gcn or gat");
  if (a.get_or("task", "node") == "node") {
    auto res = train_node_classification(g, recipe, groups, printer(recipe.epochs));
    if (a.has("save-embeddings")) save_embeddings(g, res, recipe, groups);
    return res;
  }
  const LinkPredictionOptions lp = link_recipe_from(a, recipe);
  return train_link_prediction(g, lp, groups, printer(lp.epochs));
}

/// The trainer role (started by `distgraph launch`): connect, train, report.
int run_trainer_role(const Args& args) {
  NodeClassificationOptions recipe = recipe_from(args);
  const bool json = args.has("json");
  Context ctx = initialize();
  if (ctx.is_server()) return 0;
  // Which process is which, for whoever must find or stop one.
  std::fprintf(stderr, "trainer %d of %d (pid %d) on machine %d\n", ctx.rank(), ctx.world_size(),
               static_cast<int>(::getpid()), ctx.machine_id());
  set_intra_op_threads(ctx.intra_op_threads());
  // Plain "cuda": the trainers of a machine take its GPUs in turn (NCCL needs one each).
  if (args.get_or("device", "cpu") == "cuda")
    recipe.device = torch::Device(
        torch::kCUDA,
        static_cast<c10::DeviceIndex>(ctx.local_rank() % torch::cuda::device_count()));
  const std::string who = "trainer " + std::to_string(ctx.rank()) + " of " +
                          std::to_string(ctx.world_size()) + " (machine " +
                          std::to_string(ctx.machine_id()) + ")";
  return on_device(who, recipe.device, [&] {
    const auto groups = trainer_groups_from_env(recipe.device, recipe.collective_timeout);
    const RuntimeGraph g = ctx.graph();
    const bool rank0 = ctx.rank() == 0;  // the library creates --out after its checks
    // Typed runs: the launching command named the target on every trainer's command line.
    const auto res = run_task(args, g, recipe, groups, rank0, args.get("target-ntype"));
    if (rank0) print_train_result(result_json(res), json);
    return 0;
  });
}

/// Where the run takes place: this process (--standalone) or a loopback cluster of --parts
/// machines with --servers and --trainers each, speaking the TLS flags' mode.
struct RunLayout {
  bool standalone = false;
  std::int64_t parts = 2;
  LoopbackSize size;
  TlsOptions tls;
};

/// The layout from the command line: UsageError for cluster flags beside --standalone.
RunLayout layout_from(const Args& args) {
  RunLayout l;
  l.standalone = args.has("standalone");
  l.parts = args.get_int("parts", 2, 1, 4096);
  l.size = loopback_size(args);
  check_standalone_size(args, "train");
  if (l.standalone &&
      (args.has("no-tls") || args.has("tls-cert") || args.has("tls-key") || args.has("tls-ca")))
    throw UsageError(
        "train: --no-tls and --tls-* set up servers' connections; --standalone has "
        "none (drop them or --standalone)");
  l.tls = l.standalone ? TlsOptions{} : tls_from_flags(args);
  return l;
}

/// The typed graph `input` names, partitioned for the run: --target-ntype checked against
/// the dataset, and the homogeneous recipe's options a typed run cannot honour refused,
/// before anything is written.
RunPartition typed_input(const Args& args, const std::string& input,
                         const NodeClassificationOptions& recipe, const PartitionRequest& where) {
  const HeteroDataset hd = load_hetero_input(input);
  const std::string target = args.get_or("target-ntype", hd.target_ntype);
  hd.types.node_type(target);  // InvalidArgument naming an unknown type
  if (target != hd.target_ntype)
    throw UsageError("train: --target-ntype '" + target + "': the dataset labels '" +
                     hd.target_ntype + "' only");
  check_typed_recipe(args, recipe);
  return typed_dataset_partition(hd, target, where);
}

/// The dataset (checked before anything is written), partitioned under --out/partition
/// unless a partition is given or reusable. A resumed run needs its checkpoint first.
RunPartition run_input(const Args& args, const NodeClassificationOptions& recipe,
                       std::int64_t parts) {
  const fs::path out = recipe.out;
  if (recipe.resume && !fs::exists(out / "checkpoint.pt"))
    throw CheckpointError((out / "checkpoint.pt").string(), "not found (nothing to resume from)");
  const std::string input =
      !args.positional().empty() ? args.positional()[0] : args.get_or("input", "");
  const PartitionRequest where{.part_config = args.get("part-config"),
                               .out = out,
                               .parts = parts,
                               .resume = recipe.resume,
                               .seed = recipe.seed};
  if (is_hetero_input(input)) return typed_input(args, input, recipe, where);
  const Dataset data = input.empty() ? sbm_dataset() : load_dataset(input);
  return dataset_partition(data, where);
}

/// --standalone: this process is the whole run, its own server of every partition.
int train_standalone(const Args& args, const NodeClassificationOptions& recipe,
                     const RunPartition& input) {
  InitOptions io;
  io.part_config = input.config;
  io.checkpoint_dir = recipe.out / "server-checkpoints";
  Context ctx = make_context(Environment{}, io);
  // libtorch may default to one intra-op thread; a standalone run owns the machine.
  set_intra_op_threads(ctx.intra_op_threads());
  if (const auto t = args.get("trace"))
    start_trace({.file = fs::absolute(*t), .process_name = "trainer 0 (standalone)"});
  return on_device("the standalone trainer", recipe.device, [&] {
    const auto res = run_task(args, ctx.graph(), recipe, TrainerGroups{}, true, input.target);
    print_train_result(result_json(res), args.has("json"));
    return 0;
  });
}

/// A loopback cluster, machine i on 127.0.0.1 serving partition i, whose trainers run this
/// subcommand (`argv` again, with --out and a typed run's target) in the trainer role.
int train_on_loopback(const Args& args, const std::vector<std::string>& argv,
                      const NodeClassificationOptions& recipe, const RunPartition& input,
                      const RunLayout& layout) {
  const fs::path out = recipe.out;
  LaunchOptions lo = loopback_launch(out, input.config, input.num_parts, layout.size.servers,
                                     layout.size.trainers);
  lo.tls = layout.tls;  // the flags over the environment's: every process speaks the same mode
  lo.checkpoint_dir = out / "server-checkpoints";  // each server saves its own rows there
  if (const auto t = args.get("trace")) lo.trace = fs::absolute(*t);
  TrainerRelaunch r{.command = "train",
                    .trainer_args = argv,
                    .out = out,
                    .result_file = "result.json",
                    .json = args.has("json"),
                    .out_kept = true};
  r.trainer_args.insert(r.trainer_args.end(), {"--out", out.string()});
  if (input.target && !args.has("target-ntype"))
    r.trainer_args.insert(r.trainer_args.end(), {"--target-ntype", *input.target});
  const RelaunchResult done = relaunch_as_trainers(std::move(lo), r);
  if (done.exit_code != 0) return done.exit_code;
  print_launched_result(out, done.result, r.json);
  return 0;
}

}  // namespace

int run_train(std::vector<std::string> argv) {
  retain_freed_memory();  // every batch's tensors are allocated and freed
  const std::vector<std::string> original = argv;
  Args args("train", std::move(argv));
  declare_train_options(args);
  args.parse(1);
  if (args.help()) {
    args.print_help(train_usage);
    return 0;
  }
  if (launched_in_a_role()) return run_trainer_role(args);
  const NodeClassificationOptions recipe = recipe_from(args);
  const RunLayout layout = layout_from(args);
  const RunPartition input = run_input(args, recipe, layout.parts);
  if (layout.standalone) return train_standalone(args, recipe, input);
  return train_on_loopback(args, original, recipe, input, layout);
}

}  // namespace distgraph::cli

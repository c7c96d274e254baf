// `distgraph train`: the main job. Without a role in the environment it prepares a run
// (dataset, partition, loopback cluster) and either trains in this process (--standalone)
// or launches servers and trainers that run this same subcommand in the trainer role.
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cli.hpp"
#include "distgraph/core/memory.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "distgraph/runtime/initialize.hpp"
#include "distgraph/runtime/launcher.hpp"
#include "distgraph/runtime/loopback_cluster.hpp"
#include "distgraph/tasks/hetero_node_classification.hpp"
#include "distgraph/tasks/link_prediction.hpp"
#include "distgraph/tasks/node_classification.hpp"
#include "distgraph/train/allreduce.hpp"
#include "distgraph/train/threads.hpp"
#include "infer_output.hpp"
#include "run_command.hpp"
#include "tls_flags.hpp"
#include "typed_dataset_input.hpp"

namespace distgraph::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* usage =
    "distgraph train [DATASET_DIR|hsbm] [--standalone] [--parts P] [--servers S] [--trainers T]\n"
    "                [--epochs E] [--patience P] [--seed N] [--hidden H] [--fanouts 10,25]\n"
    "                [--batch-size B]\n"
    "                [--model sage|gcn|gat] [--heads H] [--sampler uniform|labor] [--lr X]\n"
    "                [--dropout X]\n"
    "                [--metric auto|accuracy|roc_auc] [--device cpu|cuda]\n"
    "                [--cache-mb M] [--cache-policy presample|halo]\n"
    "                [--eval full|sampled] [--eval-every K] [--save-embeddings]\n"
    "                [--out DIR] [--resume] [--json] [--trace FILE]\n"
    "                [--no-tls | --tls-cert F --tls-key F --tls-ca F]\n"
    "  typed graphs:  [--target-ntype T] [--model rgcn|hsage] [--relation-fanouts R=F,...]\n"
    "                 [--num-bases B] [--combine sum|mean]";

std::vector<std::int64_t> parse_fanouts(const std::string& text) {
  std::vector<std::int64_t> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto comma = text.find(',', pos);
    const std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    const long long f = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || (f < 1 && f != -1) || f > 1'000'000)
      throw UsageError("train: --fanouts '" + text +
                       "': expected comma-separated integers >= 1 or -1 (all), e.g. 10,25");
    out.push_back(f);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

Metric parse_metric(const std::string& m) {
  if (m == "auto") return Metric::automatic;
  if (m == "accuracy") return Metric::accuracy;
  if (m == "roc_auc") return Metric::roc_auc;
  throw UsageError("train: unknown metric '" + m + "'; expected auto, accuracy or roc_auc");
}

torch::Device parse_device(const std::string& d) {
  if (d == "cpu") return torch::kCPU;
  if (d != "cuda" && d.rfind("cuda:", 0) != 0)
    throw UsageError("train: --device '" + d + "'; expected cpu or cuda[:N]");
  torch::Device device = torch::kCPU;
  try {
    device = torch::Device(d == "cuda" ? "cuda:0" : d);
  } catch (const std::exception&) {
    throw UsageError("train: --device '" + d + "' is not a device; expected cpu or cuda[:N]");
  }
  // libtorch's CUDA library registers a device guard when it loads; a CPU build has none.
  if (!c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA))
    throw UsageError("train: --device " + d +
                     ": this libtorch was built without CUDA (build against a CUDA libtorch: "
                     "RUNTIME.md, GPU trainers)");
  const auto count = static_cast<std::int64_t>(torch::cuda::device_count());
  if (count == 0)
    throw UsageError("train: --device " + d +
                     ": no CUDA device is visible here (no GPU, no driver, or "
                     "CUDA_VISIBLE_DEVICES hides them)");
  if (device.index() >= count)
    throw UsageError("train: --device " + d + ": this machine has " + std::to_string(count) +
                     " CUDA device" + (count == 1 ? "" : "s") + " (cuda:0" +
                     (count == 1 ? "" : " to cuda:" + std::to_string(count - 1)) + ")");
  return device;
}

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

/// Whether `model` names a typed graph's model (--model rgcn|hsage).
bool is_typed_model(const std::string& model) { return model == "rgcn" || model == "hsage"; }

/// The recipe from the command line (every value checked; UsageError otherwise), starting
/// from the default recipe of --model (typed models leave the homogeneous one at sage).
NodeClassificationOptions recipe_from(const Args& a) {
  const auto model = a.get_or("model", "sage");
  ModelKind kind = ModelKind::sage;
  if (!is_typed_model(model)) {
    try {
      kind = parse_model_kind(model);
    } catch (const InvalidArgument&) {
      throw UsageError("train: --model '" + model +
                       "': expected sage, gcn or gat (typed graphs: rgcn or hsage)");
    }
  }
  NodeClassificationOptions o = node_classification_recipe(kind);
  o.epochs = a.get_int("epochs", o.epochs, 1, 1'000'000);
  o.patience = a.get_int("patience", o.patience, -1, 1'000'000);
  if (a.has("patience") && a.get_or("task", "node") == "link")
    throw UsageError("train: --patience is for --task node");
  o.seed = static_cast<std::uint64_t>(a.get_int("seed", 0, 0, INT64_MAX));
  o.hidden = a.get_int("hidden", o.hidden, 1, 1 << 20);
  if (const auto f = a.get("fanouts")) o.fanouts = parse_fanouts(*f);
  o.sampler = a.get_or("sampler", o.sampler);
  if (!is_node_classification_sampler(o.sampler))
    throw UsageError("train: --sampler '" + o.sampler + "': expected uniform or labor");
  o.batch_size = a.get_int("batch-size", o.batch_size, 1, 1 << 30);
  o.lr = a.get_double("lr", o.lr, 1e-9, 100);
  o.weight_decay = a.get_double("weight-decay", o.weight_decay, 0, 100);
  o.dropout = a.get_double("dropout", o.dropout, 0, 0.99);
  o.input_dropout = a.get_double("input-dropout", o.dropout, 0, 0.99);
  o.attn_dropout = a.get_double("attn-dropout", o.dropout, 0, 0.99);
  if ((a.has("heads") || a.has("attn-dropout")) && kind != ModelKind::gat)
    throw UsageError("train: --heads and --attn-dropout are for --model gat");
  o.heads = a.get_int("heads", o.heads, 1, 1 << 16);
  if (kind == ModelKind::gat && o.hidden % o.heads != 0)
    throw UsageError("train: --heads " + std::to_string(o.heads) + " does not divide --hidden " +
                     std::to_string(o.hidden) + " (GAT splits the hidden width over its heads)");
  o.metric = parse_metric(a.get_or("metric", "auto"));
  o.device = parse_device(a.get_or("device", "cpu"));
  o.num_prefetch_threads = static_cast<unsigned>(a.get_int("prefetch-threads", 1, 0, 64));
  if (const auto sp = a.get_or("split", "balanced"); sp == "local")
    o.balance_split = false;
  else if (sp != "balanced")
    throw UsageError("train: unknown split '" + sp + "'; expected balanced or local");
  const auto agg = a.get_or("aggregator", "mean");
  if (agg == "mean")
    o.aggregator = Aggregator::mean;
  else if (agg == "gcn")
    o.aggregator = Aggregator::gcn;
  else if (agg == "pool")
    o.aggregator = Aggregator::pool;
  else
    throw UsageError("train: unknown aggregator '" + agg + "'; expected mean, gcn or pool");
  o.embedding_dim = a.get_int("embedding-dim", 0, 0, 1 << 16);
  if (const auto t = a.get_or("task", "node"); t != "node" && t != "link")
    throw UsageError("train: unknown task '" + t + "'; expected node or link");
  if (a.get_or("task", "node") == "link" && o.embedding_dim > 0)
    throw UsageError("train: --embedding-dim is for --task node");
  if (a.get_or("task", "node") == "link" && o.sampler != "uniform")
    throw UsageError("train: --sampler " + o.sampler + " is for --task node");
  // A machine's cache lives in its shared memory: more than the machine has cannot fit.
  const auto mem_mib = static_cast<std::int64_t>(::sysconf(_SC_PHYS_PAGES)) *
                       static_cast<std::int64_t>(::sysconf(_SC_PAGE_SIZE)) / (1 << 20);
  o.cache_mb = a.get_int("cache-mb", o.cache_mb, 0, std::max<std::int64_t>(mem_mib, 1));
  o.cache_policy = a.get_or("cache-policy", o.cache_policy);
  if (o.cache_policy != "presample" && o.cache_policy != "halo")
    throw UsageError("train: --cache-policy '" + o.cache_policy + "': expected presample or halo");
  if (a.get_or("task", "node") == "link" && kind != ModelKind::sage)
    throw UsageError("train: --model " + model +
                     " is for --task node (link prediction trains "
                     "GraphSAGE)");
  try {
    o.eval = parse_eval_mode(a.get_or("eval", "full"));
  } catch (const InvalidArgument&) {
    throw UsageError("train: --eval '" + a.get_or("eval", "") + "': expected full or sampled");
  }
  o.eval_every = a.get_int("eval-every", o.eval_every, 1, 1'000'000);
  if (a.get_or("task", "node") == "link") {
    for (const char* opt : {"eval", "eval-every", "save-embeddings"})
      if (a.has(opt)) throw UsageError(std::string("train: --") + opt + " is for --task node");
  }
  if (a.has("save-embeddings") && o.embedding_dim > 0)
    throw UsageError(
        "train: --save-embeddings needs a model of the node features (not --embedding-dim)");
  o.out = fs::absolute(a.get_or("out", "distgraph-run"));
  o.resume = a.has("resume");
  return o;
}

/// The typed recipe from the command line: the shared options of `plain` plus the
/// typed ones (--model, --target-ntype, --relation-fanouts, --num-bases, --combine,
/// --embedding-dim for featureless types).
HeteroNodeClassificationOptions hetero_recipe_from(const Args& a,
                                                   const NodeClassificationOptions& plain,
                                                   const std::string& target) {
  HeteroNodeClassificationOptions o;
  o.model = a.get_or("model", "rgcn");
  if (o.model != "rgcn" && o.model != "hsage")
    throw UsageError("train: --model '" + o.model + "': expected rgcn or hsage");
  o.target_ntype = target;
  if (a.has("epochs")) o.epochs = plain.epochs;
  o.hidden = plain.hidden;
  if (a.has("fanouts")) o.fanouts = plain.fanouts;
  o.relation_fanouts = a.get_or("relation-fanouts", "");
  if (a.has("batch-size")) o.batch_size = plain.batch_size;
  o.lr = plain.lr;
  o.weight_decay = plain.weight_decay;
  o.dropout = plain.dropout;
  o.input_dropout = a.get_double("input-dropout", 0.0, 0, 0.99);
  o.num_bases = a.get_int("num-bases", 0, 0, 1 << 16);
  if (const auto c = a.get_or("combine", "sum"); c == "mean")
    o.combine = HeteroModelOptions::Combine::mean;
  else if (c != "sum")
    throw UsageError("train: --combine '" + c + "': expected sum or mean");
  if (plain.embedding_dim > 0) o.embedding_dim = plain.embedding_dim;
  o.metric = plain.metric;
  o.seed = plain.seed;
  o.device = plain.device;
  o.num_prefetch_threads = plain.num_prefetch_threads;
  o.out = plain.out;
  o.collective_timeout = plain.collective_timeout;
  return o;
}

/// One epoch as the JSON line --json prints.
nlohmann::json epoch_json(const EpochRow& r, const nlohmann::json& metric) {
  return {{"epoch", r.epoch},
          {"loss", r.loss},
          {"train_metric", r.train_metric},
          {"val_metric", r.val_metric},
          {"metric", metric},
          {"epoch_s", r.epoch_s},
          {"sample_s", r.sample_s},
          {"fetch_s", r.fetch_s},
          {"compute_s", r.compute_s},
          {"allreduce_s", r.allreduce_s},
          {"remote_rows", r.remote_rows},
          {"remote_bytes", r.remote_bytes},
          {"cache_hit_rate", r.cache_hit_rate},
          {"val_loss", r.val_loss},
          {"copy_s", r.copy_s}};
}

/// Prints each epoch: a JSON line with --json, one updating line on a terminal, a log
/// line otherwise.
EpochCallback epoch_printer(bool json, std::int64_t epochs) {
  const bool tty = !json && ::isatty(STDOUT_FILENO) == 1;
  return [json, epochs, tty](const EpochRow& r, Metric m) {
    if (json) {
      std::printf("%s\n", epoch_json(r, to_string(m)).dump().c_str());
    } else {
      char val[32] = "-";  // an epoch without validation (--eval-every)
      if (std::isfinite(r.val_metric)) std::snprintf(val, sizeof val, "%.4f", r.val_metric);
      std::printf(
          "%sepoch %lld/%lld  loss %.4f  train %s %.4f  val %s  %.3f s "
          "(sample %.3f, fetch %.3f, compute %.3f, all-reduce %.3f; remote %.1f MB, "
          "cache hits %.0f%%)%s",
          tty ? "\r\033[K" : "", static_cast<long long>(r.epoch + 1),
          static_cast<long long>(epochs), r.loss, to_string(m), r.train_metric, val, r.epoch_s,
          r.sample_s, r.fetch_s, r.compute_s, r.allreduce_s,
          static_cast<double>(r.remote_bytes) / 1e6, 100 * r.cache_hit_rate,
          tty && r.epoch + 1 < epochs ? "" : "\n");
    }
    std::fflush(stdout);
  };
}

void print_result(const nlohmann::json& result, bool json) {
  if (json) {
    std::printf("%s\n", result.dump().c_str());
  } else {
    std::string selected;
    if (result.contains("best_epoch"))
      selected = " of the model of epoch " +
                 std::to_string(result["best_epoch"].get<long long>() + 1) + " (best validation)";
    // A terminal's updating epoch line ends only at the last of --epochs.
    if (result.value("stopped_early", false) && ::isatty(STDOUT_FILENO) == 1) std::printf("\n");
    if (result.value("stopped_early", false))
      selected += ", stopped early (no better validation in " +
                  std::to_string(result.value("patience", 0LL)) + " epochs)";
    std::printf(
        "test %s %.4f (validation %.4f)%s after %lld epochs, %.3f s per epoch; %s, %lld "
        "part(s), %lld trainer(s), seed %llu\n",
        result["metric"].get<std::string>().c_str(), result["test"].get<double>(),
        result["val"].get<double>(), selected.c_str(), result["epochs"].get<long long>(),
        result["epoch_s_mean"].get<double>(), result["mode"].get<std::string>().c_str(),
        result["parts"].get<long long>(), result["trainers"].get<long long>(),
        result["seed"].get<unsigned long long>());
    if (result.contains("test_macro_f1"))
      std::printf("test macro-F1 %.4f (%s on '%s')\n", result["test_macro_f1"].get<double>(),
                  result.value("model", std::string()).c_str(),
                  result.value("target_ntype", std::string()).c_str());
  }
  std::fflush(stdout);
}

/// Throws UsageError for an option of the homogeneous recipe that a typed run cannot honour
/// (checked before the dataset is partitioned, and again where a launched trainer starts).
void check_typed_recipe(const Args& a, const NodeClassificationOptions& recipe) {
  if (a.get_or("task", "node") != "node")
    throw UsageError("train: typed graphs train --task node only");
  if (recipe.resume)
    throw UsageError(
        "train: --resume is not available for typed graphs yet (their "
        "featureless types' embeddings are not checkpointed)");
  if (a.has("patience"))
    throw UsageError("train: --patience is for homogeneous graphs (typed runs train all --epochs)");
  for (const char* opt : {"eval", "eval-every", "save-embeddings"})
    if (a.has(opt)) throw UsageError(std::string("train: --") + opt + " is for homogeneous graphs");
  if (recipe.sampler != "uniform")
    throw UsageError("train: --sampler " + recipe.sampler +
                     " is for homogeneous graphs (typed graphs sample per relation)");
}

/// `distgraph train --save-embeddings`: the selected model's layer-wise inference over
/// every node into the run folder (embeddings.npy, predictions.npy, infer.json), as
/// `distgraph infer --checkpoint RUN` writes them. Collective.
template <class Graph>
void save_embeddings(const Graph& g, NodeClassificationResult& res,
                     const NodeClassificationOptions& recipe, const TrainerGroups& groups) {
  const std::int32_t rank = groups.control ? groups.control->getRank() : 0;
  res.model->to(torch::kCPU);
  const fs::path best = recipe.out / "best.pt";
  const nlohmann::json about = {
      {"checkpoint", (fs::exists(best) ? best : recipe.out / "checkpoint.pt").string()},
      {"model", distgraph::detail::model_identity(recipe.model)},
      {"epochs_done", res.epochs},
      {"best_epoch", res.extra.value("best_epoch", std::int64_t{-1})},
      {"mode", res.mode},
      {"parts", res.parts},
      {"trainers", res.trainers}};
  infer_on(g, res.model, Outputs{}, recipe.out, rank, 1024, about);
}

/// Runs the task `--task` names on `g` (collective over `groups`).
template <class Graph>
RunResult run_task(const Args& a, const Graph& g, const NodeClassificationOptions& recipe,
                   const TrainerGroups& groups, bool report,
                   const std::optional<std::string>& target) {
  const auto task = a.get_or("task", "node");
  if (target) {
    check_typed_recipe(a, recipe);
    const auto o = hetero_recipe_from(a, recipe, *target);
    return train_hetero_node_classification(
        g, o, groups, report ? epoch_printer(a.has("json"), o.epochs) : EpochCallback{});
  }
  if (is_typed_model(a.get_or("model", "sage")))
    throw UsageError("train: --model " + a.get_or("model", "sage") +
                     " is for typed graphs; expected sage, gcn or gat");
  if (task == "node") {
    auto res = train_node_classification(
        g, recipe, groups, report ? epoch_printer(a.has("json"), recipe.epochs) : EpochCallback{});
    if (a.has("save-embeddings")) save_embeddings(g, res, recipe, groups);
    return res;
  }
  LinkPredictionOptions lp;
  if (a.has("epochs")) lp.epochs = recipe.epochs;
  lp.hidden = recipe.hidden;
  lp.fanouts = recipe.fanouts;
  lp.batch_size = recipe.batch_size;
  lp.num_negatives = a.get_int("negatives", lp.num_negatives, 1, 1000);
  lp.lr = recipe.lr;
  lp.weight_decay = a.get_double("weight-decay", lp.weight_decay, 0, 100);
  lp.dropout = a.get_double("dropout", lp.dropout, 0, 0.99);
  lp.aggregator = recipe.aggregator;
  lp.seed = recipe.seed;
  lp.device = recipe.device;
  lp.num_prefetch_threads = recipe.num_prefetch_threads;
  lp.out = recipe.out;
  lp.resume = recipe.resume;
  lp.collective_timeout = recipe.collective_timeout;
  return train_link_prediction(g, lp, groups,
                               report ? epoch_printer(a.has("json"), lp.epochs) : EpochCallback{});
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
    if (rank0) print_result(result_json(res), json);
    return 0;
  });
}

/// Partition config `config`, read; PartitionError unless it holds `d` (its node count and
/// feature width; edges may differ by the duplicates and self-loops the builder drops).
PartitionConfig matching_partition(const fs::path& config, const Dataset& d) {
  PartitionConfig c = read_partition_config(config);
  const auto mismatch = [&](const std::string& what, std::int64_t have, std::int64_t want) {
    throw PartitionError(config.string() + " does not match the dataset '" + d.name + "': " + what +
                         " " + std::to_string(have) + " in the partition, " + std::to_string(want) +
                         " in the dataset");
  };
  if (c.num_nodes != d.num_nodes) mismatch("nodes", c.num_nodes, d.num_nodes);
  std::int64_t feat_cols = -1;
  for (const auto& f : c.node_feats)
    if (f.name == "feat" && f.shape.size() == 2) feat_cols = f.shape[1];
  if (feat_cols != d.feat_dim) mismatch("feature columns", feat_cols, d.feat_dim);
  return c;
}

/// The partition of homogeneous dataset `data` for this run: --part-config's (checked to
/// match), a reusable one under out/partition, or a fresh METIS partition there.
fs::path prepare_partition(const Args& args, const Dataset& data, const fs::path& out,
                           std::int64_t parts, const NodeClassificationOptions& recipe,
                           std::int64_t& num_parts) {
  fs::path config;
  if (const auto pc = args.get("part-config")) {
    config = fs::absolute(*pc);
    num_parts = matching_partition(config, data).num_parts;
    fs::create_directories(out);
  } else {
    config = out / "partition" / (data.name + ".json");
    bool reuse = false;
    if (fs::exists(config)) {
      try {
        reuse = matching_partition(config, data).num_parts == parts;
      } catch (const Error&) {
      }
    }
    if (!reuse) {
      if (recipe.resume)
        throw CheckpointError((out / "checkpoint.pt").string(),
                              "its run's partition " + config.string() +
                                  " is missing or does not match this dataset and --parts");
      fs::create_directories(out);
      partition_dataset(data, data.name, parts, out / "partition",
                        {.method = PartMethod::metis, .seed = recipe.seed});
    }
  }
  return config;
}

}  // namespace

int run_train(std::vector<std::string> argv) {
  retain_freed_memory();  // every batch's tensors are allocated and freed
  const std::vector<std::string> original = argv;
  Args args("train", std::move(argv));
  args.flag("standalone", "train in this process with no servers")
      .option("parts", "partitions = loopback machines (default 2)")
      .option("servers", "servers per machine (default 1)")
      .option("trainers", "trainers per machine (default 1)")
      .option("epochs", "the most epochs to train (default 200; typed graphs and --task link: 50)")
      .option("patience",
              "stop once the best validation epoch is P epochs old (default -1: 100 optimizer "
              "steps' worth, at least 50; 0: never; gcn and gat: 0)")
      .option("seed", "seed of the model, shuffles, sampling and dropout (default 0)")
      .option("hidden", "hidden units per layer, all heads together (default 64; gcn: 16)")
      .option("fanouts",
              "neighbours sampled per layer, input layer first (default 10,25; gcn and gat: "
              "-1,-1, all)")
      .option("batch-size", "training seeds per batch and trainer (default 1000)")
      .option("sampler",
              "neighbour sampler of training batches: uniform (default) or labor "
              "(layer-neighbour sampling: the same expected fanout, fewer input nodes)")
      .option("lr", "Adam learning rate (default 0.01; gat: 0.005)")
      .option("weight-decay", "Adam weight decay (default 5e-4)")
      .option("dropout", "dropout after hidden layers (default 0.5; gat: 0.6)")
      .option("input-dropout", "dropout on the input features (default: --dropout)")
      .option("attn-dropout", "gat: dropout on the attention coefficients (default: --dropout)")
      .option("heads", "gat: attention heads per hidden layer, dividing --hidden (default 8)")
      .option("aggregator", "SAGEConv aggregator: mean, gcn or pool (default mean)")
      .option("metric", "auto (ROC-AUC for 2 classes, else accuracy), accuracy or roc_auc")
      .option("device", "cpu or cuda[:N] (default cpu)")
      .option("prefetch-threads", "background sampling threads per loader (default 1)")
      .option("cache-mb",
              "MiB of each machine's shared cache of other machines' feature rows, filled "
              "before the first epoch (default 256; 0: none; at most the machine's memory)")
      .option("cache-policy",
              "how cached rows are chosen: presample (default: the input nodes of 16 "
              "pre-sampled batches) or halo (in-neighbours of the partition, by edge count)")
      .option("split",
              "training seeds per trainer: balanced (by in-degree, default) or local "
              "(node_split: each trainer's own partition first)")
      .option("task", "node (classification, default) or link (prediction, ROC-AUC)")
      .option("negatives", "link prediction: uniform negatives per positive edge (default 1)")
      .option("embedding-dim",
              "learn a DistEmbedding of this width per node as the input instead of the "
              "features (default 0: features; graphs without features get --hidden)")
      .option("target-ntype",
              "typed graphs: the node type to classify (default: the dataset's target)")
      .option("model",
              "sage (GraphSAGE, default), gcn or gat; typed graphs: rgcn (default) or hsage "
              "(a SAGEConv per relation)")
      .option("relation-fanouts",
              "typed graphs: per-relation fanouts overriding --fanouts, e.g. "
              "rev_pv=20,paper:pa:author=5/10 (one value, or one per layer)")
      .option("num-bases", "typed graphs, rgcn: basis decomposition (default 0: none)")
      .option("combine", "typed graphs, hsage: sum (default) or mean over relations")
      .option("input", "the dataset, as the positional DATASET_DIR (or 'hsbm', typed)")
      .option("part-config", "use this partition of the dataset instead of partitioning")
      .option("out",
              "run folder: partition, metrics.csv, curves.svg, result.json, checkpoint "
              "(default ./distgraph-run)")
      .option("eval",
              "validation metric: full (exact, layer-wise inference over full neighbourhoods; "
              "default) or sampled (blocks with the training fanouts); the test metric is "
              "exact either way")
      .option("eval-every", "validate after every K-th epoch and the last (default 1)")
      .flag("save-embeddings",
            "after training, write every node's embedding and predicted class into --out "
            "(embeddings.npy, predictions.npy, infer.json; as distgraph infer)")
      .flag("resume", "continue from the checkpoint in --out")
      .option("trace",
              "write a timeline of every trainer and server (sampling, fetches, copies, "
              "forward, backward, all-reduce, requests served) to this Chrome trace-event "
              "file, for Perfetto or chrome://tracing")
      .flag("json", "print one JSON line per epoch and the result object at the end");
  add_tls_flags(args);  // the loopback cluster's connections (default: TLS, PSK)
  args.parse(1);
  if (args.help()) {
    args.print_help(usage);
    return 0;
  }
  if (std::getenv("DISTGRAPH_ROLE") != nullptr && *std::getenv("DISTGRAPH_ROLE") != '\0')
    return run_trainer_role(args);

  NodeClassificationOptions recipe = recipe_from(args);
  const bool json = args.has("json"), standalone = args.has("standalone");
  const auto parts = args.get_int("parts", 2, 1, 4096);
  const auto servers = static_cast<std::int32_t>(args.get_int("servers", 1, 1, 64));
  const auto trainers = static_cast<std::int32_t>(args.get_int("trainers", 1, 1, 1024));
  if (standalone && (args.has("servers") || args.has("trainers")))
    throw UsageError("train: --servers and --trainers need a distributed run (drop --standalone)");
  if (standalone &&
      (args.has("no-tls") || args.has("tls-cert") || args.has("tls-key") || args.has("tls-ca")))
    throw UsageError(
        "train: --no-tls and --tls-* set up servers' connections; --standalone has "
        "none (drop them or --standalone)");
  const TlsOptions tls = standalone ? TlsOptions{} : tls_from_flags(args);
  const fs::path out = recipe.out;
  if (recipe.resume && !fs::exists(out / "checkpoint.pt"))
    throw CheckpointError((out / "checkpoint.pt").string(), "not found (nothing to resume from)");
  // The dataset (checked before anything is written), partitioned under out/partition
  // unless a partition is given or reusable.
  const std::string input =
      !args.positional().empty() ? args.positional()[0] : args.get_or("input", "");
  fs::path config;
  std::int64_t num_parts = parts;
  std::optional<std::string> target;  // set for typed graphs
  if (is_hetero_input(input)) {
    const HeteroDataset hd = load_hetero_input(input);
    target = args.get_or("target-ntype", hd.target_ntype);
    hd.types.node_type(*target);  // InvalidArgument naming an unknown type
    if (*target != hd.target_ntype)
      throw UsageError("train: --target-ntype '" + *target + "': the dataset labels '" +
                       hd.target_ntype + "' only");
    check_typed_recipe(args, recipe);
    if (const auto pc = args.get("part-config")) {
      config = fs::absolute(*pc);
      const PartitionConfig c = read_partition_config(config);
      if (c.num_nodes != hd.num_nodes() || c.ntypes != hd.types.node_type_names())
        throw PartitionError(config.string() + " does not match the typed dataset '" + hd.name +
                             "' (node count or node types differ)");
      num_parts = c.num_parts;
      fs::create_directories(out);  // the loopback cluster's ip config is written there
    } else {
      config = out / "partition" / (hd.name + ".json");
      fs::create_directories(out);
      const auto classes = hetero_split_classes(hd);
      partition_hetero_dataset(
          hd, hd.name, parts, out / "partition",
          {.method = PartMethod::metis, .balance_ntypes = classes, .seed = recipe.seed});
    }
  } else {
    const Dataset data = input.empty() ? sbm_dataset() : load_dataset(input);
    config = prepare_partition(args, data, out, parts, recipe, num_parts);
  }
  if (standalone) {
    InitOptions io;
    io.part_config = config;
    io.checkpoint_dir = out / "server-checkpoints";
    Context ctx = make_context(Environment{}, io);
    // libtorch may default to one intra-op thread; a standalone run owns the machine.
    set_intra_op_threads(ctx.intra_op_threads());
    if (const auto t = args.get("trace"))
      start_trace({.file = fs::absolute(*t), .process_name = "trainer 0 (standalone)"});
    return on_device("the standalone trainer", recipe.device, [&] {
      const auto res = run_task(args, ctx.graph(), recipe, TrainerGroups{}, true, target);
      print_result(result_json(res), json);
      return 0;
    });
  }

  // A loopback cluster: machine i on 127.0.0.1 serves partition i.
  LaunchOptions lo = loopback_launch(out, config, num_parts, servers, trainers);
  lo.tls = tls;  // the flags over the environment's: every process speaks the same mode
  lo.checkpoint_dir = out / "server-checkpoints";       // each server saves its own rows there
  lo.report = out / "processes.json";                   // each process's time and peak RSS
  if (const auto t = args.get("trace")) lo.trace = fs::absolute(*t);
  lo.distgraph_program = sibling_program("distgraph");  // servers: no libtorch to load
  lo.program = {self_program()};
  for (const auto& a : original) lo.program.push_back(a);
  lo.program.insert(lo.program.end(), {"--out", out.string()});
  if (target && !args.has("target-ntype"))
    lo.program.insert(lo.program.end(), {"--target-ntype", *target});
  const auto started = fs::file_time_type::clock::now();
  // With --json stdout carries only the JSON lines: the processes' output goes to stderr.
  const int rc = run_launch(lo, json ? stderr : stdout);
  if (rc != 0) {
    std::fprintf(stderr, "distgraph train: the distributed run failed (see above); %s kept\n",
                 out.c_str());
    return rc;
  }
  std::error_code ec;
  const auto written = fs::last_write_time(out / "result.json", ec);
  std::ifstream rf(out / "result.json");
  if (ec || written < started || !rf)
    throw IoError((out / "result.json").string(), "the trainers wrote no result");
  const nlohmann::json result = nlohmann::json::parse(rf);
  if (json) {
    for (const auto& r : read_metrics_csv(out / "metrics.csv"))
      std::printf("%s\n", epoch_json(r, result["metric"]).dump().c_str());
  }
  print_result(result, json);
  return 0;
}

}  // namespace distgraph::cli

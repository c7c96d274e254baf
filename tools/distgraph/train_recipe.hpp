// `distgraph train`'s recipe: its option table and the parsers that turn the command line
// into the task's options (node classification, typed node classification, link prediction),
// every value checked (UsageError, exit status 2, otherwise).
#pragma once

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli.hpp"
#include "distgraph/runtime/environment.hpp"
#include "distgraph/tasks/hetero_node_classification.hpp"
#include "distgraph/tasks/link_prediction.hpp"
#include "distgraph/tasks/node_classification.hpp"
#include "tls_flags.hpp"

namespace distgraph::cli {

inline constexpr const char* train_usage =
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

/// Declares every option of `distgraph train` (--help prints them in this order).
inline void declare_train_options(Args& args) {
  args.flag("standalone", "train in this process with no servers")
      .option("parts", "partitions = loopback machines (default 2)")
      .option("servers", "servers per machine (default 1)")
      .option("trainers", "trainers per machine (default 1)")
      .option("epochs", "the most epochs to train (default 200; typed graphs: 50; --task link: 10)")
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
      .option("prefetch-depth", "batches the training loader makes ahead, 1-1024 (default 4)")
      .option("prefetch-nice",
              "niceness 0-19 of the training loader's threads, so that they yield the core "
              "to the training step where both want it (default 19; 0: as the process, "
              "for computers shared with other busy work)")
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
}

/// --fanouts: comma-separated integers >= 1, or -1 (all neighbours).
inline std::vector<std::int64_t> parse_fanouts(const std::string& text) {
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

inline Metric parse_metric(const std::string& m) {
  if (m == "auto") return Metric::automatic;
  if (m == "accuracy") return Metric::accuracy;
  if (m == "roc_auc") return Metric::roc_auc;
  throw UsageError("train: unknown metric '" + m + "'; expected auto, accuracy or roc_auc");
}

/// --device: cpu, or a CUDA device this libtorch and this machine have.
inline torch::Device parse_device(const std::string& d) {
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

/// Whether `model` names a typed graph's model (--model rgcn|hsage).
inline bool is_typed_model(const std::string& model) { return model == "rgcn" || model == "hsage"; }

/// Whether the command line asks for link prediction (--task link).
inline bool is_link_task(const Args& a) { return a.get_or("task", "node") == "link"; }

/// The homogeneous model --model names (sage for the typed models, which keep the
/// homogeneous recipe at its default).
inline ModelKind model_kind_from(const std::string& model) {
  if (is_typed_model(model)) return ModelKind::sage;
  try {
    return parse_model_kind(model);
  } catch (const InvalidArgument&) {
    throw UsageError("train: --model '" + model +
                     "': expected sage, gcn or gat (typed graphs: rgcn or hsage)");
  }
}

/// The schedule, the model's shape and its regularisation: --epochs to --heads.
inline void read_training_options(const Args& a, ModelKind kind, NodeClassificationOptions& o) {
  o.epochs = a.get_int("epochs", o.epochs, 1, 1'000'000);
  o.patience = a.get_int("patience", o.patience, -1, 1'000'000);
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
}

/// The metric, the device, the loaders' threads and seed split, the aggregator and the
/// input (features or a learned embedding), then the task and what it rules out.
inline void read_task_options(const Args& a, NodeClassificationOptions& o) {
  o.metric = parse_metric(a.get_or("metric", "auto"));
  o.device = parse_device(a.get_or("device", "cpu"));
  o.num_prefetch_threads = static_cast<unsigned>(a.get_int("prefetch-threads", 1, 0, 64));
  o.prefetch_nice = static_cast<int>(a.get_int("prefetch-nice", o.prefetch_nice, 0, 19));
  // schedule_as_batch itself honours DISTGRAPH_SCHED_BATCH=0; a malformed value fails here.
  read_sched_batch_environment();
  o.prefetch_depth = a.get_int("prefetch-depth", o.prefetch_depth, 1, 1024);
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
  if (is_link_task(a) && o.embedding_dim > 0)
    throw UsageError("train: --embedding-dim is for --task node");
  if (is_link_task(a) && o.sampler != "uniform")
    throw UsageError("train: --sampler " + o.sampler + " is for --task node");
}

/// --cache-mb and --cache-policy: each machine's cache of other machines' rows.
inline void read_cache_options(const Args& a, NodeClassificationOptions& o) {
  // A machine's cache lives in its shared memory: more than the machine has cannot fit.
  const auto mem_mib = static_cast<std::int64_t>(::sysconf(_SC_PHYS_PAGES)) *
                       static_cast<std::int64_t>(::sysconf(_SC_PAGE_SIZE)) / (1 << 20);
  o.cache_mb = a.get_int("cache-mb", o.cache_mb, 0, std::max<std::int64_t>(mem_mib, 1));
  o.cache_policy = a.get_or("cache-policy", o.cache_policy);
  if (o.cache_policy != "presample" && o.cache_policy != "halo")
    throw UsageError("train: --cache-policy '" + o.cache_policy + "': expected presample or halo");
}

/// --eval, --eval-every and --save-embeddings: model selection and what follows training.
inline void read_eval_options(const Args& a, NodeClassificationOptions& o) {
  try {
    o.eval = parse_eval_mode(a.get_or("eval", "full"));
  } catch (const InvalidArgument&) {
    throw UsageError("train: --eval '" + a.get_or("eval", "") + "': expected full or sampled");
  }
  o.eval_every = a.get_int("eval-every", o.eval_every, 1, 1'000'000);
  if (is_link_task(a)) {
    for (const char* opt : {"eval", "save-embeddings"})
      if (a.has(opt)) throw UsageError(std::string("train: --") + opt + " is for --task node");
  }
  if (a.has("save-embeddings") && o.embedding_dim > 0)
    throw UsageError(
        "train: --save-embeddings needs a model of the node features (not --embedding-dim)");
}

/// The recipe from the command line (every value checked; UsageError otherwise), starting
/// from the default recipe of --model (typed models leave the homogeneous one at sage).
inline NodeClassificationOptions recipe_from(const Args& a) {
  const auto model = a.get_or("model", "sage");
  const ModelKind kind = model_kind_from(model);
  NodeClassificationOptions o = node_classification_recipe(kind);
  read_training_options(a, kind, o);
  read_task_options(a, o);
  read_cache_options(a, o);
  if (is_link_task(a) && kind != ModelKind::sage)
    throw UsageError("train: --model " + model +
                     " is for --task node (link prediction trains "
                     "GraphSAGE)");
  read_eval_options(a, o);
  o.out = std::filesystem::absolute(a.get_or("out", "distgraph-run"));
  o.resume = a.has("resume");
  return o;
}

/// Throws UsageError for an option of the homogeneous recipe that a typed run cannot honour
/// (checked before the dataset is partitioned, and again where a launched trainer starts).
inline void check_typed_recipe(const Args& a, const NodeClassificationOptions& recipe) {
  if (a.get_or("task", "node") != "node")
    throw UsageError("train: typed graphs train --task node only");
  for (const char* opt : {"eval", "save-embeddings"})
    if (a.has(opt)) throw UsageError(std::string("train: --") + opt + " is for homogeneous graphs");
  if (recipe.sampler != "uniform")
    throw UsageError("train: --sampler " + recipe.sampler +
                     " is for homogeneous graphs (typed graphs sample per relation)");
}

/// Copies what every task's run takes from the homogeneous recipe `plain`, whatever the
/// task: the epoch loop's patience, evaluation interval and resume, the seed, the device,
/// the loaders' threads, the run folder and the collectives' timeout.
template <class Options>
void copy_run_options(const NodeClassificationOptions& plain, Options& o) {
  o.patience = plain.patience;
  o.eval_every = plain.eval_every;
  o.resume = plain.resume;
  o.seed = plain.seed;
  o.device = plain.device;
  o.num_prefetch_threads = plain.num_prefetch_threads;
  o.prefetch_nice = plain.prefetch_nice;
  o.prefetch_sched_batch = plain.prefetch_sched_batch;
  o.prefetch_depth = plain.prefetch_depth;
  o.out = plain.out;
  o.collective_timeout = plain.collective_timeout;
}

/// The typed recipe from the command line: the shared options of `plain` plus the
/// typed ones (--model, --target-ntype, --relation-fanouts, --num-bases, --combine,
/// --embedding-dim for featureless types).
inline HeteroNodeClassificationOptions hetero_recipe_from(const Args& a,
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
  copy_run_options(plain, o);
  return o;
}

/// The link prediction recipe (--task link): the shared options of `plain`, with
/// --weight-decay and --dropout defaulting to link prediction's own, and --negatives.
inline LinkPredictionOptions link_recipe_from(const Args& a,
                                              const NodeClassificationOptions& plain) {
  LinkPredictionOptions lp;
  if (a.has("epochs")) lp.epochs = plain.epochs;
  lp.hidden = plain.hidden;
  lp.fanouts = plain.fanouts;
  lp.batch_size = plain.batch_size;
  lp.eval_batch_size = plain.batch_size;  // validation and test pairs batch as training's
  lp.num_negatives = a.get_int("negatives", lp.num_negatives, 1, 1000);
  lp.lr = plain.lr;
  lp.weight_decay = a.get_double("weight-decay", lp.weight_decay, 0, 100);
  lp.dropout = a.get_double("dropout", lp.dropout, 0, 0.99);
  lp.aggregator = plain.aggregator;
  copy_run_options(plain, lp);
  return lp;
}

}  // namespace distgraph::cli

// train_node_classification: the whole run behind `distgraph train` — the split of the
// masks over trainers, data loaders, the model (GraphSAGE, GCN or GAT), per-epoch
// validation, the run log and checkpoints — for any DistGraph, standalone or distributed, with or
// without a group.
#pragma once

#include <torch/types.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/core/trace.hpp"
#include "distgraph/distributed/graph_concepts.hpp"
#include "distgraph/distributed/kv_client.hpp"
#include "distgraph/distributed/node_split.hpp"
#include "distgraph/distributed/row_cache.hpp"
#include "distgraph/loaders/loader_features.hpp"
#include "distgraph/loaders/node_data_loader.hpp"
#include "distgraph/nn/node_model.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/sampling/labor_sampler.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "distgraph/tasks/full_evaluation.hpp"
#include "distgraph/tasks/run_log.hpp"
#include "distgraph/tasks/train_split.hpp"
#include "distgraph/tasks/training_run.hpp"
#include "distgraph/train/checkpoint.hpp"
#include "distgraph/train/trainer.hpp"

namespace distgraph {

/// The recipe of a node-classification run. The defaults are `distgraph train`'s, the
/// settings behind the accuracies in docs/GUIDE.md (GraphSAGE-mean, hidden 64, fanouts
/// {10, 25}, Adam lr 0.01 with weight decay 5e-4, dropout 0.5 on inputs and hidden
/// layers, at most 200 epochs with early stopping, the best validation epoch's model);
/// users should not need to tune them (docs/GUIDE.md, "The default recipe"). The other
/// models' defaults are node_classification_recipe(ModelKind).
struct NodeClassificationOptions {
  ModelKind model = ModelKind::sage;
  /// The most epochs a run trains: the reference recipes' 200 full-batch steps, which a
  /// graph of one batch per epoch needs (50 left Amazon Photo 3.5 points short).
  std::int64_t epochs = 200;
  /// Early stopping: the run ends once its best validation epoch is `patience` epochs
  /// behind (the selected model is that epoch's either way). -1: patience_for_steps worth
  /// of optimizer steps, at least min_patience_epochs, so a graph of one batch per epoch
  /// waits 100 epochs and a graph of many batches 50; 0: never. No effect without a validation set
  /// or with a learned input embedding.
  std::int64_t patience = -1;
  std::int64_t hidden = 64;
  std::vector<std::int64_t> fanouts{10, 25};  ///< one per layer, input layer first
  /// The training loader's neighbour sampler, by wire name: "uniform" (UniformSampler) or
  /// "labor" (LaborSampler: the same expected fanout, far fewer distinct input nodes per
  /// batch). Validation and test take full neighbourhoods either way.
  std::string sampler = "uniform";
  std::int64_t batch_size = 1000;  ///< training seeds per trainer and batch
  double lr = 0.01;
  double weight_decay = 5e-4;
  double dropout = 0.5;                      ///< after each hidden layer
  double input_dropout = 0.5;                ///< on the input features
  Aggregator aggregator = Aggregator::mean;  ///< GraphSAGE's
  std::int64_t heads = 8;                    ///< GAT: heads per hidden layer, dividing hidden
  double attn_dropout = 0.6;                 ///< GAT: on the attention coefficients
  Metric metric = Metric::automatic;         ///< ROC-AUC for two classes, else accuracy
  std::uint64_t seed = 0;                    ///< model init, shuffles, sampling and dropout
  torch::Device device = torch::kCPU;
  unsigned num_prefetch_threads = 1;  ///< per loader; 0 = sample inside next()
  /// Even out the trainers' training work (balance_shares, costing a seed by its in-degree
  /// capped at the last fanout) instead of node_split's plain locality split. For graphs
  /// with skewed degrees, where a partition's seeds can cost far more than another's.
  bool balance_split = true;
  std::int64_t eval_batch_size = 4096;  ///< validation and test: destinations per batch
  /// How the validation metric is computed (EvalMode): full (exact, by layer-wise
  /// inference) or sampled (the training fanouts). The test metric is exact either way.
  EvalMode eval = EvalMode::full;
  /// Validate after every `eval_every`-th epoch and after the last; other epochs log no
  /// validation metric (NaN) and cannot be selected.
  std::int64_t eval_every = 1;
  std::string feature = "feat", label = "label";
  /// > 0: the input is a learnable DistEmbedding of this width per node (trained by
  /// SparseAdam on the servers) instead of `feature`; 0: `feature`, or an embedding of
  /// width `hidden` when the graph has no such node data.
  std::int64_t embedding_dim = 0;
  double embedding_lr = 0.01;               ///< SparseAdam's learning rate
  std::string embedding_name = "node_emb";  ///< the embedding's tensor on the servers
  /// MiB of each machine's shared cache of other machines' `feature` rows, filled before
  /// the first epoch (DistGraph::cache_remote_rows; docs/GUIDE.md "The row cache"); 0: no
  /// cache. Standalone runs and learnable inputs have none.
  std::int64_t cache_mb = 256;
  /// How the cache's rows are chosen: "presample" (the input nodes of 16 pre-sampled
  /// training batches, most frequent first, then the halo rows they missed) or "halo" (the
  /// other machines' in-neighbours of this partition's nodes, by how many edges lead from
  /// them into it).
  std::string cache_policy = "presample";
  std::string train_mask = "train_mask", val_mask = "val_mask", test_mask = "test_mask";
  /// Where rank 0 writes metrics.csv, curves.svg, result.json and checkpoint.pt after
  /// every epoch; empty: nothing is written.
  std::filesystem::path out;
  /// Continue from out/checkpoint.pt (rank 0 reads it; the bytes reach every trainer
  /// through the group, so only rank 0 needs to see `out`).
  bool resume = false;
  /// Bounds every collective (a dead trainer stops the others within it).
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(5)};
};

/// The default recipe of model `m`: GraphSAGE's is NodeClassificationOptions{}. GCN's is
/// Kipf & Welling's (../shared/data/REFERENCE.md): hidden 16, dropout 0.5 on the input
/// and hidden layer, Adam lr 0.01, weight decay 5e-4, 200 epochs, over full
/// neighbourhoods (fanouts -1: with batches larger than the training set, full-batch
/// training, as the reference). GAT's is Velickovic et al.'s Cora recipe: 8 heads of 8
/// (hidden 64), dropout 0.6 on every layer's input and on the attention, Adam lr 0.005,
/// weight decay 5e-4, 200 epochs (no early stopping), full neighbourhoods.
inline NodeClassificationOptions node_classification_recipe(ModelKind m) {
  NodeClassificationOptions o;
  o.model = m;
  if (m == ModelKind::gcn) {
    o.hidden = 16;
    o.epochs = 200;
    o.patience = 0;
    o.fanouts = {-1, -1};
  } else if (m == ModelKind::gat) {
    o.hidden = 64;
    o.heads = 8;
    o.epochs = 200;
    o.patience = 0;
    o.fanouts = {-1, -1};
    o.lr = 0.005;
    o.dropout = o.input_dropout = o.attn_dropout = 0.6;
  }
  return o;
}

/// Optimizer steps without a better validation metric after which a run stops, by default.
inline constexpr std::int64_t patience_for_steps = 100;
/// The least default patience in epochs. A validation metric that climbs slowly through
/// noisy plateaus needs it: Tolokers (6 batches an epoch) stopped at epochs 51-103 with 17
/// epochs of patience, 1.4 points under REFERENCE.md; with 50, seed 0 ran to its best
/// epoch 135 and came within 0.3 (PERFORMANCE.md, "The default recipe").
inline constexpr std::int64_t min_patience_epochs = 50;

/// The patience in epochs for `patience` (NodeClassificationOptions::patience) with
/// `batches_per_epoch` optimizer steps an epoch; 0: never stop early.
inline std::int64_t resolve_patience(std::int64_t patience, std::int64_t batches_per_epoch) {
  if (patience >= 0) return patience;
  const std::int64_t steps = std::max<std::int64_t>(batches_per_epoch, 1);
  return std::max(min_patience_epochs, (patience_for_steps + steps - 1) / steps);
}

/// The samplers NodeClassificationOptions::sampler may name: those that take a fanout per
/// layer and no parameters.
inline constexpr std::array<std::string_view, 2> node_classification_samplers{
    UniformSampler::wire_name, LaborSampler::wire_name};

/// Whether `name` is one of node_classification_samplers.
inline bool is_node_classification_sampler(std::string_view name) {
  return std::find(node_classification_samplers.begin(), node_classification_samplers.end(),
                   name) != node_classification_samplers.end();
}

/// What a node-classification run reached: RunResult and the selected model (the one
/// `test` measures), on every trainer.
struct NodeClassificationResult : RunResult {
  NodeModel model{nullptr};
};

namespace detail {

/// The global IDs where boolean node data `name` is true, read in chunks (the graph may
/// be large); an absent tensor is an empty set.
template <class Graph>
std::vector<std::int64_t> masked_nodes(const Graph& g, const std::string& name) {
  const std::int64_t n = g.num_nodes();
  std::vector<std::int64_t> out;
  std::optional<typename Graph::template tensor_type<bool>> mask;
  try {
    mask = g.template ndata<bool>(name);
  } catch (const NotFound&) {
    return out;
  }
  constexpr std::int64_t chunk = 1 << 20;
  std::vector<std::int64_t> ids;
  std::unique_ptr<bool[]> values(new bool[static_cast<std::size_t>(std::min(chunk, n))]);
  for (std::int64_t lo = 0; lo < n; lo += chunk) {
    const std::int64_t hi = std::min(n, lo + chunk);
    ids.resize(static_cast<std::size_t>(hi - lo));
    for (std::int64_t v = lo; v < hi; ++v) ids[static_cast<std::size_t>(v - lo)] = v;
    mask->pull(ids, std::span<bool>(values.get(), ids.size()));
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (values[i]) out.push_back(ids[i]);
  }
  return out;
}

/// 1 + the largest label among `ids` (the classes a model must output).
template <class Graph>
std::int64_t count_classes(const Graph& g, const std::string& label,
                           std::span<const std::vector<std::int64_t>* const> sets) {
  const auto labels = g.template ndata<std::int64_t>(label);
  std::int64_t top = -1;
  for (const auto* ids : sets)
    for (std::size_t lo = 0; lo < ids->size(); lo += (1u << 20)) {
      const auto n = std::min<std::size_t>(ids->size() - lo, 1u << 20);
      for (const auto y : labels.pull(std::span<const std::int64_t>(ids->data() + lo, n))) {
        if (y < 0)
          throw InvalidArgument("node data '" + label + "': negative label " + std::to_string(y) +
                                " on a labelled node");
        top = std::max(top, y);
      }
    }
  return top + 1;
}

/// Throws InvalidArgument for a recipe outside its ranges: any recipe with the fields
/// node classification shares (this one's, or HeteroNodeClassificationOptions).
template <class Options>
void check_options(const Options& o) {
  const auto positive = [](std::int64_t v, const char* what) {
    if (v < 1)
      throw InvalidArgument(std::string("train: ") + what + " " + std::to_string(v) +
                            "; expected >= 1");
  };
  positive(o.epochs, "epochs");
  if constexpr (requires { o.patience; }) {
    if (o.patience < -1)
      throw InvalidArgument("train: patience " + std::to_string(o.patience) +
                            "; expected >= 0 epochs (0: never stop early) or -1 (automatic)");
  }
  positive(o.hidden, "hidden");
  positive(o.batch_size, "batch size");
  positive(o.eval_batch_size, "evaluation batch size");
  if constexpr (requires { o.eval_every; }) positive(o.eval_every, "evaluation interval");
  if (o.fanouts.empty()) throw InvalidArgument("train: no fanouts; expected one per layer");
  for (auto f : o.fanouts)
    if (f == 0 || f < -1)
      throw InvalidArgument("train: fanout " + std::to_string(f) + "; expected >= 1 or -1 (all)");
  if (!(o.lr > 0)) throw InvalidArgument("train: learning rate must be > 0");
  if (!(o.weight_decay >= 0)) throw InvalidArgument("train: weight decay must be >= 0");
  if (!(o.dropout >= 0 && o.dropout < 1) || !(o.input_dropout >= 0 && o.input_dropout < 1))
    throw InvalidArgument("train: dropout must be in [0, 1)");
  if constexpr (requires { o.heads; }) {
    if (o.model == ModelKind::gat && (o.heads < 1 || o.hidden % o.heads != 0))
      throw InvalidArgument("train: GAT heads " + std::to_string(o.heads) +
                            " do not divide hidden " + std::to_string(o.hidden));
    if (!(o.attn_dropout >= 0 && o.attn_dropout < 1))
      throw InvalidArgument("train: attention dropout must be in [0, 1)");
  }
  if constexpr (requires { o.sampler; }) {
    if (!is_node_classification_sampler(o.sampler))
      throw InvalidArgument("train: sampler '" + o.sampler + "'; expected uniform or labor");
  }
  if constexpr (requires { o.cache_mb; }) {
    if (o.cache_mb < 0)
      throw InvalidArgument("train: cache size " + std::to_string(o.cache_mb) +
                            " MiB; expected >= 0 (0: no cache)");
    if (o.cache_policy != "presample" && o.cache_policy != "halo")
      throw InvalidArgument("train: cache policy '" + o.cache_policy +
                            "'; expected presample or halo");
  }
}

/// Batches pre-sampled (from epochs no training run uses) to rank a row cache's rows.
inline constexpr std::int64_t cache_presample_batches = 16;

/// Fills the machines' row caches of input feature `feature` for the training loader
/// (o.cache_mb, o.cache_policy) where the graph can cache; collective. Returns what this
/// trainer's machine holds.
template <class Graph, class Loader>
RowCacheStats cache_input_rows(const Graph& g, const Loader& loader,
                               const NodeClassificationOptions& o) {
  if constexpr (requires {
                  g.cache_remote_rows(o.feature, 0, [] { return std::vector<std::int64_t>{}; });
                }) {
    const auto budget = static_cast<std::size_t>(o.cache_mb) << 20;
    return g.cache_remote_rows(o.feature, budget, [&] {
      // The halo: other machines' in-neighbours of the partition, by edges into it.
      RowFrequency halo;
      const Partition& p = *g.local_partition();
      const auto& src = p.graph.indices;
      for (std::size_t i = 0; i < src.size(); ++i)
        if (src[i] >= p.num_inner_nodes)
          halo.add(std::span<const std::int64_t>(&p.nid[static_cast<std::size_t>(src[i])], 1));
      if (o.cache_policy == "halo") return halo.ranked();
      // Epochs -1, -2, ...: samples like training's, but none a training epoch repeats.
      RowFrequency freq;
      const std::int64_t per_epoch = loader.num_batches();
      for (std::int64_t i = 0; i < cache_presample_batches; ++i)
        freq.add(loader.sample_input_nodes(-1 - i / per_epoch, i % per_epoch));
      // Then the halo rows the pre-sampled batches missed, while the budget lasts.
      std::vector<std::int64_t> ranked = freq.ranked();
      std::unordered_set<std::int64_t> seen(ranked.begin(), ranked.end());
      for (const auto id : halo.ranked())
        if (seen.insert(id).second) ranked.push_back(id);
      return ranked;
    });
  } else {
    return {};
  }
}

/// The model `o` names, for `in_feats` inputs and `num_classes` outputs (one layer per
/// fanout).
inline NodeModel make_node_model(const NodeClassificationOptions& o, std::int64_t in_feats,
                                 std::int64_t num_classes) {
  return make_node_model(NodeModelSpec{.model = o.model,
                                       .hidden = o.hidden,
                                       .num_layers = static_cast<std::int64_t>(o.fanouts.size()),
                                       .dropout = o.dropout,
                                       .input_dropout = o.input_dropout,
                                       .aggregator = o.aggregator,
                                       .heads = o.heads,
                                       .attn_dropout = o.attn_dropout},
                         in_feats, num_classes);
}

/// The model's name in a checkpoint's run identity ("graphsage" as before models could
/// be chosen, so those checkpoints still resume).
inline const char* model_identity(ModelKind m) {
  return m == ModelKind::sage ? "graphsage" : to_string(m);
}

/// This trainer's training seeds: node_split's share, or with o.balance_split (and a
/// graph that reports in-degrees, several trainers) every share rebalanced by cost.
template <class Graph>
std::vector<std::int64_t> train_share(const Graph& g, const std::vector<std::int64_t>& train_all,
                                      const NodeClassificationOptions& o,
                                      const SplitOptions& split) {
  if constexpr (requires(std::span<const std::int64_t> ids) { g.in_degrees(ids); }) {
    if (o.balance_split && split.num_trainers > 1) {
      std::vector<std::vector<std::int64_t>> shares;
      for (std::int32_t r = 0; r < split.num_trainers; ++r) {
        SplitOptions s = split;
        s.rank = r;
        shares.push_back(node_split(train_all, g.book(), s));
      }
      // Sampling and training a seed grows with its sampled in-neighbours.
      const auto deg = g.in_degrees(train_all);
      // (id, degree) sorted by id: 16 bytes a seed, where a hash map took about 40.
      std::vector<std::pair<std::int64_t, std::int64_t>> degree(train_all.size());
      for (std::size_t i = 0; i < train_all.size(); ++i) degree[i] = {train_all[i], deg[i]};
      std::sort(degree.begin(), degree.end());
      const std::int64_t cap = o.fanouts.back() < 0 ? INT64_MAX : o.fanouts.back();
      balance_shares(shares, [&](std::int64_t v) {
        const auto it = std::lower_bound(degree.begin(), degree.end(),
                                         std::pair<std::int64_t, std::int64_t>{v, INT64_MIN});
        return 1 + std::min(it->second, cap);  // every share's ID is a training node
      });
      return shares[static_cast<std::size_t>(split.rank)];
    }
  }
  return node_split(train_all, g.book(), split);
}

}  // namespace detail

/// Trains o.model (GraphSAGE, GCN or GAT) on the node classification task of `g` (node data `feat`,
/// `label` and the boolean masks named in `o`) and evaluates it: each trainer of `groups` (a
/// TrainerGroups, or one group for everything; none: one trainer) takes its node_split
/// share of the training nodes; every epoch trains,
/// then evaluates on the validation set; the test set is evaluated at the end. Rank 0
/// writes the run log and a checkpoint into `o.out` after every epoch and result.json at
/// the end. Collective over `groups`. Throws InvalidArgument for a bad recipe or an empty
/// training set, CheckpointError for a checkpoint that does not fit, and whatever the
/// graph, loaders and collectives throw (a dead peer: CollectiveError within
/// o.collective_timeout).
template <TrainingGraph Graph>
NodeClassificationResult train_node_classification(const Graph& g,
                                                   const NodeClassificationOptions& o,
                                                   const TrainerGroups& groups = {},
                                                   const EpochCallback& on_epoch = {}) {
  detail::check_options(o);
  const auto& group = groups.control;
  const std::int32_t rank = group ? group->getRank() : 0;
  const std::int32_t world = group ? group->getSize() : 1;
  // The training seeds. With the same number of trainers on every partition's machine,
  // from counts (local_train_share: each trainer reads its own partition's mask, nothing
  // of the whole graph); otherwise every trainer lists the whole training set and takes
  // its node_split share.
  std::vector<std::int64_t> train_all, train_ids;
  std::int64_t num_train = 0;
  const bool local_split =
      group && local_split_applies(world, g.book().num_partitions());
  if (local_split) {
    const std::int64_t cap = o.fanouts.back() < 0 ? INT64_MAX : o.fanouts.back();
    LocalShare share = local_train_share(g,
                                         LocalSplitOptions{.mask = o.train_mask,
                                                           .rank = rank,
                                                           .world = world,
                                                           .balance = o.balance_split,
                                                           .degree_cap = cap,
                                                           .timeout = o.collective_timeout},
                                         group.get());
    train_ids = std::move(share.ids);
    num_train = share.total;
  } else {
    train_all = detail::masked_nodes(g, o.train_mask);
    num_train = static_cast<std::int64_t>(train_all.size());
  }
  if (num_train == 0)
    throw InvalidArgument("train: node data '" + o.train_mask + "' marks no training node");
  NodeClassificationResult res;
  res.extra["sampler"] = o.sampler;
  res.extra["model"] = to_string(o.model);
  res.extra["eval"] = to_string(o.eval);
  res.extra["eval_every"] = o.eval_every;
  std::int64_t emb_dim = o.embedding_dim;
  if (emb_dim < 1) {
    try {
      res.feat_dim = detail::open_feature(g, o.feature).num_cols();
    } catch (const NotFound&) {
      emb_dim = o.hidden;  // a graph without features learns its inputs
    }
  }
  if (emb_dim > 0) res.feat_dim = emb_dim;

  // Validation and test nodes: where the graph allows layer-wise inference (node features
  // as the input, one inference share per trainer of the layout), each trainer reads the
  // masks and labels of its own share only and exact metrics come from layer-wise passes;
  // otherwise every trainer lists the masked nodes and evaluates its exact split of them
  // over full-neighbourhood blocks.
  std::optional<FullEvaluation<Graph>> full_eval;
  if constexpr (supports_full_evaluation<Graph>) {
    if (emb_dim == 0 && g.client().layout().num_trainers == world)
      full_eval.emplace(g, FullEvaluationOptions{.feature = o.feature,
                                                 .label = o.label,
                                                 .batch_size = o.eval_batch_size,
                                                 .rank = rank,
                                                 .device = o.device,
                                                 .timeout = o.collective_timeout});
  }
  std::vector<std::int64_t> val_all, test_all;
  ShareNodes val_share, test_share;
  std::int64_t num_val = 0, num_test = 0;  ///< over all trainers
  if (full_eval) {
    val_share = full_eval->nodes_of(o.val_mask);
    test_share = full_eval->nodes_of(o.test_mask);
    std::vector<double> counts{static_cast<double>(val_share.ids.size()),
                               static_cast<double>(test_share.ids.size())};
    if (group) counts = all_reduce_sum(*group, counts, o.collective_timeout);
    num_val = static_cast<std::int64_t>(counts[0]);
    num_test = static_cast<std::int64_t>(counts[1]);
  } else {
    val_all = detail::masked_nodes(g, o.val_mask);
    test_all = detail::masked_nodes(g, o.test_mask);
    num_val = static_cast<std::int64_t>(val_all.size());
    num_test = static_cast<std::int64_t>(test_all.size());
  }
  {
    // Labels this trainer reads: its own seeds' on the local split, else every
    // training node's; then the largest over the group where trainers read different ones.
    const std::vector<std::int64_t>* sets[] = {local_split ? &train_ids : &train_all, &val_all,
                                               &test_all};
    std::int64_t top = detail::count_classes(g, o.label, sets) - 1;
    for (const ShareNodes* s : {&val_share, &test_share})
      if (s->labels.numel() > 0) top = std::max(top, s->labels.max().item<std::int64_t>());
    if (group && (full_eval || local_split))
      top = all_reduce_min_max(*group, top, o.collective_timeout).second;
    res.num_classes = top + 1;
  }

  const SplitOptions even{.rank = rank, .num_trainers = world, .force_even = true};
  const SplitOptions exact{.rank = rank, .num_trainers = world, .force_even = false};
  if (!local_split) train_ids = detail::train_share(g, train_all, o, even);
  using Loader = NodeDataLoader<Graph>;
  const LoaderOptions train_lo{.batch_size = o.batch_size,
                               .shuffle = true,
                               .seed = o.seed,
                               .rank = rank,
                               .num_prefetch_threads = o.num_prefetch_threads,
                               .prefetch_next_epoch = true,
                               .last_epoch = o.epochs - 1,
                               .feature = emb_dim > 0 ? std::string() : o.feature,
                               .label = o.label,
                               .sampler = SamplerSpec{o.sampler, {}}};
  Loader train_loader(g, train_ids, o.fanouts, train_lo);
  if (!train_lo.feature.empty() && o.cache_mb > 0) {
    const RowCacheStats cache = detail::cache_input_rows(g, train_loader, o);
    res.extra["cache_rows"] = cache.rows;
    res.extra["cache_bytes"] = cache.bytes;
  }
  // Loaders of blocks for what layer-wise passes do not evaluate: sampled validation
  // (of this trainer's share of validation nodes), and everything without full_eval.
  const std::vector<std::int64_t> full(o.fanouts.size(), -1);
  auto eval_loader = [&](const std::vector<std::int64_t>& all, bool split,
                         const std::vector<std::int64_t>& fanouts) {
    if (all.empty()) return detail::MaybeLoader<Loader>();
    const auto mine = split ? node_split(all, g.book(), exact) : all;
    if (mine.empty()) return detail::MaybeLoader<Loader>();
    LoaderOptions lo = train_lo;
    lo.batch_size = o.eval_batch_size;
    lo.shuffle = false;
    lo.prefetch_next_epoch = false;  // evaluations are not every epoch
    return detail::MaybeLoader<Loader>(Loader(g, mine, fanouts, lo));
  };
  const auto& val_fanouts = o.eval == EvalMode::sampled ? o.fanouts : full;
  auto val_loader = full_eval ? (o.eval == EvalMode::sampled
                                     ? eval_loader(val_share.ids, false, val_fanouts)
                                     : detail::MaybeLoader<Loader>())
                              : eval_loader(val_all, true, val_fanouts);
  auto test_loader = full_eval ? detail::MaybeLoader<Loader>() : eval_loader(test_all, true, full);

  torch::manual_seed(o.seed);
  TrainerOptions to{.lr = o.lr, .weight_decay = o.weight_decay, .device = o.device};
  to.all_reduce.timeout = o.collective_timeout;
  to.gradient_group = groups.gradients;
  Trainer<NodeModel> trainer(detail::make_node_model(o, res.feat_dim, res.num_classes), to, group);
  // The metrics; collective. Validation as o.eval says, the test metric exact. An empty
  // set scores 0 without a layer-wise pass (every trainer knows the global counts).
  const auto validate = [&](std::int64_t epoch, Metric m) {
    if (num_val == 0) return EvalResult{.metric = m};
    trace::Span span("validate");
    span.arg("epoch", epoch);
    if (full_eval && o.eval == EvalMode::full) {
      const ShareNodes* sets[] = {&val_share};
      return full_eval->evaluate(trainer.model(), sets, m, group.get())[0];
    }
    return trainer.evaluate(val_loader, epoch, m);
  };
  const auto test = [&](Metric m) {
    if (num_test == 0) return EvalResult{.metric = m};
    trace::Span span("test");
    if (full_eval) {
      const ShareNodes* sets[] = {&test_share};
      return full_eval->evaluate(trainer.model(), sets, m, group.get())[0];
    }
    return trainer.evaluate(test_loader, o.epochs, m);
  };
  using Client = typename Graph::client_type;
  std::optional<DistEmbedding<Client>> emb;
  if (emb_dim > 0) {
    emb = DistEmbedding<Client>::create(g.client_ptr(), o.embedding_name, emb_dim,
                                        {InitKind::uniform, -1.0, 1.0, o.seed});
    trainer.set_input_embedding(input_embedding(*emb, SparseAdam<Client>({*emb}, o.embedding_lr)));
  }
  detail::EmbeddingCheckpoints<DistEmbedding<Client>> emb_ckpt(emb);

  // What a checkpoint must agree on to be resumed by this run.
  // GraphSAGE's keys are those of checkpoints written before models could be chosen.
  nlohmann::json model_keys = {{"model", detail::model_identity(o.model)},
                               {"aggregator", to_string(o.aggregator)},
                               {"num_layers", static_cast<std::int64_t>(o.fanouts.size())},
                               {"hidden", o.hidden},
                               {"num_classes", res.num_classes},
                               {"num_train_nodes", num_train},
                               {"embedding_dim", emb_dim}};
  if (o.model == ModelKind::gat) model_keys["heads"] = o.heads;
  const auto identity =
      detail::run_identity("node_classification", g, res.feat_dim, o.seed, model_keys);
  // Model selection: the epoch with the best validation metric (the first of equals) is
  // the run's model; its state stays in memory on every trainer and, on rank 0, in
  // out/best.pt. Not with a learned input embedding: its rows on the servers move on
  // every epoch, so the last epoch is the model then (as without a validation set).
  const bool select = num_val > 0 && emb_dim == 0;
  std::int64_t best_epoch = -1;
  double best_val = -1;
  std::string best_bytes;  ///< the best epoch's checkpoint, when this process trained it
  if (o.resume) {
    CheckpointReader ckpt = detail::resume_run(trainer, identity, o.out, rank, res);
    best_epoch = ckpt.meta().value("best_epoch", std::int64_t{-1});
    best_val = ckpt.meta().value("best_val", -1.0);
    // Rank 0 has the servers load their rows back while the others wait.
    if (rank == 0) emb_ckpt.restore(ckpt.meta(), ckpt.path());
    if (emb) g.client().barrier("distgraph:resume " + o.embedding_name);
  } else if (rank == 0 && !o.out.empty()) {
    emb_ckpt.adopt_stale(o.out / "checkpoint.pt");
  }
  const std::int64_t start = res.resumed_from;

  if (rank == 0 && !o.out.empty()) std::filesystem::create_directories(o.out);
  Metric metric = o.metric;
  double val = 0, epoch_s_sum = 0;
  // Every trainer has as many batches (an even split) and sees the same validation
  // metric (reduced over the group), so all stop after the same epoch.
  const std::int64_t patience =
      select ? resolve_patience(o.patience, train_loader.num_batches()) : 0;
  res.extra["patience"] = patience;
  std::int64_t done = start;  ///< epochs trained in all
  bool stopped_early = false;
  for (std::int64_t e = start; e < o.epochs; ++e) {
    // Checked before the epoch, so a resumed run stops where the uninterrupted one did.
    if (patience > 0 && best_epoch >= 0 && (e - 1) - best_epoch >= patience) {
      stopped_early = true;
      break;
    }
    torch::manual_seed(detail::epoch_torch_seed(o.seed, e, rank));
    const EpochStats st = trainer.train_epoch(train_loader, e, metric);
    // The epoch's batches' own traffic: the loader makes the next epoch's first batches
    // before this one ends, so a count between the epoch's ends would mix epochs.
    std::vector<double> traffic{static_cast<double>(st.traffic.rows),
                                static_cast<double>(st.traffic.bytes),
                                static_cast<double>(st.traffic.cached_rows)};
    if (group) traffic = all_reduce_sum(*group, traffic, o.collective_timeout);
    metric = st.metric;
    EvalResult v{.metric = metric,
                 .value = std::numeric_limits<double>::quiet_NaN(),
                 .loss = std::numeric_limits<double>::quiet_NaN()};
    if ((e + 1) % o.eval_every == 0 || e + 1 == o.epochs) {
      v = validate(e, metric);
      val = v.value;
    }
    epoch_s_sum += st.epoch_s;
    if (select && v.value > best_val) {
      best_val = v.value;
      best_epoch = e;
      best_bytes = checkpoint_bytes(*trainer.model(), trainer.optimizer(),
                                    {{"run", identity}, {"epochs_done", e + 1}, {"best_epoch", e}});
      // Before checkpoint.pt names it: a crash in between leaves the previous pair intact.
      if (rank == 0 && !o.out.empty()) write_checkpoint_file(o.out / "best.pt", best_bytes);
    }
    const EpochRow row{
        .epoch = e,
        .loss = st.loss,
        .train_metric = st.train_metric,
        .val_metric = v.value,
        .epoch_s = st.epoch_s,
        .sample_s = st.sample_s,
        .fetch_s = st.fetch_s,
        .compute_s = st.compute_s,
        .allreduce_s = st.allreduce_s,
        .remote_rows = static_cast<std::int64_t>(traffic[0]),
        .remote_bytes = static_cast<std::int64_t>(traffic[1]),
        .cache_hit_rate = traffic[2] > 0 ? traffic[2] / (traffic[0] + traffic[2]) : 0.0,
        .val_loss = v.loss,
        .copy_s = st.copy_s};
    if (rank == 0) {
      detail::publish_epoch(
          res, row, metric, o.out, trainer, identity,
          [&] {
            nlohmann::json meta = emb_ckpt.save(e + 1);
            meta["best_epoch"] = best_epoch;
            meta["best_val"] = best_val;
            return meta;
          },
          on_epoch);
      if (!o.out.empty()) emb_ckpt.committed();
    }
    done = e + 1;
  }
  if (done == start) {  // nothing left to train: report the checkpoint's model
    if (metric == Metric::automatic)
      metric = res.num_classes == 2 ? Metric::roc_auc : Metric::accuracy;
    val = validate(o.epochs, metric).value;
  }
  // The selected model, unless it is the one trained last. A best epoch from before a
  // resume is in rank 0's best.pt, which every trainer then receives.
  if (select && best_epoch >= 0 && best_epoch != done - 1) {
    if (best_bytes.empty())
      detail::read_checkpoint_for(o.out / "best.pt", identity, rank, trainer.group(),
                                  trainer.collective_timeout())
          .load(*trainer.model(), trainer.optimizer());
    else
      CheckpointReader(best_bytes, "best epoch " + std::to_string(best_epoch))
          .load(*trainer.model(), trainer.optimizer());
    val = best_val;
  }
  res.extra["best_epoch"] = select && best_epoch >= 0 ? best_epoch : done - 1;
  res.extra["stopped_early"] = stopped_early;
  res.metric = metric;
  res.val = val;
  res.test = test(metric).value;
  res.model = trainer.model();
  detail::finish_result(res, g, o, start, done, epoch_s_sum, rank, world);
  return res;
}

}  // namespace distgraph

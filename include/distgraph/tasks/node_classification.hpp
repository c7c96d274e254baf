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
#include "distgraph/tasks/epoch_loop.hpp"
#include "distgraph/tasks/full_evaluation.hpp"
#include "distgraph/tasks/recipe_options.hpp"
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
/// models' defaults are node_classification_recipe(ModelKind). The fields every task
/// shares (epochs: the reference recipes' 200 full-batch steps, which a graph of one batch
/// per epoch needs; patience, hidden, fanouts, ...) are RecipeOptions'.
struct NodeClassificationOptions : RecipeOptions {
  ModelKind model = ModelKind::sage;
  /// The training loader's neighbour sampler, by wire name: "uniform" (UniformSampler) or
  /// "labor" (LaborSampler: the same expected fanout, far fewer distinct input nodes per
  /// batch). Validation and test take full neighbourhoods either way.
  std::string sampler = "uniform";
  Aggregator aggregator = Aggregator::mean;  ///< GraphSAGE's
  std::int64_t heads = 8;                    ///< GAT: heads per hidden layer, dividing hidden
  double attn_dropout = 0.6;                 ///< GAT: on the attention coefficients
  /// Even out the trainers' training work (balance_shares, costing a seed by its in-degree
  /// capped at the last fanout) instead of node_split's plain locality split. For graphs
  /// with skewed degrees, where a partition's seeds can cost far more than another's.
  bool balance_split = true;
  /// How the validation metric is computed (EvalMode): full (exact, by layer-wise
  /// inference) or sampled (the training fanouts). The test metric is exact either way.
  EvalMode eval = EvalMode::full;
  std::string label = "label";
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

/// Throws InvalidArgument for a node-classification recipe outside its ranges.
inline void check_options(const NodeClassificationOptions& o) {
  check_recipe(o);
  if (o.model == ModelKind::gat && (o.heads < 1 || o.hidden % o.heads != 0))
    throw InvalidArgument("train: GAT heads " + std::to_string(o.heads) + " do not divide hidden " +
                          std::to_string(o.hidden));
  if (!(o.attn_dropout >= 0 && o.attn_dropout < 1))
    throw InvalidArgument("train: attention dropout must be in [0, 1)");
  if (!is_node_classification_sampler(o.sampler))
    throw InvalidArgument("train: sampler '" + o.sampler + "'; expected uniform or labor");
  if (o.cache_mb < 0)
    throw InvalidArgument("train: cache size " + std::to_string(o.cache_mb) +
                          " MiB; expected >= 0 (0: no cache)");
  if (o.cache_policy != "presample" && o.cache_policy != "halo")
    throw InvalidArgument("train: cache policy '" + o.cache_policy +
                          "'; expected presample or halo");
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

/// This trainer's training seeds. With the same number of trainers on every partition's
/// machine, from counts (local_train_share: each trainer reads its own partition's mask,
/// nothing of the whole graph); otherwise every trainer lists the whole training set
/// (`all`) and takes its share. Throws InvalidArgument when the mask marks no node.
struct TrainingSeeds {
  std::vector<std::int64_t> all, mine;
  std::int64_t total = 0;  ///< over all trainers
  bool local = false;      ///< from local_train_share (`all` is empty)
};

template <class Graph>
TrainingSeeds training_seeds(const Graph& g, const NodeClassificationOptions& o,
                             CollectiveGroup* group, std::int32_t rank, std::int32_t world) {
  TrainingSeeds seeds;
  seeds.local = group != nullptr && local_split_applies(world, g.book().num_partitions());
  if (seeds.local) {
    const std::int64_t cap = o.fanouts.back() < 0 ? INT64_MAX : o.fanouts.back();
    LocalShare share = local_train_share(g,
                                         LocalSplitOptions{.mask = o.train_mask,
                                                           .rank = rank,
                                                           .world = world,
                                                           .balance = o.balance_split,
                                                           .degree_cap = cap,
                                                           .timeout = o.collective_timeout},
                                         group);
    seeds.mine = std::move(share.ids);
    seeds.total = share.total;
  } else {
    seeds.all = masked_nodes(g, o.train_mask);
    seeds.total = static_cast<std::int64_t>(seeds.all.size());
  }
  if (seeds.total == 0)
    throw InvalidArgument("train: node data '" + o.train_mask + "' marks no training node");
  if (!seeds.local)
    seeds.mine = train_share(g, seeds.all, o,
                             SplitOptions{.rank = rank, .num_trainers = world, .force_even = true});
  return seeds;
}

/// The width of a learned input (o.embedding_dim, or o.hidden for a graph without
/// `feature`; 0: the features are the input), and res.feat_dim.
template <class Graph>
std::int64_t learned_input_width(const Graph& g, const NodeClassificationOptions& o,
                                 RunResult& res) {
  std::int64_t emb_dim = o.embedding_dim;
  if (emb_dim < 1) {
    try {
      res.feat_dim = open_feature(g, o.feature).num_cols();
    } catch (const NotFound&) {
      emb_dim = o.hidden;  // a graph without features learns its inputs
    }
  }
  if (emb_dim > 0) res.feat_dim = emb_dim;
  return emb_dim;
}

/// The validation and test nodes: with layer-wise inference (`full`), each trainer's own
/// share with its labels; otherwise every masked node (each trainer evaluates its exact
/// split of them over full-neighbourhood blocks). Counts are over all trainers.
struct EvalSets {
  std::vector<std::int64_t> val_all, test_all;
  ShareNodes val_share, test_share;
  std::int64_t num_val = 0, num_test = 0;
};

template <class Graph>
EvalSets eval_sets(const Graph& g, const NodeClassificationOptions& o,
                   const std::optional<FullEvaluation<Graph>>& full, CollectiveGroup* group) {
  EvalSets sets;
  if (full) {
    sets.val_share = full->nodes_of(o.val_mask);
    sets.test_share = full->nodes_of(o.test_mask);
    std::vector<double> counts{static_cast<double>(sets.val_share.ids.size()),
                               static_cast<double>(sets.test_share.ids.size())};
    if (group != nullptr) counts = all_reduce_sum(*group, counts, o.collective_timeout);
    sets.num_val = static_cast<std::int64_t>(counts[0]);
    sets.num_test = static_cast<std::int64_t>(counts[1]);
  } else {
    sets.val_all = masked_nodes(g, o.val_mask);
    sets.test_all = masked_nodes(g, o.test_mask);
    sets.num_val = static_cast<std::int64_t>(sets.val_all.size());
    sets.num_test = static_cast<std::int64_t>(sets.test_all.size());
  }
  return sets;
}

/// The classes a model must output: 1 + the largest label this trainer reads (its own
/// seeds' on the local split, else every training node's, and its evaluation sets'), the
/// largest over the group where trainers read different ones.
template <class Graph>
std::int64_t node_classes(const Graph& g, const NodeClassificationOptions& o,
                          const TrainingSeeds& seeds, const EvalSets& sets, bool full,
                          CollectiveGroup* group) {
  const std::vector<std::int64_t>* read[] = {seeds.local ? &seeds.mine : &seeds.all, &sets.val_all,
                                             &sets.test_all};
  std::int64_t top = count_classes(g, o.label, read) - 1;
  for (const ShareNodes* s : {&sets.val_share, &sets.test_share})
    if (s->labels.numel() > 0) top = std::max(top, s->labels.max().item<std::int64_t>());
  if (group != nullptr && (full || seeds.local))
    top = all_reduce_min_max(*group, top, o.collective_timeout).second;
  return top + 1;
}

/// A loader of this trainer's share of evaluation nodes `all` (`split`: node_split's
/// exact share; else `all` is the share) under `lo`, an evaluation_loader_options.
template <class Graph>
MaybeLoader<NodeDataLoader<Graph>> evaluation_loader(const Graph& g,
                                                     const std::vector<std::int64_t>& all,
                                                     bool split,
                                                     const std::vector<std::int64_t>& fanouts,
                                                     const LoaderOptions& lo, std::int32_t world) {
  using Loader = NodeDataLoader<Graph>;
  if (all.empty()) return MaybeLoader<Loader>();
  const SplitOptions exact{
      .rank = static_cast<std::int32_t>(lo.rank), .num_trainers = world, .force_even = false};
  const auto mine = split ? node_split(all, g.book(), exact) : all;
  if (mine.empty()) return MaybeLoader<Loader>();
  return MaybeLoader<Loader>(Loader(g, mine, fanouts, lo));
}

/// What a checkpoint must agree on to be resumed by this run. GraphSAGE's keys are those
/// of checkpoints written before models could be chosen.
template <class Graph>
nlohmann::json node_run_identity(const Graph& g, const NodeClassificationOptions& o,
                                 const RunResult& res, std::int64_t num_train,
                                 std::int64_t emb_dim) {
  nlohmann::json keys = {{"model", model_identity(o.model)},
                         {"aggregator", to_string(o.aggregator)},
                         {"num_layers", static_cast<std::int64_t>(o.fanouts.size())},
                         {"hidden", o.hidden},
                         {"num_classes", res.num_classes},
                         {"num_train_nodes", num_train},
                         {"embedding_dim", emb_dim}};
  if (o.model == ModelKind::gat) keys["heads"] = o.heads;
  return run_identity("node_classification", g, res.feat_dim, o.seed, keys);
}

/// Loaders for what layer-wise passes (`full`) do not evaluate: sampled validation (of
/// this trainer's share of validation nodes), and everything without them.
template <class Graph>
std::pair<MaybeLoader<NodeDataLoader<Graph>>, MaybeLoader<NodeDataLoader<Graph>>> node_eval_loaders(
    const Graph& g, const NodeClassificationOptions& o, const EvalSets& sets, bool full,
    const LoaderOptions& train_lo, std::int32_t world) {
  const LoaderOptions lo = evaluation_loader_options(train_lo, o.eval_batch_size);
  const std::vector<std::int64_t> all(o.fanouts.size(), -1);
  const auto& val_fanouts = o.eval == EvalMode::sampled ? o.fanouts : all;
  if (!full)
    return {evaluation_loader(g, sets.val_all, true, val_fanouts, lo, world),
            evaluation_loader(g, sets.test_all, true, all, lo, world)};
  if (o.eval == EvalMode::sampled)
    return {evaluation_loader(g, sets.val_share.ids, false, val_fanouts, lo, world),
            MaybeLoader<NodeDataLoader<Graph>>()};
  return {};
}

/// A learned input of width `emb_dim` (none for 0): its DistEmbedding, trained by
/// SparseAdam on the servers as `trainer`'s input.
template <class Graph, class TrainerT>
std::vector<DistEmbedding<typename Graph::client_type>> learned_node_inputs(
    const Graph& g, const NodeClassificationOptions& o, std::int64_t emb_dim, TrainerT& trainer) {
  using Client = typename Graph::client_type;
  std::vector<DistEmbedding<Client>> learned;
  if (emb_dim > 0) {
    learned.push_back(DistEmbedding<Client>::create(g.client_ptr(), o.embedding_name, emb_dim,
                                                    {InitKind::uniform, -1.0, 1.0, o.seed}));
    trainer.set_input_embedding(
        input_embedding(learned[0], SparseAdam<Client>({learned[0]}, o.embedding_lr)));
  }
  return learned;
}

}  // namespace detail

/// Trains o.model (GraphSAGE, GCN or GAT) on the node classification task of `g` (node
/// data `feat`, `label` and the boolean masks named in `o`) and evaluates it: each trainer
/// of `groups` (a TrainerGroups, or one group for everything; none: one trainer) takes its
/// node_split share of the training nodes; the epochs are train_epochs' (validation,
/// early stopping, the best epoch's model); the test set is evaluated at the end. Rank 0
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
  const detail::TrainingSeeds seeds = detail::training_seeds(g, o, group.get(), rank, world);
  NodeClassificationResult res;
  res.extra["sampler"] = o.sampler;
  res.extra["model"] = to_string(o.model);
  res.extra["eval"] = to_string(o.eval);
  res.extra["eval_every"] = o.eval_every;
  const std::int64_t emb_dim = detail::learned_input_width(g, o, res);
  // Where the graph allows layer-wise inference (node features as the input, one
  // inference share per trainer of the layout), exact metrics come from layer-wise passes.
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
  const auto sets = detail::eval_sets(g, o, full_eval, group.get());
  res.num_classes = detail::node_classes(g, o, seeds, sets, full_eval.has_value(), group.get());

  LoaderOptions train_lo =
      training_loader_options(o, rank, emb_dim > 0 ? std::string() : o.feature, o.label);
  train_lo.sampler = SamplerSpec{o.sampler, {}};
  // None of the recipe's models (GraphSAGE, GCN, GAT) reads a block's edge IDs.
  train_lo.edge_ids = EdgeIds::omitted;
  NodeDataLoader<Graph> train_loader(g, seeds.mine, o.fanouts, train_lo);
  if (!train_lo.feature.empty() && o.cache_mb > 0) {
    const RowCacheStats cache = detail::cache_input_rows(g, train_loader, o);
    res.extra["cache_rows"] = cache.rows;
    res.extra["cache_bytes"] = cache.bytes;
  }
  auto [val_loader, test_loader] =
      detail::node_eval_loaders(g, o, sets, full_eval.has_value(), train_lo, world);

  torch::manual_seed(o.seed);
  TrainerOptions to{.lr = o.lr, .weight_decay = o.weight_decay, .device = o.device};
  to.all_reduce.timeout = o.collective_timeout;
  to.gradient_group = groups.gradients;
  Trainer<NodeModel> trainer(detail::make_node_model(o, res.feat_dim, res.num_classes), to, group);
  // The metrics; collective. Validation as o.eval says, the test metric exact. An empty
  // set scores 0 without a layer-wise pass (every trainer knows the global counts).
  const auto evaluate = [&](const ShareNodes& share, auto& loader, std::int64_t num, bool exact,
                            std::int64_t epoch, Metric m) {
    if (num == 0) return EvalResult{.metric = m};
    if (full_eval && exact) {
      const ShareNodes* one[] = {&share};
      return full_eval->evaluate(trainer.model(), one, m, group.get())[0];
    }
    return trainer.evaluate(loader, epoch, m);
  };
  using Client = typename Graph::client_type;
  const auto learned = detail::learned_node_inputs(g, o, emb_dim, trainer);
  detail::EmbeddingCheckpoints<DistEmbedding<Client>> learned_rows(learned);
  const EpochLoopSetup setup{
      .identity = detail::node_run_identity(g, o, res, seeds.total, emb_dim),
      .rank = rank,
      .num_val = sets.num_val,
      .batches_per_epoch = train_loader.num_batches(),
      .metric = o.metric,
      .fallback_metric = res.num_classes == 2 ? Metric::roc_auc : Metric::accuracy};
  const EpochLoopOutcome run = train_epochs(
      trainer, [&](std::int64_t e, Metric m) { return trainer.train_epoch(train_loader, e, m); },
      [&](std::int64_t e, Metric m) {
        return evaluate(sets.val_share, val_loader, sets.num_val, o.eval == EvalMode::full, e, m);
      },
      learned_rows, o, setup, res, on_epoch);
  res.metric = run.metric;
  res.val = run.val;
  {
    std::optional<trace::Span> span;
    if (sets.num_test > 0) span.emplace("test");
    res.test =
        evaluate(sets.test_share, test_loader, sets.num_test, true, o.epochs, run.metric).value;
  }
  res.model = trainer.model();
  detail::finish_result(res, g, o, run.start, run.done, run.epoch_s_sum, rank, world);
  return res;
}

}  // namespace distgraph

// train_link_prediction: GraphSAGE node representations scored by dot products on the
// EdgeDataLoader's positive and negative pairs, with held-out edges for validation and
// test (ROC-AUC), the run log and checkpoints — standalone or distributed.
#pragma once

#include <torch/nn/functional/loss.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "distgraph/distributed/dist_graph.hpp"
#include "distgraph/distributed/graph_concepts.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/loaders/edge_data_loader.hpp"
#include "distgraph/loaders/loader_features.hpp"
#include "distgraph/nn/graph_sage.hpp"
#include "distgraph/tasks/epoch_loop.hpp"
#include "distgraph/tasks/recipe_options.hpp"
#include "distgraph/tasks/training_run.hpp"
#include "distgraph/train/trainer.hpp"

namespace distgraph {

/// The recipe of a link-prediction run (defaults as `distgraph train --task link`: 10
/// epochs, no weight decay or dropout, the best validation epoch's model). The fields
/// every task shares are RecipeOptions'; `hidden` is the output width too (the dot
/// product's dimension), `batch_size` and `eval_batch_size` count positive edges, and the
/// metric is always ROC-AUC.
struct LinkPredictionOptions : RecipeOptions {
  LinkPredictionOptions() {
    epochs = 10;
    weight_decay = 0;
    dropout = 0;
    input_dropout = 0;  // the model has none
    metric = Metric::roc_auc;
    eval_batch_size = 1000;
  }
  std::int64_t num_negatives = 1;  ///< uniform negatives per positive edge
  /// Edges held out for validation and test (an edge and its reverse go together).
  double val_fraction = 0.05, test_fraction = 0.05;
  Aggregator aggregator = Aggregator::mean;
};

namespace detail {

/// Every edge's split (0 train, 1 validation, 2 test; an edge and its reverse share one,
/// drawn from the seed and the unordered pair) and its reverse's ID (-1: none).
struct EdgeSplits {
  std::vector<std::int64_t> train, val, test, reverse;
};

template <class Graph>
EdgeSplits split_edges(const Graph& g, const LinkPredictionOptions& o) {
  const std::int64_t m = g.num_edges();
  std::vector<std::int64_t> src(static_cast<std::size_t>(m)), dst(src.size());
  std::vector<std::int64_t> ids;
  for (std::int64_t lo = 0; lo < m; lo += 1 << 18) {
    const std::int64_t hi = std::min(m, lo + (1 << 18));
    ids.resize(static_cast<std::size_t>(hi - lo));
    for (std::int64_t e = lo; e < hi; ++e) ids[static_cast<std::size_t>(e - lo)] = e;
    const EdgeEnds ends = g.find_edges(ids);
    std::copy(ends.src.begin(), ends.src.end(), src.begin() + lo);
    std::copy(ends.dst.begin(), ends.dst.end(), dst.begin() + lo);
  }
  const auto n = static_cast<std::uint64_t>(g.num_nodes());
  std::unordered_map<std::uint64_t, std::int64_t> id_of;
  id_of.reserve(static_cast<std::size_t>(m));
  for (std::int64_t e = 0; e < m; ++e)
    id_of.emplace(static_cast<std::uint64_t>(src[static_cast<std::size_t>(e)]) * n +
                      static_cast<std::uint64_t>(dst[static_cast<std::size_t>(e)]),
                  e);
  EdgeSplits s;
  s.reverse.assign(static_cast<std::size_t>(m), -1);
  for (std::int64_t e = 0; e < m; ++e) {
    const auto u = static_cast<std::uint64_t>(src[static_cast<std::size_t>(e)]);
    const auto v = static_cast<std::uint64_t>(dst[static_cast<std::size_t>(e)]);
    if (const auto it = id_of.find(v * n + u); it != id_of.end() && it->second != e)
      s.reverse[static_cast<std::size_t>(e)] = it->second;
    const double x =
        SplitMix64(o.seed, std::min(u, v) * 0x9e3779b97f4a7c15ULL + std::max(u, v)).uniform();
    auto& bucket = x < o.test_fraction                    ? s.test
                   : x < o.test_fraction + o.val_fraction ? s.val
                                                          : s.train;
    bucket.push_back(e);
  }
  return s;
}

/// Dot-product scores of a batch's positive and negative pairs from the output rows `h`,
/// divided by sqrt(h's width).
inline std::pair<torch::Tensor, torch::Tensor> pair_scores(const torch::Tensor& h,
                                                           const EdgeBatch& b) {
  const auto index = [&](const std::vector<std::int64_t>& v) {
    return torch::from_blob(const_cast<std::int64_t*>(v.data()),
                            {static_cast<std::int64_t>(v.size())}, torch::kLong)
        .to(h.device());
  };
  // Scaled by 1/sqrt(width) (as attention scores are): unit-variance logits at the start
  // instead of saturated ones, which on unnormalised features stall the first epochs.
  const double scale = 1.0 / std::sqrt(static_cast<double>(std::max<std::int64_t>(h.size(1), 1)));
  const auto score = [&](const std::vector<std::int64_t>& s, const std::vector<std::int64_t>& d) {
    return (h.index_select(0, index(s)) * h.index_select(0, index(d))).sum(1) * scale;
  };
  return {score(b.pos_src, b.pos_dst), score(b.neg_src, b.neg_dst)};
}

/// Scores as two-column logits (0, s) with labels 1 for positives, so MetricAccumulator's
/// ROC-AUC (of the softmax's class 1, the sigmoid of s) ranks the scores themselves.
inline void add_pairs(MetricAccumulator& acc, const torch::Tensor& pos, const torch::Tensor& neg) {
  const auto s = torch::cat({pos, neg}).detach();
  const auto y = torch::cat({torch::ones({pos.size(0)}, torch::kLong),
                             torch::zeros({neg.size(0)}, torch::kLong)})
                     .to(s.device());
  acc.add(torch::stack({torch::zeros_like(s), s}, 1), y);
}

/// One link-prediction training epoch: binary cross-entropy of the positive pairs'
/// scores against the negatives' (train_metric: their ROC-AUC).
template <class TrainerT, class Loader>
EpochStats train_link_epoch(TrainerT& trainer, Loader& loader, std::int64_t e) {
  return train_epoch_with(
      trainer, loader, e, Metric::roc_auc,
      [&](EdgeBatch& b, MetricAccumulator& acc, RemoteTraffic&) {
        const auto [pos, neg] = pair_scores(trainer.forward(b, true), b);
        add_pairs(acc, pos, neg);
        const torch::Tensor logits = torch::cat({pos, neg});
        const torch::Tensor labels = torch::cat({torch::ones_like(pos), torch::zeros_like(neg)});
        return BatchLoss{torch::binary_cross_entropy_with_logits(logits, labels),
                         static_cast<double>(logits.size(0))};
      },
      [] {});
}

/// The ROC-AUC of `loader`'s pairs over all trainers (no loss: NaN).
template <class TrainerT, class Loader>
EvalResult evaluate_links(TrainerT& trainer, Loader& loader, std::int64_t epoch) {
  EvalResult r = evaluate_with(trainer, loader, epoch, Metric::roc_auc,
                               [&](EdgeBatch& b, MetricAccumulator& acc) {
                                 const auto [pos, neg] = pair_scores(trainer.forward(b, false), b);
                                 add_pairs(acc, pos, neg);
                               });
  r.loss = std::numeric_limits<double>::quiet_NaN();
  return r;
}

}  // namespace detail

/// Trains GraphSAGE (output width o.hidden) so that the dot product of two nodes'
/// representations scores their link: binary cross-entropy on the EdgeDataLoader's
/// positives against o.num_negatives uniform negatives each, the batch's edges and their
/// reverses excluded from its sampled neighbourhood (the model never sees the link it
/// scores). Held-out edges (o.val_fraction, o.test_fraction) give the validation ROC-AUC
/// (the epochs are train_epochs': early stopping, the best epoch's model) and the test
/// ROC-AUC at the end. Run log, checkpoints, resume and errors as
/// train_node_classification; the result's metric is roc_auc.
template <TrainingGraph Graph>
RunResult train_link_prediction(const Graph& g, const LinkPredictionOptions& o,
                                const TrainerGroups& groups = {},
                                const EpochCallback& on_epoch = {}) {
  check_recipe(o);
  if (o.num_negatives < 1)
    throw InvalidArgument("link prediction: negatives " + std::to_string(o.num_negatives) +
                          "; expected >= 1");
  if (!(o.val_fraction >= 0 && o.test_fraction >= 0 && o.val_fraction + o.test_fraction < 1))
    throw InvalidArgument("link prediction: held-out fractions must be >= 0 and sum below 1");
  const auto& group = groups.control;
  const std::int32_t rank = group ? group->getRank() : 0;
  const std::int32_t world = group ? group->getSize() : 1;
  const auto split = detail::split_edges(g, o);
  if (split.train.empty()) throw InvalidArgument("link prediction: no training edge");
  RunResult res;
  res.feat_dim = detail::open_feature(g, o.feature).num_cols();

  using Loader = EdgeDataLoader<Graph>;
  const LoaderOptions lo = training_loader_options(o, rank, o.feature, "");
  const EdgeLoaderOptions elo{.num_negatives = o.num_negatives,
                              .exclude = ExcludeEdges::self_and_reverse,
                              .reverse_eids = split.reverse};
  Loader train_loader(g, edge_split(split.train, g.book(), {.rank = rank, .num_trainers = world}),
                      o.fanouts, lo, elo);
  auto eval_loader = [&](const std::vector<std::int64_t>& all) {
    if (all.empty()) return detail::MaybeLoader<Loader>();
    const auto mine =
        edge_split(all, g.book(), {.rank = rank, .num_trainers = world, .force_even = false});
    if (mine.empty()) return detail::MaybeLoader<Loader>();
    return detail::MaybeLoader<Loader>(
        Loader(g, mine, o.fanouts, evaluation_loader_options(lo, o.eval_batch_size), elo));
  };
  auto val_loader = eval_loader(split.val);
  auto test_loader = eval_loader(split.test);

  torch::manual_seed(o.seed);
  TrainerOptions to{.lr = o.lr, .weight_decay = o.weight_decay, .device = o.device};
  to.all_reduce.timeout = o.collective_timeout;
  to.gradient_group = groups.gradients;
  Trainer<GraphSAGE> trainer(
      GraphSAGE(GraphSAGEOptions{.in_feats = res.feat_dim,
                                 .hidden = o.hidden,
                                 .num_classes = o.hidden,
                                 .num_layers = static_cast<std::int64_t>(o.fanouts.size()),
                                 .dropout = o.dropout,
                                 .aggregator = o.aggregator}),
      to, group);
  NoLearnedRows no_learned_rows;
  const EpochLoopSetup setup{
      .identity = detail::run_identity("link_prediction", g, res.feat_dim, o.seed,
                                       {{"model", "graphsage"},
                                        {"aggregator", to_string(o.aggregator)},
                                        {"num_layers", static_cast<std::int64_t>(o.fanouts.size())},
                                        {"hidden", o.hidden}}),
      .rank = rank,
      .num_val = static_cast<std::int64_t>(split.val.size()),
      .batches_per_epoch = train_loader.num_batches(),
      .metric = Metric::roc_auc,
      .fallback_metric = Metric::roc_auc};
  const EpochLoopOutcome run = train_epochs(
      trainer,
      [&](std::int64_t e, Metric) { return detail::train_link_epoch(trainer, train_loader, e); },
      [&](std::int64_t e, Metric) { return detail::evaluate_links(trainer, val_loader, e); },
      no_learned_rows, o, setup, res, on_epoch);
  res.metric = Metric::roc_auc;
  res.val = run.val;
  res.test = detail::evaluate_links(trainer, test_loader, o.epochs).value;
  detail::finish_result(res, g, o, run.start, run.done, run.epoch_s_sum, rank, world);
  return res;
}

}  // namespace distgraph

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
#include "distgraph/tasks/training_run.hpp"
#include "distgraph/train/trainer.hpp"

namespace distgraph {

/// The recipe of a link-prediction run (defaults as `distgraph train --task link`).
struct LinkPredictionOptions {
  std::int64_t epochs = 10;
  std::int64_t hidden = 64;  ///< hidden and output width (the dot product's dimension)
  std::vector<std::int64_t> fanouts{10, 25};
  std::int64_t batch_size = 1000;  ///< positive edges per trainer and batch
  std::int64_t num_negatives = 1;  ///< uniform negatives per positive edge
  /// Edges held out for validation and test (an edge and its reverse go together).
  double val_fraction = 0.05, test_fraction = 0.05;
  double lr = 0.01;
  double weight_decay = 0;
  double dropout = 0;
  Aggregator aggregator = Aggregator::mean;
  std::uint64_t seed = 0;
  torch::Device device = torch::kCPU;
  unsigned num_prefetch_threads = 1;
  std::string feature = "feat";
  std::filesystem::path out;  ///< as NodeClassificationOptions::out
  bool resume = false;        ///< as NodeClassificationOptions::resume
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(5)};
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

}  // namespace detail

/// Trains GraphSAGE (output width o.hidden) so that the dot product of two nodes'
/// representations scores their link: binary cross-entropy on the EdgeDataLoader's
/// positives against o.num_negatives uniform negatives each, the batch's edges and their
/// reverses excluded from its sampled neighbourhood (the model never sees the link it
/// scores). Held-out edges (o.val_fraction, o.test_fraction) give the validation ROC-AUC
/// after every epoch and the test ROC-AUC at the end. Run log, checkpoints, resume and
/// errors as train_node_classification; the result's metric is roc_auc.
template <TrainingGraph Graph>
RunResult train_link_prediction(const Graph& g, const LinkPredictionOptions& o,
                                               const TrainerGroups& groups = {},
                                               const EpochCallback& on_epoch = {}) {
  const auto& group = groups.control;
  if (o.epochs < 1 || o.hidden < 1 || o.batch_size < 1 || o.num_negatives < 1 || o.fanouts.empty())
    throw InvalidArgument(
        "link prediction: epochs, hidden, batch size and negatives must be >= 1, with fanouts");
  if (!(o.val_fraction >= 0 && o.test_fraction >= 0 && o.val_fraction + o.test_fraction < 1))
    throw InvalidArgument("link prediction: held-out fractions must be >= 0 and sum below 1");
  const std::int32_t rank = group ? group->getRank() : 0;
  const std::int32_t world = group ? group->getSize() : 1;
  const auto split = detail::split_edges(g, o);
  if (split.train.empty()) throw InvalidArgument("link prediction: no training edge");
  RunResult res;
  res.feat_dim = detail::open_feature(g, o.feature).num_cols();

  using Loader = EdgeDataLoader<Graph>;
  const LoaderOptions lo{.batch_size = o.batch_size,
                         .shuffle = true,
                         .seed = o.seed,
                         .rank = rank,
                         .num_prefetch_threads = o.num_prefetch_threads,
                         .prefetch_next_epoch = true,
                         .last_epoch = o.epochs - 1,
                         .feature = o.feature,
                         .label = ""};
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
    LoaderOptions e = lo;
    e.shuffle = false;
    e.prefetch_next_epoch = false;  // evaluations are not every epoch
    return detail::MaybeLoader<Loader>(Loader(g, mine, o.fanouts, e, elo));
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
  const auto evaluate = [&](auto& loader, std::int64_t epoch) {
    torch::NoGradGuard no_grad;
    detail::MetricAccumulator acc;
    loader.begin_epoch(epoch);
    while (auto b = loader.next()) {
      const auto [pos, neg] = detail::pair_scores(trainer.forward(*b, false), *b);
      detail::add_pairs(acc, pos, neg);
    }
    return acc.reduce(trainer.group(), Metric::roc_auc, o.collective_timeout).value;
  };

  const auto identity =
      detail::run_identity("link_prediction", g, res.feat_dim, o.seed,
                           {{"model", "graphsage"},
                            {"aggregator", to_string(o.aggregator)},
                            {"num_layers", static_cast<std::int64_t>(o.fanouts.size())},
                            {"hidden", o.hidden}});
  if (o.resume) detail::resume_run(trainer, identity, o.out, rank, res);
  const std::int64_t start = res.resumed_from;
  if (rank == 0 && !o.out.empty()) std::filesystem::create_directories(o.out);

  double val = 0, epoch_s_sum = 0;
  for (std::int64_t e = start; e < o.epochs; ++e) {
    torch::manual_seed(detail::epoch_torch_seed(o.seed, e, rank));
    Stopwatch epoch_clock;
    EpochRow row{.epoch = e};
    trainer.check_batch_count(train_loader.num_batches());
    detail::MetricAccumulator acc;
    double loss_sum = 0, pairs = 0;
    RemoteTraffic traffic;  // the epoch's batches' own (the next epoch's may be made early)
    train_loader.begin_epoch(e);
    while (auto b = train_loader.next()) {
      row.sample_s += b->timings.sample_s;
      row.fetch_s += b->timings.fetch_s;
      traffic += b->timings.traffic;
      Stopwatch clock;
      const auto [pos, neg] = detail::pair_scores(trainer.forward(*b, true), *b);
      const torch::Tensor logits = torch::cat({pos, neg});
      const torch::Tensor labels = torch::cat({torch::ones_like(pos), torch::zeros_like(neg)});
      const torch::Tensor loss = torch::binary_cross_entropy_with_logits(logits, labels);
      const double reduce_s = trainer.step(loss);
      row.allreduce_s += reduce_s;
      const auto n = static_cast<double>(logits.size(0));
      loss_sum += loss.item<double>() * n;
      pairs += n;
      detail::add_pairs(acc, pos, neg);
      row.compute_s += clock.seconds() - reduce_s;
    }
    std::vector<double> sums{loss_sum, pairs, static_cast<double>(traffic.rows),
                             static_cast<double>(traffic.bytes)};
    if (group) sums = all_reduce_sum(*group, sums, o.collective_timeout);
    row.loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
    row.remote_rows = static_cast<std::int64_t>(sums[2]);
    row.remote_bytes = static_cast<std::int64_t>(sums[3]);
    row.train_metric = acc.reduce(trainer.group(), Metric::roc_auc, o.collective_timeout).value;
    row.epoch_s = epoch_clock.seconds();
    val = evaluate(val_loader, e);
    row.val_metric = val;
    epoch_s_sum += row.epoch_s;
    if (rank == 0)
      detail::publish_epoch(
          res, row, Metric::roc_auc, o.out, trainer, identity,
          [] { return nlohmann::json::object(); }, on_epoch);
  }
  if (start >= o.epochs) val = evaluate(val_loader, o.epochs);
  res.metric = Metric::roc_auc;
  res.val = val;
  res.test = evaluate(test_loader, o.epochs);
  detail::finish_result(res, g, o, start, std::max(o.epochs, start), epoch_s_sum, rank, world);
  return res;
}

}  // namespace distgraph

// train_hetero_node_classification: `distgraph train` on a typed graph — seeds of one
// target node type, per-relation sampling, R-GCN or heterogeneous GraphSAGE, learnable
// embeddings for featureless types, per-epoch validation, the same run folder files.
#pragma once

#include <torch/types.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/distributed/dist_embedding.hpp"
#include "distgraph/distributed/node_split.hpp"
#include "distgraph/loaders/loader_features.hpp"
#include "distgraph/loaders/node_data_loader.hpp"
#include "distgraph/nn/hetero_block_tensors.hpp"
#include "distgraph/nn/hetero_sage.hpp"
#include "distgraph/nn/rgcn.hpp"
#include "distgraph/partition/typed_data.hpp"
#include "distgraph/sampling/per_relation_sampler.hpp"
#include "distgraph/sampling/relation_fanouts.hpp"
#include "distgraph/tasks/epoch_loop.hpp"
#include "distgraph/tasks/node_classification.hpp"
#include "distgraph/tasks/recipe_options.hpp"

namespace distgraph {

/// The recipe of a typed node-classification run. The defaults are `distgraph train`'s on
/// a typed dataset (R-GCN, 2 layers, hidden 64, 10 neighbours per relation and layer,
/// Adam lr 0.01 with weight decay 5e-4, dropout 0.5, 64-wide embeddings for featureless
/// types, at most 50 epochs, the best validation epoch's model); docs/GUIDE.md has the
/// accuracies they reach on DBLP. The fields every task shares are RecipeOptions'.
struct HeteroNodeClassificationOptions : RecipeOptions {
  HeteroNodeClassificationOptions() {
    epochs = 50;
    fanouts = {10, 10};
    batch_size = 128;  // target seeds per trainer and batch
    input_dropout = 0.0;
    eval_batch_size = 1024;
  }
  std::string model = "rgcn";  ///< "rgcn" or "hsage"
  std::string target_ntype;    ///< the node type to classify (required)
  /// Single relations' fanouts (RelationFanouts::parse_overrides syntax); the rest take
  /// `fanouts`, neighbours per relation and layer.
  std::string relation_fanouts;
  std::int64_t num_bases = 0;  ///< R-GCN basis decomposition (0: a weight per relation)
  HeteroModelOptions::Combine combine = HeteroModelOptions::Combine::sum;
  /// Width of the learnable input rows of featureless node types (a DistEmbedding per
  /// type, "<ntype>/emb" on the servers, trained by SparseAdam there).
  std::int64_t embedding_dim = 64;
  double embedding_lr = 0.01;
  /// Data names of the target type ("<target>/<name>" on the servers); `feature` names
  /// the features of every featured type ("<ntype>/<feature>").
  std::string label = "label";
  std::string train_mask = "train_mask", val_mask = "val_mask", test_mask = "test_mask";
};

namespace detail {

/// Global IDs of the target type whose typed boolean data `name` is true (absent: none).
template <class TypeView>
std::vector<std::int64_t> typed_masked_nodes(const TypeView& nodes, const std::string& name) {
  std::vector<std::int64_t> out;
  std::optional<decltype(nodes.template data<bool>(name))> mask;
  try {
    mask = nodes.template data<bool>(name);
  } catch (const NotFound&) {
    return out;
  }
  const std::int64_t n = nodes.count();
  constexpr std::int64_t chunk = 1 << 20;
  std::vector<std::int64_t> wise;
  for (std::int64_t lo = 0; lo < n; lo += chunk) {
    const std::int64_t hi = std::min(n, lo + chunk);
    wise.resize(static_cast<std::size_t>(hi - lo));
    for (std::int64_t v = lo; v < hi; ++v) wise[static_cast<std::size_t>(v - lo)] = v;
    const auto ids = nodes.to_global(wise);
    std::unique_ptr<bool[]> values(new bool[ids.size()]);
    mask->pull(ids, std::span<bool>(values.get(), ids.size()));
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (values[i]) out.push_back(ids[i]);
  }
  return out;
}

/// Per-class true positives, false positives and false negatives, summed over the
/// trainers: what macro-F1 needs (accuracy does not show a model that ignores a class).
class F1Counts {
 public:
  explicit F1Counts(std::int64_t classes) : c_(static_cast<std::size_t>(3 * classes), 0.0) {}
  void add(const torch::Tensor& logits, const torch::Tensor& labels) {
    const auto pred = logits.argmax(1).to(torch::kCPU).contiguous();
    const auto y = labels.to(torch::kCPU).contiguous();
    const std::int64_t k = static_cast<std::int64_t>(c_.size() / 3);
    const auto* p = pred.data_ptr<std::int64_t>();
    const auto* t = y.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < y.numel(); ++i) {
      if (p[i] == t[i]) {
        c_[static_cast<std::size_t>(p[i])] += 1;
      } else {
        if (p[i] >= 0 && p[i] < k) c_[static_cast<std::size_t>(k + p[i])] += 1;
        if (t[i] >= 0 && t[i] < k) c_[static_cast<std::size_t>(2 * k + t[i])] += 1;
      }
    }
  }
  /// Mean over classes of 2 TP / (2 TP + FP + FN) (classes never seen nor predicted
  /// count as 1). Collective with a group.
  double macro_f1(CollectiveGroup* group, std::chrono::milliseconds timeout) const {
    auto c = c_;
    if (group != nullptr) c = all_reduce_sum(*group, c, timeout);
    const std::size_t k = c.size() / 3;
    double sum = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const double d = 2 * c[i] + c[k + i] + c[2 * k + i];
      sum += d > 0 ? 2 * c[i] / d : 1.0;
    }
    return k > 0 ? sum / static_cast<double>(k) : 0.0;
  }

 private:
  std::vector<double> c_;
};

/// The typed model of a run: R-GCN or HeteroSAGE behind one forward, so the epoch loop
/// is written once.
class HeteroModel {
 public:
  HeteroModel(const std::string& kind, const HeteroModelOptions& mo) {
    if (kind == "rgcn")
      rgcn_ = RGCN(mo);
    else if (kind == "hsage")
      sage_ = HeteroSAGE(mo);
    else
      throw InvalidArgument("train: model '" + kind + "'; expected rgcn or hsage");
  }
  torch::nn::Module& module() {
    return rgcn_ ? static_cast<torch::nn::Module&>(**rgcn_)
                 : static_cast<torch::nn::Module&>(**sage_);
  }
  torch::Tensor forward(const std::vector<HeteroBlockTensors>& b,
                        const std::vector<TypedInput>& x) {
    return rgcn_ ? (*rgcn_)->forward(b, x) : (*sage_)->forward(b, x);
  }
  /// The holder interface Trainer and checkpoints use (->to, ->parameters, *model).
  torch::nn::Module* operator->() { return &module(); }
  torch::nn::Module& operator*() { return module(); }

 private:
  std::optional<RGCN> rgcn_;
  std::optional<HeteroSAGE> sage_;
};

/// The shape of a typed model for `g`: every relation, each type's input width (a
/// featureless type's is o.embedding_dim: `embs` gets a DistEmbedding for it).
template <class Graph, class Embedding>
HeteroModelOptions typed_model_options(const Graph& g, const HeteroNodeClassificationOptions& o,
                                       std::int64_t num_classes,
                                       std::vector<std::optional<Embedding>>& embs) {
  HeteroModelOptions mo;
  mo.num_relations = static_cast<std::int32_t>(g.etypes().size());
  for (const auto& e : g.etypes())
    mo.relation_dst_type.push_back(g.node_type(e.substr(e.rfind(':') + 1)).value);
  embs.assign(g.ntypes().size(), std::nullopt);
  for (std::size_t t = 0; t < g.ntypes().size(); ++t) {
    const auto nodes = g.nodes(g.ntypes()[t]);
    try {
      mo.in_feats.push_back(open_typed_feature<Graph>(nodes, o.feature).num_cols());
    } catch (const NotFound&) {
      mo.in_feats.push_back(o.embedding_dim);
      embs[t] = Embedding::create(g.client_ptr(), nodes.data_name("emb"), o.embedding_dim,
                                  {InitKind::uniform, -1.0, 1.0, o.seed});
    }
  }
  mo.hidden = o.hidden;
  mo.num_classes = num_classes;
  mo.num_layers = static_cast<std::int64_t>(o.fanouts.size());
  mo.dropout = o.dropout;
  mo.input_dropout = o.input_dropout;
  mo.num_bases = o.num_bases;
  mo.combine = o.combine;
  return mo;
}

/// The typed training loader's options: one PerRelationSampler spec per layer (relations
/// the overrides omit take the layer's default).
template <class Graph>
LoaderOptions typed_training_loader_options(const Graph& g,
                                            const HeteroNodeClassificationOptions& o,
                                            std::int32_t rank) {
  RelationFanouts rf;
  rf.layers = o.fanouts;
  if (!o.relation_fanouts.empty())
    rf.overrides = RelationFanouts::parse_overrides(o.relation_fanouts);
  LoaderOptions lo =
      training_loader_options(o, rank, o.feature, typed_data_name(o.target_ntype, o.label));
  for (const auto& layer : rf.resolve(g.etypes()))
    lo.layer_samplers.push_back(PerRelationSampler::spec(layer));
  return lo;
}

/// A typed batch through the model: typed blocks and typed inputs (features, or the rows
/// of featureless types' embeddings, which collect their gradient while training).
template <class Graph, class Embedding>
class TypedForward {
 public:
  struct Output {
    torch::Tensor logits, labels;
    std::vector<std::pair<std::int32_t, std::vector<std::int64_t>>> emb_ids;
    std::vector<torch::Tensor> emb_rows;
  };

  TypedForward(const Graph& g, std::vector<std::optional<Embedding>>& embs, std::int64_t emb_dim,
               torch::Device device)
      : g_(g), embs_(embs), emb_dim_(emb_dim), dev_(device) {}

  Output operator()(HeteroModel& model, NodeBatch& b, bool learn) {
    Output f;
    const auto num_rel = static_cast<std::int32_t>(g_.etypes().size());
    const auto num_ntypes = static_cast<std::int32_t>(g_.ntypes().size());
    std::vector<HeteroBlockTensors> blocks;
    for (std::size_t l = 0; l < b.blocks.size(); ++l) {
      const Block& blk = b.blocks[l];
      const auto et = g_.edge_types_of(blk.eid);
      const auto st = l == 0 ? b.input_types : g_.node_types_of(blk.src_nodes);
      blocks.push_back(hetero_block_tensors(blk, et, st, num_rel, num_ntypes, dev_));
    }
    std::vector<TypedInput> inputs;
    for (auto& r : b.typed_features) {
      const auto n = static_cast<std::int64_t>(r.positions.size());
      inputs.push_back({r.ntype, on_device(torch::from_blob(r.positions.data(), {n}, longs())),
                        on_device(torch::from_blob(r.rows.data(), {n, r.cols}, floats()))});
    }
    add_learned_inputs(b, learn, inputs, f);
    f.logits = model.forward(blocks, inputs);
    const auto rows = static_cast<std::int64_t>(b.labels.size());
    f.labels = on_device(torch::from_blob(b.labels.data(), {rows}, longs()));
    return f;
  }

  /// After backward: the learned rows' gradients to their embeddings.
  void record_gradients(const Output& f) {
    for (std::size_t k = 0; k < f.emb_ids.size(); ++k) {
      const auto t = static_cast<std::size_t>(f.emb_ids[k].first);
      const torch::Tensor grad = f.emb_rows[k].grad().to(torch::kCPU).contiguous();
      embs_[t]->record_gradient(f.emb_ids[k].second,
                                {grad.data_ptr<float>(), static_cast<std::size_t>(grad.numel())});
    }
  }

 private:
  static torch::TensorOptions longs() { return torch::TensorOptions().dtype(torch::kLong); }
  static torch::TensorOptions floats() { return torch::TensorOptions().dtype(torch::kFloat); }
  torch::Tensor on_device(const torch::Tensor& t) const { return t.to(dev_, false, true); }

  /// Featureless types among the batch's inputs: their embedding rows.
  void add_learned_inputs(const NodeBatch& b, bool learn, std::vector<TypedInput>& inputs,
                          Output& f) {
    std::vector<std::vector<std::int64_t>> pos(embs_.size());
    for (std::size_t i = 0; i < b.input_types.size(); ++i)
      if (embs_[static_cast<std::size_t>(b.input_types[i])])
        pos[static_cast<std::size_t>(b.input_types[i])].push_back(static_cast<std::int64_t>(i));
    for (std::size_t t = 0; t < embs_.size(); ++t) {
      auto& p = pos[t];
      if (p.empty()) continue;
      std::vector<std::int64_t> ids(p.size());
      for (std::size_t i = 0; i < p.size(); ++i)
        ids[i] = b.input_nodes[static_cast<std::size_t>(p[i])];
      auto rows = embs_[t]->pull(ids);
      const auto n = static_cast<std::int64_t>(ids.size());
      auto x = on_device(torch::from_blob(rows.data(), {n, emb_dim_}, floats()));
      if (learn) x.requires_grad_(true);
      inputs.push_back(
          {static_cast<std::int32_t>(t), on_device(torch::from_blob(p.data(), {n}, longs())), x});
      f.emb_ids.emplace_back(static_cast<std::int32_t>(t), std::move(ids));
      f.emb_rows.push_back(x);
    }
  }

  const Graph& g_;
  std::vector<std::optional<Embedding>>& embs_;
  std::int64_t emb_dim_;
  torch::Device dev_;
};

/// The target type's training, validation and test nodes (global IDs). Throws
/// InvalidArgument when the training mask marks none.
template <class Graph>
std::array<std::vector<std::int64_t>, 3> target_sets(const Graph& g,
                                                     const HeteroNodeClassificationOptions& o) {
  const auto target = g.nodes(o.target_ntype);
  std::array<std::vector<std::int64_t>, 3> sets{typed_masked_nodes(target, o.train_mask),
                                                typed_masked_nodes(target, o.val_mask),
                                                typed_masked_nodes(target, o.test_mask)};
  if (sets[0].empty())
    throw InvalidArgument("train: node data '" + o.target_ntype + "/" + o.train_mask +
                          "' marks no training node");
  return sets;
}

/// The metric of `source`'s batches over all trainers (and their macro-F1 counts).
template <class TrainerT, class Forward, class Source>
EvalResult evaluate_typed(TrainerT& trainer, Forward& forward, Source& source, std::int64_t epoch,
                          Metric metric, F1Counts* f1) {
  return evaluate_with(trainer, source, epoch, metric, [&](NodeBatch& b, MetricAccumulator& acc) {
    const auto f = forward(trainer.model(), b, false);
    acc.add(f.logits, f.labels);
    if (f1) f1->add(f.logits, f.labels);
  });
}

}  // namespace detail

/// Trains R-GCN or heterogeneous GraphSAGE (o.model) to classify the nodes of
/// o.target_ntype of typed graph `g` (typed data "<target>/label" and the boolean masks,
/// "<ntype>/feat" for every featured type; featureless types learn a DistEmbedding) and
/// evaluates it, collectively over `groups` like train_node_classification: each trainer
/// takes its node_split share of the target's training nodes; the epochs are
/// train_epochs' (validation, early stopping, the best epoch's model and learned rows,
/// resume); the test set is evaluated at the end (accuracy or ROC-AUC, plus macro-F1 in
/// result.extra["test_macro_f1"]). Rank 0 writes metrics.csv, curves.svg, checkpoint.pt
/// (model and optimizer), best.pt and result.json into o.out. Throws InvalidArgument for
/// an unknown target, relation or model, an empty training set or a bad recipe, and
/// whatever the graph, loaders and collectives throw.
template <TrainingGraph Graph>
RunResult train_hetero_node_classification(const Graph& g, const HeteroNodeClassificationOptions& o,
                                           const TrainerGroups& groups = {},
                                           const EpochCallback& on_epoch = {}) {
  check_recipe(o);
  if (o.target_ntype.empty())
    throw InvalidArgument(
        "train: no target node type; expected --target-ntype or a dataset "
        "that names one");
  if (o.embedding_dim < 1) throw InvalidArgument("train: embedding dim must be >= 1");
  const auto& group = groups.control;
  const std::int32_t rank = group ? group->getRank() : 0;
  const std::int32_t world = group ? group->getSize() : 1;
  const auto [train_all, val_all, test_all] = detail::target_sets(g, o);
  const std::vector<std::int64_t>* sets[] = {&train_all, &val_all, &test_all};
  RunResult res;
  res.num_classes = detail::count_classes(g, typed_data_name(o.target_ntype, o.label), sets);
  using Client = typename Graph::client_type;
  std::vector<std::optional<DistEmbedding<Client>>> embs;
  const HeteroModelOptions mo = detail::typed_model_options(g, o, res.num_classes, embs);
  std::vector<DistEmbedding<Client>> learned;
  for (const auto& e : embs)
    if (e) learned.push_back(*e);
  std::optional<SparseOptimizer<Client>> emb_opt;
  if (!learned.empty()) emb_opt.emplace(SparseAdam(learned, o.embedding_lr));
  for (auto w : mo.in_feats) res.feat_dim = std::max(res.feat_dim, w);

  // Evaluation takes every neighbour; the layers' fanouts live in the sampler specs.
  const LoaderOptions train_lo = detail::typed_training_loader_options(g, o, rank);
  const std::vector<std::int64_t> layer_marks(o.fanouts.size(), -1);
  using Loader = NodeDataLoader<Graph>;
  const SplitOptions even{.rank = rank, .num_trainers = world, .force_even = true};
  Loader train_loader(g, node_split(train_all, g.book(), even), layer_marks, train_lo);
  LoaderOptions eval_lo = evaluation_loader_options(train_lo, o.eval_batch_size);
  eval_lo.layer_samplers.assign(
      o.fanouts.size(), PerRelationSampler::spec(std::vector<std::int64_t>(g.etypes().size(), -1)));
  auto val_loader = detail::evaluation_loader(g, val_all, true, layer_marks, eval_lo, world);
  auto test_loader = detail::evaluation_loader(g, test_all, true, layer_marks, eval_lo, world);

  torch::manual_seed(o.seed);
  TrainerOptions to{.lr = o.lr, .weight_decay = o.weight_decay, .device = o.device};
  to.all_reduce.timeout = o.collective_timeout;
  to.gradient_group = groups.gradients;
  Trainer<detail::HeteroModel> trainer(detail::HeteroModel(o.model, mo), to, group);
  detail::TypedForward<Graph, DistEmbedding<Client>> forward(g, embs, o.embedding_dim, o.device);
  const auto evaluate = [&](auto& source, std::int64_t epoch, Metric m, detail::F1Counts* f1) {
    return detail::evaluate_typed(trainer, forward, source, epoch, m, f1);
  };
  detail::EmbeddingCheckpoints<DistEmbedding<Client>> learned_rows(learned);
  const EpochLoopSetup setup{
      .identity = detail::run_identity(
          "hetero_node_classification", g, res.feat_dim, o.seed,
          {{"model", o.model},
           {"target_ntype", o.target_ntype},
           {"num_layers", mo.num_layers},
           {"hidden", o.hidden},
           {"num_classes", res.num_classes},
           {"embedding_dim", o.embedding_dim},
           {"num_bases", o.num_bases},
           {"combine", o.combine == HeteroModelOptions::Combine::sum ? "sum" : "mean"},
           {"relation_fanouts", o.relation_fanouts}}),
      .rank = rank,
      .num_val = static_cast<std::int64_t>(val_all.size()),
      .batches_per_epoch = train_loader.num_batches(),
      .metric = o.metric,
      .fallback_metric = res.num_classes == 2 ? Metric::roc_auc : Metric::accuracy};
  const EpochLoopOutcome run = train_epochs(
      trainer,
      [&](std::int64_t e, Metric m) {
        typename decltype(forward)::Output f;
        return detail::train_epoch_with(
            trainer, train_loader, e, m,
            [&](NodeBatch& batch, detail::MetricAccumulator& acc, RemoteTraffic& traffic) {
              {
                const TrafficScope scope(traffic);  // featureless types' learned rows
                f = forward(trainer.model(), batch, true);
              }
              acc.add(f.logits.detach(), f.labels);
              return detail::BatchLoss{torch::cross_entropy_loss(f.logits, f.labels),
                                       static_cast<double>(f.labels.size(0))};
            },
            [&] {
              forward.record_gradients(f);
              if (emb_opt) emb_opt->step();
            });
      },
      [&](std::int64_t e, Metric m) { return evaluate(val_loader, e, m, nullptr); }, learned_rows,
      o, setup, res, on_epoch);
  res.metric = run.metric;
  res.val = run.val;
  detail::F1Counts f1(res.num_classes);
  res.test = evaluate(test_loader, o.epochs, run.metric, &f1).value;
  res.extra["test_macro_f1"] = f1.macro_f1(trainer.group(), trainer.collective_timeout());
  res.extra["model"] = o.model;
  res.extra["target_ntype"] = o.target_ntype;
  detail::finish_result(res, g, o, run.start, run.done, run.epoch_s_sum, rank, world);
  return res;
}

}  // namespace distgraph

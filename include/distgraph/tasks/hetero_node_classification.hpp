// train_hetero_node_classification: `distgraph train` on a typed graph — seeds of one
// target node type, per-relation sampling, R-GCN or heterogeneous GraphSAGE, learnable
// embeddings for featureless types, per-epoch validation, the same run folder files.
#pragma once

#include <torch/types.h>

#include <algorithm>
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
#include "distgraph/tasks/node_classification.hpp"

namespace distgraph {

/// The recipe of a typed node-classification run. The defaults are `distgraph train`'s on
/// a typed dataset (R-GCN, 2 layers, hidden 64, 10 neighbours per relation and layer,
/// Adam lr 0.01 with weight decay 5e-4, dropout 0.5, 64-wide embeddings for featureless
/// types); docs/GUIDE.md has the accuracies they reach on DBLP.
struct HeteroNodeClassificationOptions {
  std::string model = "rgcn";  ///< "rgcn" or "hsage"
  std::string target_ntype;    ///< the node type to classify (required)
  std::int64_t epochs = 50;
  std::int64_t hidden = 64;
  /// Neighbours per relation and layer (input layer first); `relation_fanouts` overrides
  /// single relations (RelationFanouts::parse_overrides syntax), the rest take these.
  std::vector<std::int64_t> fanouts{10, 10};
  std::string relation_fanouts;
  std::int64_t batch_size = 128;  ///< target seeds per trainer and batch
  double lr = 0.01;
  double weight_decay = 5e-4;
  double dropout = 0.5;
  double input_dropout = 0.0;
  std::int64_t num_bases = 0;  ///< R-GCN basis decomposition (0: a weight per relation)
  HeteroModelOptions::Combine combine = HeteroModelOptions::Combine::sum;
  /// Width of the learnable input rows of featureless node types (a DistEmbedding per
  /// type, "<ntype>/emb" on the servers, trained by SparseAdam there).
  std::int64_t embedding_dim = 64;
  double embedding_lr = 0.01;
  Metric metric = Metric::automatic;
  std::uint64_t seed = 0;
  torch::Device device = torch::kCPU;
  unsigned num_prefetch_threads = 1;
  std::int64_t eval_batch_size = 1024;
  /// Data names of the target type ("<target>/<name>" on the servers) and of the
  /// features of every featured type ("<ntype>/<feature>").
  std::string feature = "feat", label = "label";
  std::string train_mask = "train_mask", val_mask = "val_mask", test_mask = "test_mask";
  std::filesystem::path out;  ///< run folder (metrics.csv, curves.svg, result.json, checkpoint.pt)
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(5)};
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

}  // namespace detail

/// Trains R-GCN or heterogeneous GraphSAGE (o.model) to classify the nodes of
/// o.target_ntype of typed graph `g` (typed data "<target>/label" and the boolean masks,
/// "<ntype>/feat" for every featured type; featureless types learn a DistEmbedding) and
/// evaluates it, collectively over `groups` like train_node_classification: each trainer
/// takes its node_split share of the target's training nodes; every epoch trains, then
/// validates; the test set is evaluated at the end (accuracy or ROC-AUC, plus macro-F1
/// in result.extra["test_macro_f1"]). Rank 0 writes metrics.csv, curves.svg,
/// checkpoint.pt (model and optimizer) and result.json into o.out. Throws
/// InvalidArgument for an unknown target, relation or model, an empty training set or a
/// bad recipe, and whatever the graph, loaders and collectives throw.
template <TrainingGraph Graph>
RunResult train_hetero_node_classification(
    const Graph& g, const HeteroNodeClassificationOptions& o, const TrainerGroups& groups = {},
    const EpochCallback& on_epoch = {}) {
  detail::check_options(o);
  if (o.target_ntype.empty())
    throw InvalidArgument("train: no target node type; expected --target-ntype or a dataset "
                          "that names one");
  if (o.embedding_dim < 1) throw InvalidArgument("train: embedding dim must be >= 1");
  const auto& group = groups.control;
  const std::int32_t rank = group ? group->getRank() : 0;
  const std::int32_t world = group ? group->getSize() : 1;
  const auto target = g.nodes(o.target_ntype);
  const auto train_all = detail::typed_masked_nodes(target, o.train_mask);
  const auto val_all = detail::typed_masked_nodes(target, o.val_mask);
  const auto test_all = detail::typed_masked_nodes(target, o.test_mask);
  if (train_all.empty())
    throw InvalidArgument("train: node data '" + o.target_ntype + "/" + o.train_mask +
                          "' marks no training node");
  const std::string label = typed_data_name(o.target_ntype, o.label);
  const std::vector<std::int64_t>* sets[] = {&train_all, &val_all, &test_all};
  RunResult res;
  res.num_classes = detail::count_classes(g, label, sets);

  // The model's shape: every relation of the graph, each type's input width.
  const auto& ntypes = g.ntypes();
  const auto& etypes = g.etypes();
  const auto num_ntypes = static_cast<std::int32_t>(ntypes.size());
  const auto num_rel = static_cast<std::int32_t>(etypes.size());
  HeteroModelOptions mo;
  mo.num_relations = num_rel;
  for (const auto& e : etypes)
    mo.relation_dst_type.push_back(g.node_type(e.substr(e.rfind(':') + 1)).value);
  using Client = typename Graph::client_type;
  std::vector<std::optional<DistEmbedding<Client>>> embs(ntypes.size());
  std::vector<DistEmbedding<Client>> learned;
  for (std::int32_t t = 0; t < num_ntypes; ++t) {
    const auto nodes = g.nodes(ntypes[static_cast<std::size_t>(t)]);
    try {
      mo.in_feats.push_back(detail::open_typed_feature<Graph>(nodes, o.feature).num_cols());
    } catch (const NotFound&) {
      mo.in_feats.push_back(o.embedding_dim);
      auto& e = embs[static_cast<std::size_t>(t)];
      e = DistEmbedding<Client>::create(g.client_ptr(), nodes.data_name("emb"), o.embedding_dim,
                                        {InitKind::uniform, -1.0, 1.0, o.seed});
      learned.push_back(*e);
    }
  }
  std::optional<SparseOptimizer<Client>> emb_opt;
  if (!learned.empty()) emb_opt.emplace(SparseAdam(learned, o.embedding_lr));
  mo.hidden = o.hidden;
  mo.num_classes = res.num_classes;
  mo.num_layers = static_cast<std::int64_t>(o.fanouts.size());
  mo.dropout = o.dropout;
  mo.input_dropout = o.input_dropout;
  mo.num_bases = o.num_bases;
  mo.combine = o.combine;
  res.feat_dim = 0;
  for (auto w : mo.in_feats) res.feat_dim = std::max(res.feat_dim, w);

  // Loaders: one PerRelationSampler spec per layer (relations the overrides omit take
  // the layer's default); evaluation takes every neighbour.
  RelationFanouts rf;
  rf.layers = o.fanouts;
  if (!o.relation_fanouts.empty())
    rf.overrides = RelationFanouts::parse_overrides(o.relation_fanouts);
  const auto resolved = rf.resolve(etypes);
  LoaderOptions train_lo{.batch_size = o.batch_size,
                         .shuffle = true,
                         .seed = o.seed,
                         .rank = rank,
                         .num_prefetch_threads = o.num_prefetch_threads,
                         .prefetch_next_epoch = true,
                         .last_epoch = o.epochs - 1,
                         .feature = o.feature,
                         .label = label};
  for (const auto& layer : resolved)
    train_lo.layer_samplers.push_back(PerRelationSampler::spec(layer));
  const std::vector<std::int64_t> layer_marks(o.fanouts.size(), -1);  // fanouts live in the specs
  const SplitOptions even{.rank = rank, .num_trainers = world, .force_even = true};
  const SplitOptions exact{.rank = rank, .num_trainers = world, .force_even = false};
  using Loader = NodeDataLoader<Graph>;
  Loader train_loader(g, node_split(train_all, g.book(), even), layer_marks, train_lo);
  LoaderOptions eval_lo = train_lo;
  eval_lo.batch_size = o.eval_batch_size;
  eval_lo.shuffle = false;
  eval_lo.prefetch_next_epoch = false;  // evaluations are not every epoch
  eval_lo.layer_samplers.assign(
      o.fanouts.size(), PerRelationSampler::spec(std::vector<std::int64_t>(etypes.size(), -1)));
  auto eval_loader = [&](const std::vector<std::int64_t>& all) {
    if (all.empty()) return detail::MaybeLoader<Loader>();
    const auto mine = node_split(all, g.book(), exact);
    if (mine.empty()) return detail::MaybeLoader<Loader>();
    return detail::MaybeLoader<Loader>(Loader(g, mine, layer_marks, eval_lo));
  };
  auto val_loader = eval_loader(val_all);
  auto test_loader = eval_loader(test_all);

  torch::manual_seed(o.seed);
  TrainerOptions to{.lr = o.lr, .weight_decay = o.weight_decay, .device = o.device};
  to.all_reduce.timeout = o.collective_timeout;
  to.gradient_group = groups.gradients;
  Trainer<detail::HeteroModel> trainer(detail::HeteroModel(o.model, mo), to, group);
  const torch::Device dev = o.device;

  // One batch through the model: typed blocks, typed inputs (features, or embedding rows
  // that collect their gradient while training).
  struct Forward {
    torch::Tensor logits, labels;
    std::vector<std::pair<std::int32_t, std::vector<std::int64_t>>> emb_ids;
    std::vector<torch::Tensor> emb_rows;
  };
  auto forward = [&](NodeBatch& b, bool learn) {
    Forward f;
    std::vector<HeteroBlockTensors> blocks;
    for (std::size_t l = 0; l < b.blocks.size(); ++l) {
      const Block& blk = b.blocks[l];
      const auto et = g.edge_types_of(blk.eid);
      const auto st = l == 0 ? b.input_types : g.node_types_of(blk.src_nodes);
      blocks.push_back(hetero_block_tensors(blk, et, st, num_rel, num_ntypes, dev));
    }
    std::vector<TypedInput> inputs;
    const auto long_opts = torch::TensorOptions().dtype(torch::kLong);
    for (auto& r : b.typed_features) {
      const auto n = static_cast<std::int64_t>(r.positions.size());
      inputs.push_back(
          {r.ntype, torch::from_blob(r.positions.data(), {n}, long_opts).to(dev, false, true),
           torch::from_blob(r.rows.data(), {n, r.cols}, torch::TensorOptions().dtype(torch::kFloat))
               .to(dev, false, true)});
    }
    // Featureless types among the inputs: their embedding rows.
    std::vector<std::vector<std::int64_t>> pos(ntypes.size());
    for (std::size_t i = 0; i < b.input_types.size(); ++i)
      if (embs[static_cast<std::size_t>(b.input_types[i])])
        pos[static_cast<std::size_t>(b.input_types[i])].push_back(static_cast<std::int64_t>(i));
    for (std::int32_t t = 0; t < num_ntypes; ++t) {
      auto& p = pos[static_cast<std::size_t>(t)];
      if (p.empty()) continue;
      std::vector<std::int64_t> ids(p.size());
      for (std::size_t i = 0; i < p.size(); ++i)
        ids[i] = b.input_nodes[static_cast<std::size_t>(p[i])];
      auto rows = embs[static_cast<std::size_t>(t)]->pull(ids);
      const auto n = static_cast<std::int64_t>(ids.size());
      auto x = torch::from_blob(rows.data(), {n, o.embedding_dim},
                                torch::TensorOptions().dtype(torch::kFloat))
                   .to(dev, false, true);
      if (learn) x.requires_grad_(true);
      inputs.push_back({t, torch::from_blob(p.data(), {n}, long_opts).to(dev, false, true), x});
      f.emb_ids.emplace_back(t, std::move(ids));
      f.emb_rows.push_back(x);
    }
    f.logits = trainer.model().forward(blocks, inputs);
    const auto rows = static_cast<std::int64_t>(b.labels.size());
    f.labels = torch::from_blob(b.labels.data(), {rows}, long_opts).to(dev, false, true);
    return f;
  };
  auto evaluate = [&](auto& source, std::int64_t epoch, Metric metric, detail::F1Counts* f1) {
    torch::NoGradGuard no_grad;
    trainer.model()->eval();
    source.begin_epoch(epoch);
    detail::MetricAccumulator acc;
    while (auto batch = source.next()) {
      const Forward f = forward(*batch, false);
      acc.add(f.logits, f.labels);
      if (f1) f1->add(f.logits, f.labels);
    }
    trainer.model()->train();
    return acc.reduce(trainer.group(), metric, trainer.collective_timeout());
  };

  const nlohmann::json identity = {{"task", "hetero_node_classification"},
                                   {"model", o.model},
                                   {"target_ntype", o.target_ntype},
                                   {"num_layers", mo.num_layers},
                                   {"hidden", o.hidden},
                                   {"num_classes", res.num_classes},
                                   {"num_nodes", g.num_nodes()},
                                   {"num_edges", g.num_edges()},
                                   {"seed", o.seed}};
  if (rank == 0 && !o.out.empty()) std::filesystem::create_directories(o.out);
  Metric metric = o.metric;
  double val = 0, epoch_s_sum = 0;
  for (std::int64_t e = 0; e < o.epochs; ++e) {
    torch::manual_seed(detail::epoch_torch_seed(o.seed, e, rank));
    Stopwatch epoch_clock;
    EpochStats st;
    trainer.check_batch_count(train_loader.num_batches());
    trainer.model()->train();
    train_loader.begin_epoch(e);
    double loss_sum = 0, total = 0;
    detail::MetricAccumulator acc;
    while (auto batch = train_loader.next()) {
      st.sample_s += batch->timings.sample_s;
      st.fetch_s += batch->timings.fetch_s;
      st.traffic += batch->timings.traffic;  // the epoch's own (the next one's may be early)
      Stopwatch clock;
      Forward f = [&] {
        const TrafficScope traffic(st.traffic);  // featureless types' learned rows
        return forward(*batch, true);
      }();
      const torch::Tensor loss = torch::cross_entropy_loss(f.logits, f.labels);
      st.allreduce_s += trainer.step(loss);
      for (std::size_t k = 0; k < f.emb_ids.size(); ++k) {
        const auto t = static_cast<std::size_t>(f.emb_ids[k].first);
        const torch::Tensor grad = f.emb_rows[k].grad().to(torch::kCPU).contiguous();
        embs[t]->record_gradient(f.emb_ids[k].second,
                                 {grad.data_ptr<float>(), static_cast<std::size_t>(grad.numel())});
      }
      if (emb_opt) emb_opt->step();
      const auto n = static_cast<double>(f.labels.size(0));
      loss_sum += loss.item<double>() * n;
      acc.add(f.logits.detach(), f.labels);
      total += n;
      st.compute_s += clock.seconds();
    }
    std::vector<double> sums{loss_sum, total, static_cast<double>(st.traffic.rows),
                             static_cast<double>(st.traffic.bytes)};
    if (trainer.group())
      sums = all_reduce_sum(*trainer.group(), sums, trainer.collective_timeout());
    const EvalResult m = acc.reduce(trainer.group(), metric, trainer.collective_timeout());
    metric = m.metric;
    st.epoch_s = epoch_clock.seconds();
    val = evaluate(val_loader, e, metric, nullptr).value;
    epoch_s_sum += st.epoch_s;
    const EpochRow row{.epoch = e,
                       .loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0,
                       .train_metric = m.value,
                       .val_metric = val,
                       .epoch_s = st.epoch_s,
                       .sample_s = st.sample_s,
                       .fetch_s = st.fetch_s,
                       .compute_s = st.compute_s - st.allreduce_s,
                       .allreduce_s = st.allreduce_s,
                       .remote_rows = static_cast<std::int64_t>(sums[2]),
                       .remote_bytes = static_cast<std::int64_t>(sums[3])};
    if (rank == 0)
      detail::publish_epoch(
          res, row, metric, o.out, trainer, identity,
          [] { return nlohmann::json::object(); }, on_epoch);
  }
  res.metric = metric;
  res.val = val;
  detail::F1Counts f1(res.num_classes);
  res.test = evaluate(test_loader, o.epochs, metric, &f1).value;
  res.extra = {{"test_macro_f1", f1.macro_f1(trainer.group(), trainer.collective_timeout())},
               {"model", o.model},
               {"target_ntype", o.target_ntype}};
  detail::finish_result(res, g, o, 0, o.epochs, epoch_s_sum, rank, world);
  return res;
}

}  // namespace distgraph

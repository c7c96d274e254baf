// Trainer: the data-parallel training and evaluation loop over mini-batches of blocks.
#pragma once

#include <torch/optim/adam.h>
#include <torch/types.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/core/trace.hpp"
#include "distgraph/distributed/dist_embedding.hpp"
#include "distgraph/distributed/remote_traffic.hpp"
#include "distgraph/nn/block_tensors.hpp"
#include "distgraph/train/allreduce.hpp"
#include "distgraph/train/concepts.hpp"
#include "distgraph/train/metrics.hpp"

namespace distgraph {

/// Optimiser, device and all-reduce settings of a Trainer (designated initialisers).
struct TrainerOptions {
  double lr = 0.01;            ///< Adam learning rate
  double weight_decay = 5e-4;  ///< Adam's L2 penalty on every parameter
  /// Where the model and each batch live. On a CUDA device features are staged through a
  /// pinned host buffer and copied asynchronously.
  torch::Device device = torch::kCPU;
  AllReduceOptions all_reduce{};  ///< buckets and collective timeout (with a group)
  /// The group that averages the gradients and broadcasts the parameters (NCCL for CUDA
  /// parameters: see trainer_groups_from_env); none: the trainer's own group.
  c10::intrusive_ptr<CollectiveGroup> gradient_group{};
};

/// Learnable input rows in place of fixed features: a DistEmbedding with its sparse
/// optimizer, type-erased so a Trainer does not depend on the client type (see
/// input_embedding()). The trainer pulls each batch's input rows, records their gradients
/// after backward, and steps the sparse optimizer (on the servers) after the dense one.
struct InputEmbedding {
  std::int64_t dim = 0;
  std::function<std::vector<float>(std::span<const std::int64_t>)> pull;
  std::function<void(std::span<const std::int64_t>, std::span<const float>)> record_gradient;
  std::function<void()> step;
};

/// The InputEmbedding of `embedding`, updated by `optimizer` (e.g. SparseAdam over it).
template <class Client, class SparseOpt>
InputEmbedding input_embedding(DistEmbedding<Client> embedding, SparseOpt optimizer) {
  auto opt = std::make_shared<SparseOpt>(std::move(optimizer));
  return {.dim = embedding.dim(),
          .pull = [embedding](std::span<const std::int64_t> ids) { return embedding.pull(ids); },
          .record_gradient =
              [embedding](std::span<const std::int64_t> ids, std::span<const float> g) mutable {
                embedding.record_gradient(ids, g);
              },
          .step = [opt] { opt->step(); }};
}

/// One training epoch, summed over this trainer's batches; loss and train_metric are
/// over all trainers (weighted by output nodes), the times are this trainer's, in seconds.
struct EpochStats {
  std::int64_t epoch = 0;
  std::int64_t num_batches = 0;
  double loss = 0;                   ///< mean cross-entropy per output node
  double train_metric = 0;           ///< the metric (EpochStats::metric) of the training batches
  Metric metric = Metric::accuracy;  ///< what train_metric measures
  double epoch_s = 0;                ///< wall time of train_epoch
  double sample_s = 0;     ///< sampling the blocks (in the loader, maybe in the background)
  double fetch_s = 0;      ///< pulling features and labels (likewise)
  double wait_s = 0;       ///< blocked in the loader's next()
  double copy_s = 0;       ///< batches to tensors on the device (host-to-device copies)
  double compute_s = 0;    ///< forward, backward, optimiser step
  double allreduce_s = 0;  ///< gradient all-reduce
  /// CPU seconds this trainer's process used during train_epoch, all its threads (the
  /// training step, prefetch, I/O, collectives; servers too where they are in-process,
  /// as in a StandaloneCluster): cpu_s / epoch_s is the cores it kept busy.
  double cpu_s = 0;
  /// What this trainer's batches fetched from other machines (BatchTimings::traffic,
  /// summed, whenever they were made), and the learned input rows it pulled for them.
  RemoteTraffic traffic{};
};

/// An evaluation over all trainers' shares of a node set.
struct EvalResult {
  Metric metric = Metric::accuracy;
  double value = 0;            ///< accuracy or ROC-AUC, a fraction in [0, 1]
  std::int64_t num_nodes = 0;  ///< output nodes evaluated, over all trainers
  double loss = 0;             ///< mean cross-entropy per evaluated node, over all trainers
};

namespace detail {

/// Hands `batch` back to `source` when the source takes batches back (the data loaders'
/// recycle(): later batches reuse its feature buffer); else it is simply dropped.
template <class Source, class Batch>
void recycle_batch(Source& source, Batch& batch) {
  if constexpr (requires { source.recycle(std::move(batch)); }) source.recycle(std::move(batch));
}

/// The raw material of a metric, gathered batch by batch and reduced over a group:
/// correct/total counts for accuracy, class-1 scores and labels for ROC-AUC (kept only
/// when the model has two output classes).
class MetricAccumulator {
 public:
  /// Adds one batch's logits [n, classes] and labels [n] (any device). `loss_sum`: the
  /// batch's summed cross-entropy when the caller has it already (a training step's mean
  /// loss times n: the same, as no label is ignored), else computed here.
  void add(const torch::Tensor& logits, const torch::Tensor& labels,
           std::optional<double> loss_sum = std::nullopt) {
    classes_ = logits.size(1);
    // Summed, so that trainers with different node counts weigh each node equally.
    loss_ += loss_sum
                 ? *loss_sum
                 : torch::cross_entropy_loss(logits, labels, {}, at::Reduction::Sum).item<double>();
    correct_ += logits.argmax(1).eq(labels).sum().item<double>();
    total_ += static_cast<double>(labels.size(0));
    if (classes_ == 2) {
      scores_.push_back(torch::softmax(logits, 1).select(1, 1).to(torch::kCPU, torch::kDouble));
      labels_.push_back(labels.to(torch::kCPU).clone());  // may view a batch's vector
    }
  }

  /// The metric over every trainer of `group` (none: this one alone). `automatic` is
  /// ROC-AUC for two output classes, else accuracy, agreed over the group. Collective.
  EvalResult reduce(CollectiveGroup* group, Metric metric, std::chrono::milliseconds timeout) {
    std::int64_t classes = classes_;
    if (metric == Metric::automatic) {
      if (group != nullptr) classes = all_reduce_min_max(*group, classes, timeout).second;
      metric = classes == 2 ? Metric::roc_auc : Metric::accuracy;
    }
    EvalResult r;
    r.metric = metric;
    std::vector<double> sums{correct_, total_, loss_};
    if (group != nullptr) sums = all_reduce_sum(*group, sums, timeout);
    r.loss = sums[1] > 0 ? sums[2] / sums[1] : 0.0;
    if (metric == Metric::accuracy) {
      r.num_nodes = static_cast<std::int64_t>(sums[1]);
      r.value = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
      return r;
    }
    if (classes_ != 2 && total_ > 0)
      throw InvalidArgument("evaluate: roc_auc needs 2 output classes; the model has " +
                            std::to_string(classes_));
    auto s = scores_.empty() ? torch::empty({0}, torch::kDouble) : torch::cat(scores_);
    auto l = labels_.empty() ? torch::empty({0}, torch::kLong) : torch::cat(labels_);
    if (group != nullptr) {
      s = all_gather_cat(*group, s, timeout);
      l = all_gather_cat(*group, l, timeout);
    }
    s = s.contiguous();
    l = l.contiguous();
    r.num_nodes = s.numel();
    r.value = roc_auc({s.data_ptr<double>(), static_cast<std::size_t>(s.numel())},
                      {l.data_ptr<std::int64_t>(), static_cast<std::size_t>(l.numel())});
    return r;
  }

 private:
  std::int64_t classes_ = -1;
  double correct_ = 0, total_ = 0, loss_ = 0;
  std::vector<torch::Tensor> scores_, labels_;
};

}  // namespace detail

/// Trains `Model` (a torch module holder whose `forward(const std::vector<BlockTensors>&,
/// torch::Tensor features)` returns logits of the last block's destinations, as GraphSAGE,
/// GCN, GAT and NodeModel do; parameters its `undecayed_parameters()` lists, if it has one, get no
/// weight decay) with cross-entropy and Adam, data-parallel when given a c10d process group:
/// parameters are broadcast from rank 0 at construction and gradients averaged after each
/// backward (GradientAllReducer). The device is a runtime value (`options.device`), so the
/// same instantiation trains on the CPU or on `cuda:N`. Not thread-safe; every trainer of
/// the group must call train_epoch / evaluate in the same order (they are collective).
template <class Model>
class Trainer {
 public:
  /// Moves `model` to options.device. With `group`, blocks until rank 0's parameters
  /// arrive (CollectiveError after options.all_reduce.timeout).
  explicit Trainer(Model model, TrainerOptions options = {},
                   c10::intrusive_ptr<CollectiveGroup> group = {})
      : model_(std::move(model)), options_(std::move(options)), group_(std::move(group)) {
    model_->to(options_.device);
    const auto adam = torch::optim::AdamOptions(options_.lr).weight_decay(options_.weight_decay);
    std::vector<torch::Tensor> undecayed;
    if constexpr (requires { model_->undecayed_parameters(); })
      undecayed = model_->undecayed_parameters();
    if (undecayed.empty()) {
      optimizer_ = std::make_unique<torch::optim::Adam>(model_->parameters(), adam);
    } else {
      // A model that keeps some parameters out of the L2 penalty (GCN: Kipf & Welling
      // decay the first layer only) gets a second group without weight decay; models
      // without such parameters keep one group, so their checkpoints read as before.
      std::vector<torch::Tensor> decayed;
      for (const auto& p : model_->parameters())
        if (std::none_of(undecayed.begin(), undecayed.end(),
                         [&](const torch::Tensor& u) { return u.is_same(p); }))
          decayed.push_back(p);
      auto plain = std::make_unique<torch::optim::AdamOptions>(adam);
      plain->weight_decay(0.0);
      optimizer_ = std::make_unique<torch::optim::Adam>(
          std::vector<torch::optim::OptimizerParamGroup>{
              torch::optim::OptimizerParamGroup(decayed),
              torch::optim::OptimizerParamGroup(undecayed, std::move(plain))},
          adam);
    }
    if (options_.gradient_group && !group_)
      throw InvalidArgument("Trainer: a gradient group without a trainer group");
    if (group_) {
      auto grads = options_.gradient_group ? options_.gradient_group : group_;
      if (grads->getSize() != group_->getSize() || grads->getRank() != group_->getRank())
        throw InvalidArgument(
            "Trainer: the gradient group (rank " + std::to_string(grads->getRank()) + " of " +
            std::to_string(grads->getSize()) + ") is not the trainer group (rank " +
            std::to_string(group_->getRank()) + " of " + std::to_string(group_->getSize()) + ")");
      reducer_ = std::make_unique<GradientAllReducer>(std::move(grads), model_->parameters(),
                                                      options_.all_reduce);
      reducer_->broadcast_parameters(0);
    }
  }

  /// Trains one epoch over `source`'s batches (source.begin_epoch(epoch) first). With a
  /// group, the trainers' batch counts are compared first: BatchCountMismatch on every
  /// trainer if they differ. Throws InvalidArgument when a batch has no labels or
  /// features, or the source yields another number of batches than num_batches() said;
  /// ShapeError for features or labels of the wrong size; CollectiveError when a peer
  /// fails; and whatever the source throws. `metric` is what train_metric measures
  /// (automatic: as in evaluate).
  template <BatchSource Source>
  EpochStats train_epoch(Source& source, std::int64_t epoch, Metric metric = Metric::automatic) {
    Stopwatch epoch_clock;
    const double cpu_start = process_cpu_seconds();
    EpochStats st;
    st.epoch = epoch;
    const auto expected = static_cast<std::int64_t>(source.num_batches());
    check_batch_count(expected);
    model_->train();
    source.begin_epoch(epoch);
    detail::MetricAccumulator acc;
    trace::Span epoch_span("epoch");
    epoch_span.arg("epoch", epoch);
    for (;;) {
      trace::Span wait_span("wait");  // blocked on the loader (its prefetch threads)
      auto batch = source.next();
      wait_span.end();
      if (!batch) break;
      st.sample_s += batch->timings.sample_s;
      st.fetch_s += batch->timings.fetch_s;
      st.wait_s += batch->timings.wait_s;
      if constexpr (requires { batch->timings.traffic; }) st.traffic += batch->timings.traffic;
      Stopwatch clock;
      trace::Span copy_span("copy");
      // Learned input rows are pulled here, not in the loader: their traffic is the epoch's.
      const torch::Tensor x = [&] {
        const TrafficScope traffic(st.traffic);
        return inputs_of(*batch, /*learn=*/true);
      }();
      const torch::Tensor y = labels_of(*batch);
      // The blocks' copies are pageable, so they return only once the stream has also
      // finished the features' asynchronous copy queued before them: this is the whole
      // host-to-device time (PERFORMANCE.md, GPU).
      const auto blocks = block_tensors(std::move(batch->blocks), options_.device);
      copy_span.end();
      st.copy_s += clock.seconds();
      clock.reset();
      trace::Span forward_span("forward");
      const torch::Tensor logits = model_->forward(blocks, x);
      const torch::Tensor loss = torch::cross_entropy_loss(logits, y);
      forward_span.end();
      trace::Span backward_span("backward");
      optimizer_->zero_grad();
      loss.backward();
      if (embedding_) record_input_gradient(*batch, x);
      backward_span.end();
      st.compute_s += clock.seconds();
      if (reducer_) {
        clock.reset();
        trace::Span reduce_span("all-reduce");
        reducer_->all_reduce_gradients();
        reduce_span.end();
        st.allreduce_s += clock.seconds();
      }
      clock.reset();
      trace::Span step_span("optimizer");
      optimizer_->step();
      if (embedding_) embedding_->step();
      step_span.end();
      // The loss read back: on a GPU, where the host waits for the batch's kernels.
      trace::Span metrics_span("metrics");
      acc.add(logits.detach(), y, loss.item<double>() * static_cast<double>(y.size(0)));
      metrics_span.end();
      st.compute_s += clock.seconds();
      ++st.num_batches;
      // After the step no tensor reads the batch's features (x views them on the CPU).
      detail::recycle_batch(source, *batch);
    }
    if (st.num_batches != expected)
      throw InvalidArgument("train_epoch: the source yielded " + std::to_string(st.num_batches) +
                            " batches in epoch " + std::to_string(epoch) +
                            "; its num_batches() said " + std::to_string(expected));
    // The loss comes reduced with the metric's counts: one collective for both.
    const EvalResult m = acc.reduce(group_.get(), metric, options_.all_reduce.timeout);
    st.loss = m.loss;
    st.train_metric = m.value;
    st.metric = m.metric;
    st.epoch_s = epoch_clock.seconds();
    st.cpu_s = process_cpu_seconds() - cpu_start;
    return st;
  }

  /// Evaluates the model on `source`'s batches (this trainer's share of a node set, e.g.
  /// node_split of the validation IDs with force_even off and fanouts -1 for full
  /// neighbourhoods; counts may differ between trainers) and reduces over the group:
  /// accuracy from summed counts, ROC-AUC over the gathered class-1 scores of every
  /// trainer. `Metric::automatic` is ROC-AUC for 2 output classes, else accuracy (agreed
  /// over the group). Collective; throws as train_epoch, and InvalidArgument from roc_auc
  /// when the evaluated labels hold a single class.
  template <BatchSource Source>
  EvalResult evaluate(Source& source, std::int64_t epoch = 0, Metric metric = Metric::automatic) {
    torch::NoGradGuard no_grad;
    model_->eval();
    source.begin_epoch(epoch);
    detail::MetricAccumulator acc;
    while (auto batch = source.next()) {
      const torch::Tensor x = inputs_of(*batch, /*learn=*/false);
      const torch::Tensor y = labels_of(*batch);
      acc.add(model_->forward(block_tensors(std::move(batch->blocks), options_.device), x), y);
      detail::recycle_batch(source, *batch);
    }
    model_->train();
    return acc.reduce(group_.get(), metric, options_.all_reduce.timeout);
  }

  /// The model's output for `batch` (its blocks are moved out): for tasks with their own
  /// loss, e.g. link prediction. `train` selects training mode (dropout on) or eval mode
  /// (no autograd graph is kept by the caller's NoGradGuard). Not for input embeddings.
  template <class Batch>
  torch::Tensor forward(Batch& batch, bool train) {
    if (embedding_) throw InvalidArgument("Trainer::forward: input embeddings need train_epoch");
    train ? model_->train() : model_->eval();
    const torch::Tensor x = features_of(batch);
    return model_->forward(block_tensors(std::move(batch.blocks), options_.device), x);
  }

  /// One optimisation step on `loss` (computed from forward()): zero the gradients,
  /// backward, average them over the group, Adam step. Returns the all-reduce's seconds.
  /// Collective with a group.
  double step(const torch::Tensor& loss) {
    optimizer_->zero_grad();
    loss.backward();
    double allreduce_s = 0;
    if (reducer_) {
      Stopwatch clock;
      reducer_->all_reduce_gradients();
      allreduce_s = clock.seconds();
    }
    optimizer_->step();
    return allreduce_s;
  }

  /// Compares this trainer's batch count for the coming epoch with the group's (a
  /// trainer that ran out of batches would leave the others waiting in an all-reduce):
  /// BatchCountMismatch on every trainer when they differ. Collective with a group.
  void check_batch_count(std::int64_t batches) {
    if (!group_) return;
    const auto [lo, hi] = all_reduce_min_max(*group_, batches, options_.all_reduce.timeout);
    if (lo != hi) throw BatchCountMismatch(group_->getRank(), batches, lo, hi);
  }

  /// The group (null for a single trainer) and the collective timeout.
  CollectiveGroup* group() const noexcept { return group_.get(); }
  std::chrono::milliseconds collective_timeout() const noexcept {
    return options_.all_reduce.timeout;
  }

  /// Uses `e`'s rows as the model's input instead of the batches' features (the model's
  /// input width must be e.dim); the batches must carry `input_nodes`.
  void set_input_embedding(InputEmbedding e) { embedding_ = std::move(e); }

  Model& model() noexcept { return model_; }
  torch::optim::Adam& optimizer() noexcept { return *optimizer_; }
  const TrainerOptions& options() const noexcept { return options_; }
  /// This trainer's rank and the group size (0 and 1 without a group).
  std::int32_t rank() const { return group_ ? group_->getRank() : 0; }
  std::int32_t world_size() const { return group_ ? group_->getSize() : 1; }

 private:
  /// The batch's features as a [num_src, feat_dim] float tensor on the device: a view of
  /// the batch's vector on the CPU (no copy), else staged through pinned host memory. The
  /// pinned buffer is reused: the previous batch's copy has finished, since each step
  /// reads its loss back (a device synchronisation).
  template <class Batch>
  torch::Tensor features_of(const Batch& b) {
    const std::int64_t rows = b.blocks.empty() ? 0 : b.blocks.front().num_src();
    const std::int64_t dim = b.feat_dim;
    if (dim < 1) throw InvalidArgument("trainer: the batch has no features (feat_dim 0)");
    if (static_cast<std::int64_t>(b.features.size()) != rows * dim)
      throw ShapeError("trainer batch features", std::to_string(b.features.size()) +
                                                     " values; expected " + std::to_string(rows) +
                                                     " input nodes x " + std::to_string(dim));
    auto host = torch::from_blob(const_cast<float*>(b.features.data()), {rows, dim},
                                 torch::TensorOptions().dtype(torch::kFloat));
    if (options_.device.is_cpu()) return host;
    if (pinned_.numel() < rows * dim)
      pinned_ = torch::empty({rows * dim},
                             torch::TensorOptions().dtype(torch::kFloat).pinned_memory(true));
    auto stage = pinned_.slice(0, 0, rows * dim).view({rows, dim});
    stage.copy_(host);
    return stage.to(options_.device, /*non_blocking=*/true);
  }

  /// The model's input: the batch's features, or its input nodes' embedding rows (a leaf
  /// that collects their gradient when `learn`).
  template <class Batch>
  torch::Tensor inputs_of(const Batch& b, bool learn) {
    if (!embedding_) return features_of(b);
    if constexpr (requires { b.input_nodes; }) {
      const auto rows = static_cast<std::int64_t>(b.input_nodes.size());
      auto values = embedding_->pull(b.input_nodes);
      auto x = torch::from_blob(values.data(), {rows, embedding_->dim},
                                torch::TensorOptions().dtype(torch::kFloat))
                   .to(options_.device, /*non_blocking=*/false, /*copy=*/true);
      return learn ? x.requires_grad_(true) : x;
    } else {
      throw InvalidArgument("trainer: an input embedding needs batches with input_nodes");
    }
  }

  /// Hands d(loss)/d(input rows) to the embedding's record.
  template <class Batch>
  void record_input_gradient(const Batch& b, const torch::Tensor& x) {
    if constexpr (requires { b.input_nodes; }) {
      const torch::Tensor g = x.grad().to(torch::kCPU).contiguous();
      embedding_->record_gradient(b.input_nodes,
                                  {g.data_ptr<float>(), static_cast<std::size_t>(g.numel())});
    }
  }

  /// The batch's labels as an int64 tensor on the device.
  template <class Batch>
  torch::Tensor labels_of(const Batch& b) const {
    const std::int64_t rows = b.blocks.empty() ? 0 : b.blocks.back().num_dst;
    if (b.labels.empty()) throw InvalidArgument("trainer: the batch has no labels");
    if (static_cast<std::int64_t>(b.labels.size()) != rows)
      throw ShapeError("trainer batch labels", std::to_string(b.labels.size()) +
                                                   " labels; expected one per output node (" +
                                                   std::to_string(rows) + ")");
    auto host = torch::from_blob(const_cast<std::int64_t*>(b.labels.data()), {rows},
                                 torch::TensorOptions().dtype(torch::kLong));
    return options_.device.is_cpu() ? host : host.to(options_.device);
  }

  Model model_;
  TrainerOptions options_;
  c10::intrusive_ptr<CollectiveGroup> group_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  std::unique_ptr<GradientAllReducer> reducer_;
  std::optional<InputEmbedding> embedding_;
  torch::Tensor pinned_;
};

}  // namespace distgraph

// Exact evaluation by layer-wise inference: each trainer computes its own share of the
// nodes (inference_share) over full neighbourhoods and scores the validation or test
// nodes among them, so a trainer reads masks and labels of its share only.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/distributed/graph_concepts.hpp"
#include "distgraph/infer/layerwise_inference.hpp"
#include "distgraph/nn/node_model.hpp"
#include "distgraph/train/allreduce.hpp"
#include "distgraph/train/trainer.hpp"

namespace distgraph {

/// How validation metrics are computed during training (`distgraph train --eval`).
/// full: exact, over full neighbourhoods, by layer-wise inference (cost grows with the
/// edges, whatever the validation set's size); sampled: over blocks sampled with the
/// training fanouts (cost grows with the validation nodes times the fanouts; an estimate).
/// The test metric at the end is exact either way.
enum class EvalMode { full, sampled };

inline const char* to_string(EvalMode m) { return m == EvalMode::full ? "full" : "sampled"; }

/// The EvalMode named `s`; InvalidArgument otherwise.
inline EvalMode parse_eval_mode(std::string_view s) {
  if (s == "full") return EvalMode::full;
  if (s == "sampled") return EvalMode::sampled;
  throw InvalidArgument("evaluation '" + std::string(s) + "'; expected full or sampled");
}

/// The nodes of one boolean mask among a trainer's inference share, with their labels.
struct ShareNodes {
  std::vector<std::int64_t> ids;  ///< global IDs
  torch::Tensor rows;             ///< int64 positions of `ids` in the share
  torch::Tensor labels;           ///< int64 labels of `ids`
};

/// What layer-wise evaluation reads (designated initialisers).
struct FullEvaluationOptions {
  std::string feature = "feat", label = "label";
  std::int64_t batch_size = 4096;  ///< destinations per 1-hop block
  std::int32_t rank = 0;           ///< this trainer (Context::rank()'s numbering)
  torch::Device device = torch::kCPU;
  /// The metric's collectives and each layer's barrier (a dead trainer stops the others
  /// within it).
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

/// Whether train_node_classification can evaluate `Graph` by layer-wise inference (it
/// needs node data it can create for the layers' rows).
template <class Graph>
inline constexpr bool supports_full_evaluation = requires(Graph g, const std::string& name) {
  g.template create_ndata<float>(name, std::int64_t{1});
};

/// Exact validation and test metrics by layer-wise inference over this trainer's share of
/// the nodes. Construction reads the share's masks and the masked nodes' labels (nothing
/// that grows with the whole graph); evaluate() is collective over every trainer of the
/// graph's layout (the client's barriers) and of `group` (the metric).
template <TrainingGraph Graph>
class FullEvaluation {
 public:
  FullEvaluation(Graph g, FullEvaluationOptions o) : g_(std::move(g)), o_(std::move(o)) {
    share_ = inference_share(g_, o_.rank);
  }

  /// The nodes of boolean node data `mask` in this trainer's share, with labels (none
  /// when the graph has no such mask). Throws InvalidArgument for a negative label.
  ShareNodes nodes_of(const std::string& mask) const {
    ShareNodes s;
    std::vector<std::int64_t> rows;
    try {
      const auto m = g_.template ndata<bool>(mask);
      constexpr std::size_t chunk = 1 << 20;
      std::unique_ptr<bool[]> values(new bool[std::min(chunk, share_.size()) + 1]);
      for (std::size_t lo = 0; lo < share_.size(); lo += chunk) {
        const std::size_t n = std::min(chunk, share_.size() - lo);
        m.pull(std::span<const std::int64_t>(share_.data() + lo, n),
               std::span<bool>(values.get(), n));
        for (std::size_t i = 0; i < n; ++i)
          if (values[i]) {
            rows.push_back(static_cast<std::int64_t>(lo + i));
            s.ids.push_back(share_[lo + i]);
          }
      }
    } catch (const NotFound&) {
    }
    std::vector<std::int64_t> labels;
    if (!s.ids.empty()) labels = g_.template ndata<std::int64_t>(o_.label).pull(s.ids);
    for (const auto y : labels)
      if (y < 0)
        throw InvalidArgument("node data '" + o_.label + "': negative label " + std::to_string(y) +
                              " on a labelled node");
    s.rows = torch::tensor(rows, torch::kLong);
    s.labels = torch::tensor(labels, torch::kLong);
    return s;
  }

  /// The metric of `model` on each of `sets` (over all trainers' shares), from one
  /// layer-wise pass. Collective.
  std::vector<EvalResult> evaluate(NodeModel& model, std::span<const ShareNodes* const> sets,
                                   Metric metric, CollectiveGroup* group) {
    LayerwiseResult r;
    if constexpr (supports_full_evaluation<Graph>)
      r = layerwise_inference(g_, model,
                              {.feature = o_.feature,
                               .batch_size = o_.batch_size,
                               .embeddings = false,
                               .logits = true,
                               .rank = o_.rank,
                               .tensor_prefix = "distgraph:eval/",
                               .device = o_.device,
                               .barrier_timeout = o_.timeout});
    else
      throw InvalidArgument("FullEvaluation: this graph cannot hold the layers' rows");
    std::vector<EvalResult> out;
    for (const ShareNodes* s : sets) {
      detail::MetricAccumulator acc;
      if (s->ids.size() > 0) acc.add(r.logits.index_select(0, s->rows), s->labels);
      out.push_back(acc.reduce(group, metric, o_.timeout));
    }
    return out;
  }

  /// This trainer's share (global IDs).
  const std::vector<std::int64_t>& share() const noexcept { return share_; }

 private:
  Graph g_;
  FullEvaluationOptions o_;
  std::vector<std::int64_t> share_;
};

}  // namespace distgraph

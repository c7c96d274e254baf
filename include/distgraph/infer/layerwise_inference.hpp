// Layer-wise inference: every node's output of a NodeModel, one layer at a time over full
// 1-hop neighbourhoods, each layer's rows kept in a DistTensor that the next layer reads.
#pragma once

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/distributed/graph_concepts.hpp"
#include "distgraph/loaders/loader_features.hpp"
#include "distgraph/loaders/loader_options.hpp"
#include "distgraph/nn/block_tensors.hpp"
#include "distgraph/nn/node_model.hpp"
#include "distgraph/sampling/block.hpp"
#include "distgraph/sampling/rng.hpp"
#include "distgraph/server/protocol.hpp"

namespace distgraph {

/// What layerwise_inference computes and how (designated initialisers).
struct LayerwiseOptions {
  std::string feature = "feat";    ///< node data read as the first layer's input (float32/16)
  std::int64_t batch_size = 1024;  ///< destination nodes per 1-hop block, >= 1
  /// Return the last layer's input rows of this trainer's nodes: the last hidden layer's
  /// output (the input features for a one-layer model).
  bool embeddings = true;
  bool logits = true;  ///< return the last layer's output rows (class scores)
  /// This trainer among the client's layout().num_trainers, ranked machine-major (what
  /// Context::rank() is); picks its share (inference_share).
  std::int32_t rank = 0;
  /// Layer l's output lives in node data "<prefix>layer<l>" until the pass ends.
  std::string tensor_prefix = "distgraph:infer/";
  torch::Device device = torch::kCPU;  ///< where each block is computed
  /// How long a trainer waits at a layer's barrier for the others to finish the layer (a
  /// dead trainer stops the rest within it): a layer's length grows with the graph, so
  /// not the client's per-call timeout.
  std::chrono::milliseconds barrier_timeout{std::chrono::minutes(30)};
};

/// What one trainer's layerwise_inference returns: its share of the nodes and their rows.
struct LayerwiseResult {
  std::vector<std::int64_t> nodes;  ///< this trainer's nodes (global IDs), row i is nodes[i]
  torch::Tensor embeddings;         ///< float32 [nodes, width] on the CPU; undefined unless asked
  torch::Tensor logits;             ///< float32 [nodes, classes] on the CPU; undefined unless asked
  std::vector<double> layer_s;      ///< seconds of each layer on this trainer, barrier included
  double seconds = 0;               ///< the whole pass on this trainer
};

/// This trainer's share of the nodes in layer-wise inference: the nodes its machine's
/// partition owns, split into contiguous equal runs among the machine's trainers (local
/// rank = rank modulo trainers per machine). A client with no machine (standalone) splits
/// every partition's nodes among all trainers. The shares of all trainers cover every node
/// once. Throws InvalidArgument when the layout's trainers do not divide evenly over its
/// machines or `rank` is not a trainer of this machine.
template <TrainingGraph Graph>
std::vector<std::int64_t> inference_share(const Graph& g, std::int32_t rank) {
  const auto& layout = g.client().layout();
  const auto& book = g.book();
  if (rank < 0 || rank >= layout.num_trainers)
    throw IdOutOfRange("inference rank", rank, 0, layout.num_trainers);
  std::vector<std::int64_t> nodes;
  std::int64_t part = rank, parts = layout.num_trainers;
  if (layout.machine_id < 0) {
    for (std::int32_t p = 0; p < book.num_partitions(); ++p) {
      const auto owned = book.owned_nodes(PartId(p));
      nodes.insert(nodes.end(), owned.begin(), owned.end());
    }
  } else {
    if (layout.num_trainers % layout.num_machines != 0)
      throw InvalidArgument("inference_share: " + std::to_string(layout.num_trainers) +
                            " trainers over " + std::to_string(layout.num_machines) +
                            " machines; expected the same number on every machine");
    parts = layout.num_trainers / layout.num_machines;
    if (rank / parts != layout.machine_id)
      throw InvalidArgument("inference_share: rank " + std::to_string(rank) +
                            " is not a trainer of machine " + std::to_string(layout.machine_id) +
                            "; expected ranks numbered machine-major");
    part = rank % parts;
    nodes = book.owned_nodes(PartId(layout.machine_id));
  }
  const auto n = static_cast<std::int64_t>(nodes.size());
  const std::int64_t begin = n * part / parts, end = n * (part + 1) / parts;
  return std::vector<std::int64_t>(nodes.begin() + begin, nodes.begin() + end);
}

namespace detail {

/// A float32 CPU [rows, cols] tensor owning `v`'s values (no copy).
inline torch::Tensor adopt_rows(std::vector<float>&& v, std::int64_t rows, std::int64_t cols) {
  auto* owned = new std::vector<float>(std::move(v));
  return torch::from_blob(
      owned->data(), {rows, cols}, [owned](void*) { delete owned; },
      torch::TensorOptions().dtype(torch::kFloat));
}

}  // namespace detail

/// Every node's output of `model` computed layer by layer (DGL's layer-wise inference):
/// for l = 0 .. L-1 each trainer takes its inference_share in batches of o.batch_size
/// destinations, samples each batch's full in-neighbourhood (one 1-hop block), pulls the
/// sources' rows of layer l's input (node data o.feature, then layer l-1's DistTensor) and
/// applies model->forward_layer(l) in eval mode with no autograd; hidden layers' rows are
/// pushed into DistTensor "<tensor_prefix>layer<l>", and all trainers meet at a barrier
/// before layer l+1 reads it. GCN gets every source's in-degree in the graph, so each layer
/// equals the full-graph layer and the result equals the forward pass over full
/// neighbourhoods. Work per layer grows with the edges, not with fanout^layers.
///
/// Collective: every trainer of the client's layout calls it with the same model and
/// options (its own rank). Returns this trainer's nodes with their last-layer input
/// (o.embeddings) and output (o.logits) rows; the layer tensors are deleted at the end.
/// The model's training mode is restored on return. Throws InvalidArgument for a batch
/// size below 1, ShapeError when the feature width is not the model's input width, and
/// what the graph's calls throw (NotFound for a missing feature, TimeoutError, PeerLost).
template <TrainingGraph Graph>
requires requires(Graph g, const std::string& name) {
  g.template create_ndata<float>(name, std::int64_t{1});
}
LayerwiseResult layerwise_inference(Graph g, NodeModel& model, const LayerwiseOptions& o) {
  if (o.batch_size < 1)
    throw InvalidArgument("layerwise_inference: batch size " + std::to_string(o.batch_size) +
                          "; expected >= 1");
  Stopwatch total;
  LayerwiseResult res;
  res.nodes = inference_share(g, o.rank);
  const auto feat = detail::open_feature(g, o.feature);
  if (feat.num_cols() != model->in_feats())
    throw ShapeError("layerwise_inference: node data '" + o.feature + "'",
                     std::to_string(feat.num_cols()) + " columns; the model takes " +
                         std::to_string(model->in_feats()));
  const std::size_t layers = model->num_layers();
  const std::int64_t n = static_cast<std::int64_t>(res.nodes.size());
  using Tensor = typename Graph::template tensor_type<float>;
  std::vector<Tensor> hidden;  // hidden[l]: layer l's output over all nodes
  for (std::size_t l = 0; l + 1 < layers; ++l)
    hidden.push_back(g.template create_ndata<float>(o.tensor_prefix + "layer" + std::to_string(l),
                                                    model->layer_width(l)));

  const bool was_training = model->is_training();
  model->eval();
  torch::NoGradGuard no_grad;
  std::vector<float> h_rows;
  for (std::size_t l = 0; l < layers; ++l) {
    Stopwatch clock;
    const bool last = l + 1 == layers;
    const std::int64_t in_cols = l == 0 ? feat.num_cols() : model->layer_width(l - 1);
    if (last && o.embeddings) res.embeddings = torch::empty({n, in_cols}, torch::kFloat);
    if (last && o.logits) res.logits = torch::empty({n, model->layer_width(l)}, torch::kFloat);
    for (std::int64_t lo = 0; lo < n; lo += o.batch_size) {
      const std::int64_t hi = std::min(n, lo + o.batch_size);
      const std::span<const std::int64_t> dst(res.nodes.data() + lo,
                                              static_cast<std::size_t>(hi - lo));
      // Fanout -1 takes every in-edge, whatever the sampler: the key plays no part. No
      // layer reads edge IDs.
      Block block =
          to_block(sample_layer(g, dst, -1, SampleKey{}, SamplerSpec{}, EdgeIds::omitted), dst);
      const std::int64_t num_src = block.num_src();
      if (l == 0) {
        detail::pull_float_rows(feat, block.src_nodes, h_rows);
      } else {
        h_rows.resize(static_cast<std::size_t>(num_src * in_cols));
        hidden[l - 1].pull(block.src_nodes, h_rows);
      }
      torch::Tensor degrees;
      if (model->needs_source_degrees()) degrees = detail::copy_of(g.in_degrees(block.src_nodes));
      const torch::Tensor h = torch::from_blob(h_rows.data(), {num_src, in_cols}, torch::kFloat);
      const BlockTensors bt = block_tensors(std::move(block), o.device);
      if (last && o.embeddings) res.embeddings.slice(0, lo, hi).copy_(h.slice(0, 0, hi - lo));
      torch::Tensor out = model
                              ->forward_layer(l, bt, h.to(o.device),
                                              degrees.defined() ? degrees.to(o.device) : degrees)
                              .to(torch::kCPU, torch::kFloat)
                              .contiguous();
      if (last) {
        if (o.logits) res.logits.slice(0, lo, hi).copy_(out);
      } else {
        hidden[l].push(dst, std::span<const float>(out.data_ptr<float>(),
                                                   static_cast<std::size_t>(out.numel())));
      }
    }
    // Layer l+1 reads rows every trainer wrote; after the last layer, the tensors can go.
    g.client().barrier(o.tensor_prefix + "layer" + std::to_string(l) + " done", o.barrier_timeout);
    res.layer_s.push_back(clock.seconds());
  }
  model->train(was_training);
  if (o.rank == 0)
    for (const auto& t : hidden) g.client().remove(t.name());
  res.seconds = total.seconds();
  return res;
}

}  // namespace distgraph

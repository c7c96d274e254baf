// NodeModel: GraphSAGE, GCN or GAT behind one module, chosen at run time (distgraph train
// --model sage|gcn|gat).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/nn/block_tensors.hpp"
#include "distgraph/nn/gat.hpp"
#include "distgraph/nn/gcn.hpp"
#include "distgraph/nn/graph_sage.hpp"

namespace distgraph {

/// The homogeneous node models a training recipe can run.
enum class ModelKind { sage, gcn, gat };

/// Name of `m` as `--model` spells it ("sage", "gcn", "gat").
inline const char* to_string(ModelKind m) noexcept {
  switch (m) {
    case ModelKind::sage:
      return "sage";
    case ModelKind::gcn:
      return "gcn";
    case ModelKind::gat:
      return "gat";
  }
  return "?";
}

/// The kind `name` spells. Throws InvalidArgument naming it and the allowed names.
inline ModelKind parse_model_kind(std::string_view name) {
  for (const auto m : {ModelKind::sage, ModelKind::gcn, ModelKind::gat})
    if (name == to_string(m)) return m;
  throw InvalidArgument("model '" + std::string(name) + "'; expected sage, gcn or gat");
}

/// One of GraphSAGE, GCN and GAT as a torch module with the models' forward, for a
/// Trainer whose model is picked at run time. Its parameters are the wrapped model's, in
/// the same order, and save/load write and read exactly what the wrapped model's would:
/// a checkpoint of a run with the wrapper reads back into the bare model and vice versa.
/// Use through the `NodeModel` holder.
class NodeModelImpl : public torch::nn::Module {
 public:
  using variant_type = std::variant<GraphSAGE, GCN, GAT>;

  explicit NodeModelImpl(variant_type model) : model_(std::move(model)) {
    std::visit([this](auto& m) { register_module("model", m); }, model_);
  }

  ModelKind kind() const noexcept { return static_cast<ModelKind>(model_.index()); }

  /// The wrapped model's forward (logits of the last block's destinations); throws as it.
  torch::Tensor forward(const std::vector<BlockTensors>& blocks, torch::Tensor x) {
    return std::visit([&](auto& m) { return m->forward(blocks, std::move(x)); }, model_);
  }

  /// The wrapped model's layer l alone (its forward_layer: conv l and the activation that
  /// follows it in forward()). `src_degrees` [block.num_src] (int64, the sources' degrees
  /// in the graph) is GCN's; the other models ignore it. Throws as the wrapped model.
  torch::Tensor forward_layer(std::size_t l, const BlockTensors& block, const torch::Tensor& h,
                              const torch::Tensor& src_degrees = {}) {
    return std::visit(
        [&](auto& m) {
          if constexpr (std::is_same_v<std::decay_t<decltype(m)>, GCN>)
            return m->forward_layer(l, block, h, src_degrees);
          else
            return m->forward_layer(l, block, h);
        },
        model_);
  }

  /// Layers of the wrapped model (blocks per batch).
  std::size_t num_layers() const {
    return std::visit(
        [](const auto& m) { return static_cast<std::size_t>(m->options().num_layers); }, model_);
  }

  /// Columns of the first layer's input (the node features).
  std::int64_t in_feats() const {
    return std::visit([](const auto& m) { return m->options().in_feats; }, model_);
  }

  /// Columns of layer l's output (after its activation): the hidden width, or the number
  /// of classes for the last layer. Throws std::out_of_range for l >= num_layers().
  std::int64_t layer_width(std::size_t l) const {
    if (l >= num_layers())
      throw std::out_of_range("NodeModel::layer_width: layer " + std::to_string(l) + " of " +
                              std::to_string(num_layers()));
    return std::visit(
        [&](const auto& m) {
          return l + 1 == num_layers() ? m->options().num_classes : m->options().hidden;
        },
        model_);
  }

  /// Whether layer l's output needs its sources' degrees in the graph to equal the
  /// full-graph layer on a 1-hop block (GCN's normalisation).
  bool needs_source_degrees() const noexcept { return kind() == ModelKind::gcn; }

  /// Parameters the wrapped model keeps out of weight decay (GCN's; none for the others).
  std::vector<torch::Tensor> undecayed_parameters() const {
    if (const auto* gcn = std::get_if<GCN>(&model_)) return (*gcn)->undecayed_parameters();
    return {};
  }

  void save(torch::serialize::OutputArchive& archive) const override { inner().save(archive); }
  void load(torch::serialize::InputArchive& archive) override { inner().load(archive); }

  /// The wrapped model's holder, e.g. std::get<GCN>(model->get()).
  variant_type& get() noexcept { return model_; }

 private:
  const torch::nn::Module& inner() const {
    return std::visit([](const auto& m) -> const torch::nn::Module& { return *m; }, model_);
  }
  torch::nn::Module& inner() {
    return std::visit([](auto& m) -> torch::nn::Module& { return *m; }, model_);
  }

  variant_type model_;
};

/// Holder of a NodeModelImpl (`NodeModel model(GCN(GCNOptions{...}))`).
TORCH_MODULE(NodeModel);

/// The shape of a homogeneous node model: what make_node_model builds, and what a
/// checkpoint's run identity records of it. Defaults as NodeClassificationOptions'.
struct NodeModelSpec {
  ModelKind model = ModelKind::sage;
  std::int64_t hidden = 64;
  std::int64_t num_layers = 2;
  double dropout = 0.5;                      ///< after each hidden layer
  double input_dropout = 0.5;                ///< on the input features
  Aggregator aggregator = Aggregator::mean;  ///< GraphSAGE's
  std::int64_t heads = 8;                    ///< GAT: heads per hidden layer, dividing hidden
  double attn_dropout = 0.6;                 ///< GAT: on the attention coefficients
};

/// The model `s` names, for `in_feats` inputs and `num_classes` outputs. Throws
/// InvalidArgument as the model's options check does.
inline NodeModel make_node_model(const NodeModelSpec& s, std::int64_t in_feats,
                                 std::int64_t num_classes) {
  switch (s.model) {
    case ModelKind::gcn:
      return NodeModel(GCN(GCNOptions{.in_feats = in_feats,
                                      .hidden = s.hidden,
                                      .num_classes = num_classes,
                                      .num_layers = s.num_layers,
                                      .dropout = s.dropout,
                                      .input_dropout = s.input_dropout}));
    case ModelKind::gat:
      return NodeModel(GAT(GATOptions{.in_feats = in_feats,
                                      .hidden = s.hidden,
                                      .num_classes = num_classes,
                                      .num_layers = s.num_layers,
                                      .heads = s.heads,
                                      .dropout = s.dropout,
                                      .input_dropout = s.input_dropout,
                                      .attn_dropout = s.attn_dropout}));
    case ModelKind::sage:
      break;
  }
  return NodeModel(GraphSAGE(GraphSAGEOptions{.in_feats = in_feats,
                                              .hidden = s.hidden,
                                              .num_classes = num_classes,
                                              .num_layers = s.num_layers,
                                              .dropout = s.dropout,
                                              .input_dropout = s.input_dropout,
                                              .aggregator = s.aggregator}));
}

static_assert(static_cast<int>(ModelKind::sage) == 0 && static_cast<int>(ModelKind::gcn) == 1 &&
              static_cast<int>(ModelKind::gat) == 2);  // kind() is the variant's index

}  // namespace distgraph

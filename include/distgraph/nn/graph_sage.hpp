// GraphSAGE: a stack of SAGEConv layers with ReLU and dropout, run over a mini-batch's blocks.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/nn/block_tensors.hpp"
#include "distgraph/nn/dropout.hpp"
#include "distgraph/nn/model_checks.hpp"
#include "distgraph/nn/sage_conv.hpp"

namespace distgraph {

/// Shape and regularisation of a GraphSAGE model (designated initialisers).
struct GraphSAGEOptions {
  std::int64_t in_feats = 0;     ///< input feature columns, >= 1
  std::int64_t hidden = 256;     ///< columns of every hidden layer, >= 1
  std::int64_t num_classes = 0;  ///< output columns (logits), >= 1
  std::int64_t num_layers = 2;   ///< SAGEConv layers = blocks per batch, >= 1
  double dropout = 0.5;          ///< after each hidden layer's ReLU, in [0, 1)
  double input_dropout = 0.0;    ///< on the input features, in [0, 1)
  Aggregator aggregator = Aggregator::mean;
};

/// DGL's distributed GraphSAGE example model: layer l maps block l's sources to its
/// destinations; hidden layers are followed by ReLU and dropout. The input of the first
/// layer may be dropped out too (helps on small training sets such as Cora's 140 nodes).
/// Use through the `GraphSAGE` holder; a torch module (train()/eval() switch dropout).
class GraphSAGEImpl : public torch::nn::Module {
 public:
  /// Throws InvalidArgument for a size below 1 or a dropout outside [0, 1).
  explicit GraphSAGEImpl(const GraphSAGEOptions& options) : options_(options) {
    const auto& o = options;
    detail::check_model_options("GraphSAGE", o.in_feats, o.hidden, o.num_classes, o.num_layers,
                                {o.dropout, o.input_dropout});
    layers_ = register_module("layers", torch::nn::ModuleList());
    for (std::int64_t l = 0; l < o.num_layers; ++l) {
      const auto in = l == 0 ? o.in_feats : o.hidden;
      const auto out = l + 1 == o.num_layers ? o.num_classes : o.hidden;
      convs_.push_back(SAGEConv(SAGEConvOptions{
          .in_feats = in, .out_feats = out, .aggregator = o.aggregator, .bias = true}));
      layers_->push_back(convs_.back());
    }
  }

  /// Logits of the last block's destinations, [num_dst, num_classes], from the input
  /// features `x` [blocks[0].num_src, in_feats]. Throws ShapeError when the block count is
  /// not num_layers, consecutive blocks do not chain (block l's destinations are block
  /// l+1's sources) or x has another shape.
  torch::Tensor forward(const std::vector<BlockTensors>& blocks, torch::Tensor x) {
    check_block_chain("GraphSAGE", blocks, options_.num_layers);
    torch::Tensor h = dropout(x, options_.input_dropout);
    for (std::size_t l = 0; l < convs_.size(); ++l) h = forward_layer(l, blocks[l], h);
    return h;
  }

  /// Layer l alone: SAGEConv l on `block` from `h` [block.num_src, its in_feats], then, for
  /// a hidden layer, ReLU and (while training) dropout. forward() is these in turn after
  /// the input dropout; layer-wise inference calls them one layer at a time. Throws
  /// std::out_of_range for l >= num_layers, ShapeError as SAGEConv::forward.
  torch::Tensor forward_layer(std::size_t l, const BlockTensors& block, const torch::Tensor& h) {
    torch::Tensor out = convs_.at(l)->forward(block, h);
    if (l + 1 < convs_.size())
      out = is_training() ? relu_dropout(out, options_.dropout) : torch::relu(out);
    return out;
  }

  const GraphSAGEOptions& options() const noexcept { return options_; }
  /// Layer l (input layer first).
  SAGEConv& layer(std::size_t l) { return convs_.at(l); }

 private:
  /// Inverted dropout while training (distgraph::dropout: hash-based on the CPU).
  torch::Tensor dropout(const torch::Tensor& x, double p) const {
    return is_training() ? distgraph::dropout(x, p) : x;
  }

  GraphSAGEOptions options_;
  torch::nn::ModuleList layers_{nullptr};
  std::vector<SAGEConv> convs_;
};

/// Holder of a GraphSAGEImpl (`GraphSAGE model(GraphSAGEOptions{...})`).
TORCH_MODULE(GraphSAGE);

}  // namespace distgraph

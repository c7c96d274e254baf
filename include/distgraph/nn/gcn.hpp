// GCN: a stack of GCNConv layers with ReLU and dropout, run over a mini-batch's blocks.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "distgraph/nn/block_tensors.hpp"
#include "distgraph/nn/dropout.hpp"
#include "distgraph/nn/gcn_conv.hpp"
#include "distgraph/nn/model_checks.hpp"

namespace distgraph {

/// Shape and regularisation of a GCN (designated initialisers). The defaults are Kipf &
/// Welling's (and ../shared/data/REFERENCE.md's): hidden 16, dropout 0.5 on the input and
/// the hidden layer, no bias.
struct GCNOptions {
  std::int64_t in_feats = 0;     ///< input feature columns, >= 1
  std::int64_t hidden = 16;      ///< columns of every hidden layer, >= 1
  std::int64_t num_classes = 0;  ///< output columns (logits), >= 1
  std::int64_t num_layers = 2;   ///< GCNConv layers = blocks per batch, >= 1
  double dropout = 0.5;          ///< after each hidden layer's ReLU, in [0, 1)
  double input_dropout = 0.5;    ///< on the input features, in [0, 1)
  bool bias = false;
};

/// Kipf & Welling's GCN (2017) on blocks: layer l maps block l's sources to its
/// destinations with GCNConv, its sources' degrees being block l-1's in-degrees for l > 0
/// (see GCNConv for the degrees, and why full neighbourhoods give the full-graph GCN); hidden
/// layers are followed by ReLU and dropout, and the input is dropped out too. Use
/// through the `GCN` holder; a torch module (train()/eval() switch dropout).
class GCNImpl : public torch::nn::Module {
 public:
  /// Throws InvalidArgument for a size below 1 or a dropout outside [0, 1).
  explicit GCNImpl(const GCNOptions& options) : options_(options) {
    const auto& o = options;
    detail::check_model_options("GCN", o.in_feats, o.hidden, o.num_classes, o.num_layers,
                                {o.dropout, o.input_dropout});
    layers_ = register_module("layers", torch::nn::ModuleList());
    for (std::int64_t l = 0; l < o.num_layers; ++l) {
      convs_.push_back(
          GCNConv(GCNConvOptions{.in_feats = l == 0 ? o.in_feats : o.hidden,
                                 .out_feats = l + 1 == o.num_layers ? o.num_classes : o.hidden,
                                 .bias = o.bias}));
      layers_->push_back(convs_.back());
    }
  }

  /// Logits of the last block's destinations, [num_dst, num_classes], from the input
  /// features `x` [blocks[0].num_src, in_feats]. Throws ShapeError when the blocks are
  /// not num_layers chained blocks or x has another shape.
  torch::Tensor forward(const std::vector<BlockTensors>& blocks, torch::Tensor x) {
    check_block_chain("GCN", blocks, options_.num_layers);
    const bool train = is_training();
    torch::Tensor h = train ? dropout(x, options_.input_dropout) : x;
    for (std::size_t l = 0; l < convs_.size(); ++l)
      h = forward_layer(l, blocks[l], h, l > 0 ? blocks[l - 1].in_degrees : torch::Tensor());
    return h;
  }

  /// Layer l alone: GCNConv l on `block` from `h` [block.num_src, its in_feats], the
  /// sources' degrees being `src_degrees` when given (see GCNConv), then, for a hidden
  /// layer, ReLU and (while training) dropout. forward() is these in turn after the input
  /// dropout, passing the previous block's in-degrees; layer-wise inference passes every
  /// source's in-degree in the graph, so one 1-hop block computes the full-graph layer.
  /// Throws std::out_of_range for l >= num_layers, ShapeError as GCNConv::forward.
  torch::Tensor forward_layer(std::size_t l, const BlockTensors& block, const torch::Tensor& h,
                              const torch::Tensor& src_degrees = {}) {
    torch::Tensor out = convs_.at(l)->forward(block, h, src_degrees);
    if (l + 1 < convs_.size())
      out = is_training() ? relu_dropout(out, options_.dropout) : torch::relu(out);
    return out;
  }

  /// Every layer's parameters but the first's: Kipf & Welling's L2 penalty is on the
  /// first layer only (the Trainer gives these no weight decay).
  std::vector<torch::Tensor> undecayed_parameters() const {
    std::vector<torch::Tensor> out;
    for (std::size_t l = 1; l < convs_.size(); ++l)
      for (const auto& p : convs_[l]->parameters()) out.push_back(p);
    return out;
  }

  const GCNOptions& options() const noexcept { return options_; }
  /// Layer l (input layer first).
  GCNConv& layer(std::size_t l) { return convs_.at(l); }

 private:
  GCNOptions options_;
  torch::nn::ModuleList layers_{nullptr};
  std::vector<GCNConv> convs_;
};

/// Holder of a GCNImpl (`GCN model(GCNOptions{...})`).
TORCH_MODULE(GCN);

}  // namespace distgraph

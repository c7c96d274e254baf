// GAT: a stack of multi-head GATConv layers with ELU and dropout, run over a mini-batch's blocks.
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
#include "distgraph/nn/gat_conv.hpp"
#include "distgraph/nn/model_checks.hpp"

namespace distgraph {

/// Shape and regularisation of a GAT (designated initialisers). The defaults are the GAT
/// paper's Cora model (Velickovic et al. 2018): 8 heads of 8 units (hidden 64), one
/// output head, dropout 0.6 on every layer's input and on the attention coefficients.
struct GATOptions {
  std::int64_t in_feats = 0;     ///< input feature columns, >= 1
  std::int64_t hidden = 64;      ///< columns of every hidden layer, all heads together
  std::int64_t num_classes = 0;  ///< output columns (logits), >= 1
  std::int64_t num_layers = 2;   ///< GATConv layers = blocks per batch, >= 1
  std::int64_t heads = 8;        ///< heads of each hidden layer; must divide hidden
  std::int64_t out_heads = 1;    ///< heads of the output layer, averaged
  double dropout = 0.6;          ///< on each hidden layer's output (after ELU), in [0, 1)
  double input_dropout = 0.6;    ///< on the input features, in [0, 1)
  double attn_dropout = 0.6;     ///< on the attention coefficients, in [0, 1)
  double negative_slope = 0.2;   ///< of the attention LeakyReLU
};

/// Velickovic et al.'s GAT on blocks: layer l maps block l's sources to its destinations
/// with a GATConv; hidden layers concatenate their heads (hidden / heads units each) and
/// apply ELU then dropout; the output layer averages its heads. Use through the `GAT`
/// holder; a torch module (train()/eval() switch dropout).
class GATImpl : public torch::nn::Module {
 public:
  /// Throws InvalidArgument for a size below 1, a dropout outside [0, 1) or heads that
  /// do not divide hidden.
  explicit GATImpl(const GATOptions& options) : options_(options) {
    const auto& o = options;
    detail::check_model_options("GAT", o.in_feats, o.hidden, o.num_classes, o.num_layers,
                                {o.dropout, o.input_dropout, o.attn_dropout});
    if (o.heads < 1 || o.out_heads < 1 || o.hidden % o.heads != 0)
      throw InvalidArgument("GAT: hidden " + std::to_string(o.hidden) + " with " +
                            std::to_string(o.heads) + " heads (" + std::to_string(o.out_heads) +
                            " output heads); expected heads >= 1 dividing hidden");
    layers_ = register_module("layers", torch::nn::ModuleList());
    for (std::int64_t l = 0; l < o.num_layers; ++l) {
      const bool last = l + 1 == o.num_layers;
      convs_.push_back(
          GATConv(GATConvOptions{.in_feats = l == 0 ? o.in_feats : o.hidden,
                                 .out_feats = last ? o.num_classes : o.hidden / o.heads,
                                 .heads = last ? o.out_heads : o.heads,
                                 .negative_slope = o.negative_slope,
                                 .attn_dropout = o.attn_dropout}));
      layers_->push_back(convs_.back());
    }
  }

  /// Logits of the last block's destinations, [num_dst, num_classes], from the input
  /// features `x` [blocks[0].num_src, in_feats]. Throws ShapeError when the blocks are
  /// not num_layers chained blocks or x has another shape.
  torch::Tensor forward(const std::vector<BlockTensors>& blocks, torch::Tensor x) {
    check_block_chain("GAT", blocks, options_.num_layers);
    const bool train = is_training();
    torch::Tensor h = train ? dropout(x, options_.input_dropout) : x;
    for (std::size_t l = 0; l < convs_.size(); ++l) h = forward_layer(l, blocks[l], h);
    return h;
  }

  /// Layer l alone: GATConv l on `block` from `h` [block.num_src, its in_feats]; a hidden
  /// layer concatenates its heads and applies ELU and (while training) dropout, the output
  /// layer averages its heads. forward() is these in turn after the input dropout;
  /// layer-wise inference calls them one layer at a time. Throws std::out_of_range for
  /// l >= num_layers, ShapeError as GATConv::forward.
  torch::Tensor forward_layer(std::size_t l, const BlockTensors& block, const torch::Tensor& h) {
    const auto out = convs_.at(l)->forward(block, h);  // [num_dst, heads, f]
    if (l + 1 == convs_.size()) return out.mean(1);
    auto hidden = torch::elu(out.flatten(1));
    return is_training() ? dropout(hidden, options_.dropout) : hidden;
  }

  const GATOptions& options() const noexcept { return options_; }
  /// Layer l (input layer first).
  GATConv& layer(std::size_t l) { return convs_.at(l); }

 private:
  GATOptions options_;
  torch::nn::ModuleList layers_{nullptr};
  std::vector<GATConv> convs_;
};

/// Holder of a GATImpl (`GAT model(GATOptions{...})`).
TORCH_MODULE(GAT);

}  // namespace distgraph

// GraphSAGE: a stack of SAGEConv layers with ReLU and dropout, run over a mini-batch's blocks.
#pragma once

#include <ATen/Parallel.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/train/block_tensors.hpp"
#include "distgraph/train/sage_conv.hpp"

namespace distgraph {

namespace detail {

/// An inverted-dropout mask of `sizes` on the CPU: each value is 1 / (1 - p) with
/// probability 1 - p, else 0. One splitmix64 hash of (seed + group) decides four values,
/// 16 bits each (keep when the 16 bits, as a fraction of 2^16, reach p), the seed drawn
/// from torch's default generator. Parallel over ATen's intra-op threads; the result does
/// not depend on their number. (Hashing every value alone made this the costliest step of
/// a training batch once matrix products ran on an optimised BLAS.)
inline torch::Tensor dropout_mask(torch::IntArrayRef sizes, double p, torch::ScalarType dtype) {
  const auto seed = static_cast<std::uint64_t>(
      torch::randint(std::numeric_limits<std::int64_t>::max(), {1}, torch::kLong)
          .item<std::int64_t>());
  auto mask = torch::empty(sizes, torch::kFloat);
  float* out = mask.data_ptr<float>();
  const std::int64_t n = mask.numel();
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  const auto threshold = static_cast<std::uint64_t>(p * 65536.0);
  const std::int64_t groups = (n + 3) / 4;
  at::parallel_for(0, groups, 1 << 14, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t g = begin; g < end; ++g) {
      std::uint64_t z = seed + static_cast<std::uint64_t>(g) * 0x9e3779b97f4a7c15ULL;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      z ^= z >> 31;
      const std::int64_t first = g * 4, last = std::min(first + 4, n);
      for (std::int64_t i = first; i < last; ++i, z >>= 16)
        out[i] = (z & 0xffff) >= threshold ? scale : 0.0f;
    }
  });
  return dtype == torch::kFloat ? mask : mask.to(dtype);
}

}  // namespace detail

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
    if (o.in_feats < 1 || o.hidden < 1 || o.num_classes < 1 || o.num_layers < 1)
      throw InvalidArgument("GraphSAGE: in_feats " + std::to_string(o.in_feats) + ", hidden " +
                            std::to_string(o.hidden) + ", num_classes " +
                            std::to_string(o.num_classes) + ", num_layers " +
                            std::to_string(o.num_layers) + "; expected all >= 1");
    for (const double p : {o.dropout, o.input_dropout})
      if (!(p >= 0.0 && p < 1.0))
        throw InvalidArgument("GraphSAGE: dropout " + std::to_string(p) + "; expected [0, 1)");
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
    if (static_cast<std::int64_t>(blocks.size()) != options_.num_layers)
      throw ShapeError("GraphSAGE blocks", std::to_string(blocks.size()) + " blocks; expected " +
                                               std::to_string(options_.num_layers) +
                                               " (one per layer)");
    for (std::size_t l = 0; l + 1 < blocks.size(); ++l)
      if (blocks[l].num_dst != blocks[l + 1].num_src)
        throw ShapeError("GraphSAGE blocks", "block " + std::to_string(l) + " has " +
                                                 std::to_string(blocks[l].num_dst) +
                                                 " destinations, block " + std::to_string(l + 1) +
                                                 " " + std::to_string(blocks[l + 1].num_src) +
                                                 " sources; expected equal");
    torch::Tensor h = dropout(x, options_.input_dropout);
    for (std::size_t l = 0; l < convs_.size(); ++l) {
      h = convs_[l]->forward(blocks[l], h);
      if (l + 1 < convs_.size()) h = dropout(torch::relu(h), options_.dropout);
    }
    return h;
  }

  const GraphSAGEOptions& options() const noexcept { return options_; }
  /// Layer l (input layer first).
  SAGEConv& layer(std::size_t l) { return convs_.at(l); }

 private:
  /// Inverted dropout. On the CPU the mask comes from a counter-based hash seeded by one
  /// draw of torch's generator (reproducible under torch::manual_seed): Debian's CPU
  /// build of torch's random kernels made Cora's input dropout (2000 x 1433 values) 75% of
  /// an epoch, 140 ms, against a few ms for this mask. Elsewhere rand_like.
  torch::Tensor dropout(const torch::Tensor& x, double p) const {
    if (!is_training() || p == 0.0) return x;
    if (!x.device().is_cpu())
      return x * (torch::rand_like(x) >= p).to(x.scalar_type()) * (1.0 / (1.0 - p));
    return x * detail::dropout_mask(x.sizes(), p, x.scalar_type());
  }

  GraphSAGEOptions options_;
  torch::nn::ModuleList layers_{nullptr};
  std::vector<SAGEConv> convs_;
};

/// Holder of a GraphSAGEImpl (`GraphSAGE model(GraphSAGEOptions{...})`).
TORCH_MODULE(GraphSAGE);

}  // namespace distgraph

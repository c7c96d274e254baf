// SAGEConv: the GraphSAGE layer (mean, gcn and pool aggregators) over a block's CSR.
#pragma once

#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "distgraph/core/error.hpp"
#include "distgraph/nn/block_tensors.hpp"
#include "distgraph/nn/csr_sum.hpp"
#include "distgraph/nn/split_linear.hpp"

namespace distgraph {

/// How SAGEConv combines the neighbours of a destination (DGL's `aggregator_type`).
enum class Aggregator {
  mean,  ///< fc_self(h_dst) + fc_neigh(mean of h_src over in-edges) + b
  gcn,   ///< fc_neigh((sum of h_src over in-edges + h_dst) / (in-degree + 1)) + b
  pool,  ///< fc_self(h_dst) + fc_neigh(max over in-edges of relu(fc_pool(h_src))) + b
};

/// Name of `a` as DGL spells it ("mean", "gcn", "pool").
inline const char* to_string(Aggregator a) noexcept {
  switch (a) {
    case Aggregator::mean:
      return "mean";
    case Aggregator::gcn:
      return "gcn";
    case Aggregator::pool:
      return "pool";
  }
  return "?";
}

/// The aggregator `name` spells. Throws InvalidArgument naming it and the allowed names.
inline Aggregator parse_aggregator(std::string_view name) {
  for (const auto a : {Aggregator::mean, Aggregator::gcn, Aggregator::pool})
    if (name == to_string(a)) return a;
  throw InvalidArgument("aggregator '" + std::string(name) + "'; expected mean, gcn or pool");
}

/// Sizes and aggregator of one SAGEConv (designated initialisers).
struct SAGEConvOptions {
  std::int64_t in_feats = 0;   ///< columns of the source features, >= 1
  std::int64_t out_feats = 0;  ///< columns of the output, >= 1
  Aggregator aggregator = Aggregator::mean;
  bool bias = true;
};

/// DGL's `SAGEConv` on one block: parameters `fc_self` (absent for gcn), `fc_neigh`,
/// `fc_pool` (pool only, with bias) and `bias`, initialised as DGL does (Xavier-uniform with
/// the ReLU gain, zero bias). Aggregation is csr_sum over the block's CSR (sum, mean, gcn)
/// or index_select then scatter_reduce "amax" (pool) into the destination rows: autograd
/// ops, so gradients flow to the inputs and every parameter. Zero in-degree
/// destinations aggregate to 0. As in DGL, mean and gcn project before aggregating when
/// in_feats > out_feats (the same function, on fewer columns). Use through the `SAGEConv`
/// holder; not thread-safe during training (a torch module).
class SAGEConvImpl : public torch::nn::Module {
 public:
  /// Throws InvalidArgument for in_feats or out_feats below 1.
  explicit SAGEConvImpl(const SAGEConvOptions& options) : options_(options) {
    if (options.in_feats < 1 || options.out_feats < 1)
      throw InvalidArgument("SAGEConv: in_feats " + std::to_string(options.in_feats) +
                            ", out_feats " + std::to_string(options.out_feats) +
                            "; expected both >= 1");
    const auto in = options.in_feats, out = options.out_feats;
    if (options.aggregator == Aggregator::pool)
      fc_pool_ = register_module("fc_pool", torch::nn::Linear(torch::nn::LinearOptions(in, in)));
    if (options.aggregator != Aggregator::gcn)
      fc_self_ = register_module("fc_self",
                                 torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)));
    fc_neigh_ = register_module("fc_neigh",
                                torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)));
    if (options.bias) bias_ = register_parameter("bias", torch::zeros({out}));
    reset_parameters();
  }

  /// DGL's initialisation: Xavier-uniform weights with gain sqrt(2) (ReLU), zero bias.
  void reset_parameters() {
    torch::NoGradGuard no_grad;
    const double gain = std::sqrt(2.0);
    if (fc_pool_) torch::nn::init::xavier_uniform_(fc_pool_->weight, gain);
    if (fc_self_) torch::nn::init::xavier_uniform_(fc_self_->weight, gain);
    torch::nn::init::xavier_uniform_(fc_neigh_->weight, gain);
    if (bias_.defined()) bias_.zero_();
  }

  /// Output rows of the block's destinations, [num_dst, out_feats], from `h_src`
  /// [num_src, in_feats] (destination i is source row i). Throws ShapeError for a feature
  /// matrix of another shape.
  torch::Tensor forward(const BlockTensors& block, const torch::Tensor& h_src) {
    detail::check_layer_input("SAGEConv input", h_src, block.num_src, options_.in_feats);
    const auto h_dst = h_src.slice(0, 0, block.num_dst);
    const bool lin_before_mp = options_.in_feats > options_.out_feats;
    // The output is made once, bias first, and each product is accumulated into it by
    // the GEMM itself (addmm with beta 1): no zeroed product matrices, no separate sum and
    // bias passes over [num_dst, out_feats] (three of them per layer before).
    torch::Tensor rst;
    switch (options_.aggregator) {
      case Aggregator::mean: {
        if (lin_before_mp) {
          // Every source row projected for the neighbours, the destinations for themselves.
          auto [msg, self] =
              split_linear(h_src, fc_neigh_->weight, fc_self_->weight, block.num_dst);
          rst = self.add_(sum_in(block, msg) / degrees(block, msg, 0.0));
          if (bias_.defined()) rst.add_(bias_);
        } else {
          rst =
              torch::linear(h_dst, fc_self_->weight, bias_)
                  .addmm_(sum_in(block, h_src) / degrees(block, h_src, 0.0), fc_neigh_->weight.t());
        }
        break;
      }
      case Aggregator::gcn: {
        const auto msg = lin_before_mp ? fc_neigh_->forward(h_src) : h_src;
        auto neigh =
            (sum_in(block, msg) + msg.slice(0, 0, block.num_dst)) / degrees(block, msg, 1.0);
        if (!lin_before_mp)
          rst = torch::linear(neigh, fc_neigh_->weight, bias_);
        else
          rst = bias_.defined() ? neigh + bias_ : neigh;
        break;
      }
      case Aggregator::pool: {
        const auto pooled = torch::relu(fc_pool_->forward(h_src));
        const auto edges = pooled.index_select(0, block.indices);
        // include_self = false: a destination's row is the max over its edges alone; rows
        // with no edge keep the zero they start with.
        const auto neigh = torch::zeros({block.num_dst, pooled.size(1)}, pooled.options())
                               .scatter_reduce(0, block.dst_index.unsqueeze(1).expand_as(edges),
                                               edges, "amax", /*include_self=*/false);
        rst = torch::linear(h_dst, fc_self_->weight, bias_).addmm_(neigh, fc_neigh_->weight.t());
        break;
      }
    }
    return rst;
  }

  const SAGEConvOptions& options() const noexcept { return options_; }
  /// The layer's linear maps; an empty holder where the aggregator has none.
  torch::nn::Linear& fc_self() noexcept { return fc_self_; }
  torch::nn::Linear& fc_neigh() noexcept { return fc_neigh_; }
  torch::nn::Linear& fc_pool() noexcept { return fc_pool_; }
  /// The output bias; undefined when options().bias is false.
  torch::Tensor& bias() noexcept { return bias_; }

 private:
  /// Sum of `msg` rows over each destination's in-edges, [num_dst, msg.size(1)].
  static torch::Tensor sum_in(const BlockTensors& block, const torch::Tensor& msg) {
    return csr_sum(block, msg);
  }

  /// In-degrees plus `extra` as a [num_dst, 1] divisor in msg's dtype, at least 1 (so
  /// isolated destinations divide 0 by 1).
  static torch::Tensor degrees(const BlockTensors& block, const torch::Tensor& msg, double extra) {
    return (block.in_degrees.to(msg.scalar_type()) + extra).clamp_min(1.0).unsqueeze(1);
  }

  SAGEConvOptions options_;
  torch::nn::Linear fc_self_{nullptr}, fc_neigh_{nullptr}, fc_pool_{nullptr};
  torch::Tensor bias_;
};

/// Holder of a SAGEConvImpl (`SAGEConv conv(SAGEConvOptions{...}); conv->forward(b, h)`).
TORCH_MODULE(SAGEConv);

}  // namespace distgraph

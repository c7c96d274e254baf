// GCNConv: Kipf & Welling's graph convolution with self-loops over a block's CSR.
#pragma once

#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <string>

#include "distgraph/core/error.hpp"
#include "distgraph/nn/block_tensors.hpp"
#include "distgraph/nn/csr_sum.hpp"

namespace distgraph {

/// Sizes of one GCNConv (designated initialisers).
struct GCNConvOptions {
  std::int64_t in_feats = 0;   ///< columns of the source features, >= 1
  std::int64_t out_feats = 0;  ///< columns of the output, >= 1
  bool bias = false;           ///< Kipf & Welling's model has none
};

namespace detail {

/// 1 / sqrt(degree + 1) of every source and destination of `block` as [n, 1] columns in
/// `dtype`: the D^-1/2 of D^-1/2 (A + I) D^-1/2 (see GCNConv for which degrees).
struct GcnNorms {
  torch::Tensor src, dst;
};

inline GcnNorms gcn_norms(const BlockTensors& block, torch::ScalarType dtype,
                          const torch::Tensor& src_degrees) {
  torch::Tensor src = src_degrees;
  if (!src.defined()) {
    src = torch::bincount(block.indices, {}, block.num_src);
    src.slice(0, 0, block.num_dst).copy_(block.in_degrees);
  }
  return {(src.to(dtype) + 1.0).rsqrt_().unsqueeze(1),
          (block.in_degrees.to(dtype) + 1.0).rsqrt_().unsqueeze(1)};
}

}  // namespace detail

/// GCN's layer on one block: out_v = sum over u in N(v) + {v} of h_u W / sqrt(d_u d_v)
/// (+ bias), the self-loop taken for every destination (destination i is source i).
///
/// Degrees d are edge counts plus one for the self-loop. A destination's is its in-edges
/// in the block. A source's is `src_degrees` when given (GCN passes the previous block's
/// in-degrees: that block's destinations are this one's sources); otherwise its in-edges
/// in the block when it is a destination, else its out-edges in the block. With full
/// neighbourhoods on a symmetric graph every one of these is the node's degree in the
/// graph, except the out-edges of the input block's outer sources (the last hop), which
/// count only their edges into the block; with every node a destination the layer is
/// exactly the full-graph GCN. (DGL's GraphConv counts out-edges in the block for every
/// source. Fetching whole-graph degrees for the last hop would cost a request per batch.)
///
/// Parameters `weight` [in_feats, out_feats] (Glorot-uniform, as Kipf & Welling) and
/// `bias` (zeros, when options().bias). Projects before aggregating when in_feats >
/// out_feats (the same function on fewer columns). Use through the `GCNConv` holder.
class GCNConvImpl : public torch::nn::Module {
 public:
  /// Throws InvalidArgument for in_feats or out_feats below 1.
  explicit GCNConvImpl(const GCNConvOptions& options) : options_(options) {
    if (options.in_feats < 1 || options.out_feats < 1)
      throw InvalidArgument("GCNConv: in_feats " + std::to_string(options.in_feats) +
                            ", out_feats " + std::to_string(options.out_feats) +
                            "; expected both >= 1");
    weight_ = register_parameter("weight", torch::empty({options.in_feats, options.out_feats}));
    if (options.bias) bias_ = register_parameter("bias", torch::zeros({options.out_feats}));
    reset_parameters();
  }

  /// Glorot-uniform weight (gain 1, as the reference GCN), zero bias.
  void reset_parameters() {
    torch::NoGradGuard no_grad;
    torch::nn::init::xavier_uniform_(weight_);
    if (bias_.defined()) bias_.zero_();
  }

  /// Output rows of the block's destinations, [num_dst, out_feats], from `h_src`
  /// [num_src, in_feats]; `src_degrees` [num_src] (int64, self-loop not counted) replaces
  /// the sources' degrees the block implies. Throws ShapeError for a feature matrix or
  /// degree vector of another shape.
  torch::Tensor forward(const BlockTensors& block, const torch::Tensor& h_src,
                        const torch::Tensor& src_degrees = {}) {
    detail::check_layer_input("GCNConv input", h_src, block.num_src, options_.in_feats);
    if (src_degrees.defined() && (src_degrees.dim() != 1 || src_degrees.size(0) != block.num_src))
      throw ShapeError("GCNConv source degrees", std::to_string(src_degrees.numel()) +
                                                     " values; expected " +
                                                     std::to_string(block.num_src));
    const auto norm = detail::gcn_norms(block, h_src.scalar_type(), src_degrees);
    const bool project_first = options_.in_feats > options_.out_feats;
    const auto msg = (project_first ? h_src.mm(weight_) : h_src) * norm.src;
    auto agg = (csr_sum(block, msg) + msg.slice(0, 0, block.num_dst)) * norm.dst;
    if (!project_first) agg = agg.mm(weight_);
    return bias_.defined() ? agg + bias_ : agg;
  }

  const GCNConvOptions& options() const noexcept { return options_; }
  torch::Tensor& weight() noexcept { return weight_; }
  /// Undefined when options().bias is false.
  torch::Tensor& bias() noexcept { return bias_; }

 private:
  GCNConvOptions options_;
  torch::Tensor weight_, bias_;
};

/// Holder of a GCNConvImpl (`GCNConv conv(GCNConvOptions{...}); conv->forward(b, h)`).
TORCH_MODULE(GCNConv);

}  // namespace distgraph

// RGCNConv and RGCN: relational graph convolution (Schlichtkrull et al. 2018) over typed blocks.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/nn/dropout.hpp"
#include "distgraph/nn/hetero_block_tensors.hpp"
#include "distgraph/nn/hetero_input.hpp"
#include "distgraph/nn/typed_gather.hpp"

namespace distgraph {

/// Sizes of one RGCNConv (designated initialisers). num_relations = relation_dst_type.size().
struct RGCNConvOptions {
  std::int64_t in_feats = 0;                    ///< >= 1
  std::int64_t out_feats = 0;                   ///< >= 1
  std::vector<std::int32_t> relation_dst_type;  ///< per relation: its destination node type
  std::int64_t num_node_types = 1;              ///< >= 1
  /// Basis decomposition when in [1, num_relations); otherwise a full weight per relation
  /// (as DGL's RelGraphConv, which falls back to full weights for num_bases >= num_rels).
  std::int64_t num_bases = 0;
  bool self_loop = true;  ///< add W_self[type(v)] h_v
  bool bias = true;
};

/// One R-GCN layer on a typed block: for destination v of type t,
///   h'_v = W_self[t] h_v + sum over relations r into t of mean_{u in N_r(v)} W_r h_u + b,
/// N_r(v) being v's in-edges of relation r (DGL's RelGraphConv with norm "right", one per
/// relation, summed by HeteroGraphConv). With bases, W_r = sum_b coeff[r, b] basis[b].
/// Weights are [in, out] slices, initialised Xavier-uniform with the ReLU gain as DGL does;
/// bias starts at zero. Edges of relation r into a destination whose type is not
/// relation_dst_type[r] are ignored; relations with no edge in a block cost nothing (and
/// get no gradient). Use through the `RGCNConv` holder; a torch module.
class RGCNConvImpl : public torch::nn::Module {
 public:
  /// Throws InvalidArgument for a size below 1 or a relation's type out of range.
  explicit RGCNConvImpl(const RGCNConvOptions& options) : options_(options) {
    const auto& o = options;
    const auto num_rel = static_cast<std::int64_t>(o.relation_dst_type.size());
    if (o.in_feats < 1 || o.out_feats < 1 || num_rel < 1 || o.num_node_types < 1)
      throw InvalidArgument("RGCNConv: in_feats " + std::to_string(o.in_feats) + ", out_feats " +
                            std::to_string(o.out_feats) + ", num_relations " +
                            std::to_string(num_rel) + ", num_node_types " +
                            std::to_string(o.num_node_types) + "; expected all >= 1");
    for (const auto t : o.relation_dst_type)
      if (t < 0 || t >= o.num_node_types)
        throw InvalidArgument("RGCNConv: relation destination type " + std::to_string(t) +
                              "; expected [0, " + std::to_string(o.num_node_types) + ")");
    rels_of_type_.resize(static_cast<std::size_t>(o.num_node_types));
    for (std::size_t r = 0; r < o.relation_dst_type.size(); ++r)
      rels_of_type_[static_cast<std::size_t>(o.relation_dst_type[r])].push_back(
          static_cast<std::int64_t>(r));
    if (uses_bases()) {
      basis_ = register_parameter("basis", torch::empty({o.num_bases, o.in_feats, o.out_feats}));
      coeff_ = register_parameter("coeff", torch::empty({num_rel, o.num_bases}));
    } else {
      weight_ = register_parameter("weight", torch::empty({num_rel, o.in_feats, o.out_feats}));
    }
    if (o.self_loop)
      loop_weight_ = register_parameter("loop_weight",
                                        torch::empty({o.num_node_types, o.in_feats, o.out_feats}));
    if (o.bias) bias_ = register_parameter("bias", torch::zeros({o.out_feats}));
    reset_parameters();
  }

  /// Xavier-uniform weights, bases and coefficients with the ReLU gain; zero bias.
  void reset_parameters() {
    torch::NoGradGuard no_grad;
    if (weight_.defined()) detail::xavier_slices(weight_);
    if (basis_.defined()) {
      detail::xavier_slices(basis_);
      auto c = coeff_.unsqueeze(0);
      detail::xavier_slices(c);
    }
    if (loop_weight_.defined()) detail::xavier_slices(loop_weight_);
    if (bias_.defined()) bias_.zero_();
  }

  /// Whether W_r is a combination of bases (num_bases in [1, num_relations)).
  bool uses_bases() const noexcept {
    return options_.num_bases > 0 &&
           options_.num_bases < static_cast<std::int64_t>(options_.relation_dst_type.size());
  }

  /// W_r of every relation, [num_relations, in_feats, out_feats] (the basis combination
  /// when uses_bases(); differentiable).
  torch::Tensor relation_weight() const {
    if (!uses_bases()) return weight_;
    const auto& o = options_;
    return coeff_.mm(basis_.view({o.num_bases, o.in_feats * o.out_feats}))
        .view({coeff_.size(0), o.in_feats, o.out_feats});
  }

  /// Output rows of the block's destinations, [num_dst, out_feats], from `h`
  /// [num_src, in_feats] (destination i is source row i). Throws ShapeError for a feature
  /// matrix of another shape or a block with other relation or type counts.
  torch::Tensor forward(const HeteroBlockTensors& hb, const torch::Tensor& h) {
    const auto& o = options_;
    detail::check_hetero_layer_input(hb, h, o.in_feats,
                                     static_cast<std::int64_t>(o.relation_dst_type.size()),
                                     o.num_node_types, "RGCNConv");
    // The basis combination is made once per forward, not once per relation.
    const auto w = relation_weight();
    const auto g = detail::gather_by_type(hb, h, rels_of_type_,
                                          std::vector<bool>(rels_of_type_.size(), o.self_loop));
    std::vector<torch::Tensor> per_type(g.x.size());
    for (std::size_t t = 0; t < g.x.size(); ++t) {
      if (!g.x[t].defined()) continue;
      // One product per type: [self | mean_r1 | mean_r2 ...] times the stacked weights.
      std::vector<torch::Tensor> ws;
      if (o.self_loop) ws.push_back(loop_weight_[static_cast<std::int64_t>(t)]);
      for (const std::int64_t r : g.rels[t]) ws.push_back(w[r]);
      const auto n = g.x[t].size(0);
      if (ws.empty())
        per_type[t] = bias_.defined() ? bias_.expand({n, o.out_feats}).clone()
                                      : torch::zeros({n, o.out_feats}, h.options());
      else if (bias_.defined())
        per_type[t] = torch::addmm(bias_, g.x[t], torch::cat(ws, 0));
      else
        per_type[t] = g.x[t].mm(torch::cat(ws, 0));
    }
    return detail::assemble_by_type(hb, per_type, o.out_feats, h.options());
  }

  const RGCNConvOptions& options() const noexcept { return options_; }
  /// Full weights [num_relations, in, out]; undefined when uses_bases().
  torch::Tensor& weight() noexcept { return weight_; }
  /// Bases [num_bases, in, out] and coefficients [num_relations, num_bases]; undefined
  /// without bases.
  torch::Tensor& basis() noexcept { return basis_; }
  torch::Tensor& coeff() noexcept { return coeff_; }
  /// Self-loop weights [num_node_types, in, out]; undefined without self_loop.
  torch::Tensor& loop_weight() noexcept { return loop_weight_; }
  /// The output bias [out]; undefined without bias.
  torch::Tensor& bias() noexcept { return bias_; }

 private:
  RGCNConvOptions options_;
  std::vector<std::vector<std::int64_t>> rels_of_type_;  ///< relations into each node type
  torch::Tensor weight_, basis_, coeff_, loop_weight_, bias_;
};

/// Holder of an RGCNConvImpl.
TORCH_MODULE(RGCNConv);

/// R-GCN for node classification on typed mini-batches: HeteroInput projects each node
/// type's features to `hidden`, then one RGCNConv per block (ReLU and dropout between
/// layers; input dropout on the projected x); the last layer gives num_classes logits for
/// the last block's destinations. Use through the `RGCN` holder; a torch module
/// (train()/eval() switch dropout); not thread-safe during training.
class RGCNImpl : public torch::nn::Module {
 public:
  /// Throws InvalidArgument for inconsistent options (sizes, types, dropout).
  explicit RGCNImpl(const HeteroModelOptions& options) : options_(options) {
    const auto& o = options;
    detail::check_hetero_options(o, "RGCN");
    input_ = register_module("input", HeteroInput(o));
    layers_ = register_module("layers", torch::nn::ModuleList());
    for (std::int64_t l = 0; l < o.num_layers; ++l) {
      convs_.push_back(
          RGCNConv(RGCNConvOptions{.in_feats = o.hidden,
                                   .out_feats = l + 1 == o.num_layers ? o.num_classes : o.hidden,
                                   .relation_dst_type = o.relation_dst_type,
                                   .num_node_types = static_cast<std::int64_t>(o.in_feats.size()),
                                   .num_bases = o.num_bases,
                                   .self_loop = o.self_loop,
                                   .bias = true}));
      layers_->push_back(convs_.back());
    }
  }

  /// Logits of the last block's destinations, [num_dst, num_classes], from the typed input
  /// features of blocks[0]'s sources. Throws ShapeError when the block count is not
  /// num_layers, a block has other relation or type counts, consecutive blocks do not
  /// chain, or the inputs do not cover blocks[0]'s sources (see HeteroInput).
  torch::Tensor forward(const std::vector<HeteroBlockTensors>& blocks,
                        const std::vector<TypedInput>& inputs) {
    return detail::hetero_forward(*this, input_, convs_, options_, blocks, inputs, "RGCN");
  }

  const HeteroModelOptions& options() const noexcept { return options_; }
  HeteroInput& input() noexcept { return input_; }
  /// Layer l (input layer first).
  RGCNConv& layer(std::size_t l) { return convs_.at(l); }

 private:
  HeteroModelOptions options_;
  HeteroInput input_{nullptr};
  torch::nn::ModuleList layers_{nullptr};
  std::vector<RGCNConv> convs_;
};

/// Holder of an RGCNImpl (`RGCN model(HeteroModelOptions{...})`).
TORCH_MODULE(RGCN);

}  // namespace distgraph

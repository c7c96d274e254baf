// HeteroSAGEConv and HeteroSAGE: one mean SAGEConv per relation, combined per node type.
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

/// Sizes of one HeteroSAGEConv (designated initialisers). num_relations =
/// relation_dst_type.size().
struct HeteroSAGEConvOptions {
  std::int64_t in_feats = 0;                    ///< >= 1
  std::int64_t out_feats = 0;                   ///< >= 1
  std::vector<std::int32_t> relation_dst_type;  ///< per relation: its destination node type
  std::int64_t num_node_types = 1;              ///< >= 1
  HeteroModelOptions::Combine combine = HeteroModelOptions::Combine::sum;
};

/// One heterogeneous GraphSAGE layer (DGL's HeteroGraphConv({rel: SAGEConv(mean)})): for a
/// destination v of type t and each relation r into t,
///   o_r(v) = W_self[r] h_v + W_neigh[r] mean_{u in N_r(v)} h_u + b[r]
/// (no edge: the mean is 0), and h'_v is the sum of o_r(v) over the k relations into t
/// (Combine::sum) or that sum / k (Combine::mean). Unlike DGL, whose HeteroGraphConv skips
/// relations with no edge in the block, every relation into t counts, so a node's output
/// does not depend on the rest of the batch. A type no relation targets gets
/// h'_v = W_alone[t] h_v + b_alone[t] (DGL would give it no output at all). Edges of r
/// into a destination of another type are ignored. Weights are [in, out] slices,
/// Xavier-uniform with the ReLU gain; biases start at zero. Use through the
/// `HeteroSAGEConv` holder; a torch module.
class HeteroSAGEConvImpl : public torch::nn::Module {
 public:
  /// Throws InvalidArgument for a size below 1 or a relation's type out of range.
  explicit HeteroSAGEConvImpl(const HeteroSAGEConvOptions& options) : options_(options) {
    const auto& o = options;
    const auto num_rel = static_cast<std::int64_t>(o.relation_dst_type.size());
    if (o.in_feats < 1 || o.out_feats < 1 || num_rel < 1 || o.num_node_types < 1)
      throw InvalidArgument("HeteroSAGEConv: in_feats " + std::to_string(o.in_feats) +
                            ", out_feats " + std::to_string(o.out_feats) + ", num_relations " +
                            std::to_string(num_rel) + ", num_node_types " +
                            std::to_string(o.num_node_types) + "; expected all >= 1");
    rels_of_type_.resize(static_cast<std::size_t>(o.num_node_types));
    for (std::size_t r = 0; r < o.relation_dst_type.size(); ++r) {
      const auto t = o.relation_dst_type[r];
      if (t < 0 || t >= o.num_node_types)
        throw InvalidArgument("HeteroSAGEConv: relation " + std::to_string(r) +
                              " destination type " + std::to_string(t) + "; expected [0, " +
                              std::to_string(o.num_node_types) + ")");
      rels_of_type_[static_cast<std::size_t>(t)].push_back(static_cast<std::int64_t>(r));
    }
    self_weight_ =
        register_parameter("self_weight", torch::empty({num_rel, o.in_feats, o.out_feats}));
    neigh_weight_ =
        register_parameter("neigh_weight", torch::empty({num_rel, o.in_feats, o.out_feats}));
    bias_ = register_parameter("bias", torch::zeros({num_rel, o.out_feats}));
    std::int64_t alone = 0;
    alone_index_.assign(static_cast<std::size_t>(o.num_node_types), -1);
    for (std::size_t t = 0; t < rels_of_type_.size(); ++t)
      if (rels_of_type_[t].empty()) alone_index_[t] = alone++;
    if (alone > 0) {
      alone_weight_ =
          register_parameter("alone_weight", torch::empty({alone, o.in_feats, o.out_feats}));
      alone_bias_ = register_parameter("alone_bias", torch::zeros({alone, o.out_feats}));
    }
    reset_parameters();
  }

  /// Xavier-uniform weights with the ReLU gain (DGL's SAGEConv); zero biases.
  void reset_parameters() {
    torch::NoGradGuard no_grad;
    detail::xavier_slices(self_weight_);
    detail::xavier_slices(neigh_weight_);
    bias_.zero_();
    if (alone_weight_.defined()) {
      detail::xavier_slices(alone_weight_);
      alone_bias_.zero_();
    }
  }

  /// Output rows of the block's destinations, [num_dst, out_feats], from `h`
  /// [num_src, in_feats] (destination i is source row i). Throws ShapeError for a feature
  /// matrix of another shape or a block with other relation or type counts.
  torch::Tensor forward(const HeteroBlockTensors& hb, const torch::Tensor& h) {
    const auto& o = options_;
    detail::check_hetero_layer_input(hb, h, o.in_feats,
                                     static_cast<std::int64_t>(o.relation_dst_type.size()),
                                     o.num_node_types, "HeteroSAGEConv");
    const auto g =
        detail::gather_by_type(hb, h, rels_of_type_, std::vector<bool>(rels_of_type_.size(), true));
    std::vector<torch::Tensor> per_type(g.x.size());
    for (std::size_t t = 0; t < g.x.size(); ++t) {
      if (!g.x[t].defined()) continue;
      const auto& rels = rels_of_type_[t];
      if (rels.empty()) {
        const auto a = alone_index_[t];
        per_type[t] = torch::addmm(alone_bias_[a], g.x[t], alone_weight_[a]);
        continue;
      }
      // One product per type, [h_v | mean_r1 | mean_r2 ...] times [sum_r W_self[r]; W_neigh[r1];
      // ...]: the self terms share h_v, so their weights and biases are summed first (the
      // same function; gradients reach every relation's slice).
      auto w_self = self_weight_[rels.front()];
      auto b = bias_[rels.front()];
      for (std::size_t i = 1; i < rels.size(); ++i) {
        w_self = w_self + self_weight_[rels[i]];
        b = b + bias_[rels[i]];
      }
      std::vector<torch::Tensor> ws{w_self};
      for (const std::int64_t r : g.rels[t]) ws.push_back(neigh_weight_[r]);
      auto acc = torch::addmm(b, g.x[t], torch::cat(ws, 0));
      if (o.combine == HeteroModelOptions::Combine::mean && rels.size() > 1)
        acc = acc * (1.0 / static_cast<double>(rels.size()));
      per_type[t] = std::move(acc);
    }
    return detail::assemble_by_type(hb, per_type, o.out_feats, h.options());
  }

  const HeteroSAGEConvOptions& options() const noexcept { return options_; }
  /// Per relation [num_relations, in, out]: W_self and W_neigh; biases [num_relations, out].
  torch::Tensor& self_weight() noexcept { return self_weight_; }
  torch::Tensor& neigh_weight() noexcept { return neigh_weight_; }
  torch::Tensor& bias() noexcept { return bias_; }
  /// The weight [in, out] and bias [out] of node type t, which no relation targets.
  /// Throws InvalidArgument for a type some relation targets.
  torch::Tensor alone_weight(std::int64_t t) { return alone_weight_[alone(t)]; }
  torch::Tensor alone_bias(std::int64_t t) { return alone_bias_[alone(t)]; }

 private:
  std::int64_t alone(std::int64_t t) const {
    if (t < 0 || t >= options_.num_node_types || alone_index_[static_cast<std::size_t>(t)] < 0)
      throw InvalidArgument("HeteroSAGEConv: node type " + std::to_string(t) +
                            " is targeted by a relation or out of range; expected an "
                            "untargeted type");
    return alone_index_[static_cast<std::size_t>(t)];
  }

  HeteroSAGEConvOptions options_;
  std::vector<std::vector<std::int64_t>> rels_of_type_;  ///< relations into each node type
  std::vector<std::int64_t> alone_index_;  ///< per type: its slice of alone_weight_, or -1
  torch::Tensor self_weight_, neigh_weight_, bias_, alone_weight_, alone_bias_;
};

/// Holder of a HeteroSAGEConvImpl.
TORCH_MODULE(HeteroSAGEConv);

/// Heterogeneous GraphSAGE for node classification on typed mini-batches: HeteroInput
/// projects each node type's features to `hidden`, then one HeteroSAGEConv per block
/// (ReLU and dropout between layers; input dropout on the projected x); the last layer
/// gives num_classes logits for the last block's destinations. options.num_bases and
/// self_loop are not used. Use through the `HeteroSAGE` holder; a torch module
/// (train()/eval() switch dropout); not thread-safe during training.
class HeteroSAGEImpl : public torch::nn::Module {
 public:
  /// Throws InvalidArgument for inconsistent options (sizes, types, dropout).
  explicit HeteroSAGEImpl(const HeteroModelOptions& options) : options_(options) {
    const auto& o = options;
    detail::check_hetero_options(o, "HeteroSAGE");
    input_ = register_module("input", HeteroInput(o));
    layers_ = register_module("layers", torch::nn::ModuleList());
    for (std::int64_t l = 0; l < o.num_layers; ++l) {
      convs_.push_back(HeteroSAGEConv(
          HeteroSAGEConvOptions{.in_feats = o.hidden,
                                .out_feats = l + 1 == o.num_layers ? o.num_classes : o.hidden,
                                .relation_dst_type = o.relation_dst_type,
                                .num_node_types = static_cast<std::int64_t>(o.in_feats.size()),
                                .combine = o.combine}));
      layers_->push_back(convs_.back());
    }
  }

  /// Logits of the last block's destinations, [num_dst, num_classes]; throws as
  /// RGCN::forward.
  torch::Tensor forward(const std::vector<HeteroBlockTensors>& blocks,
                        const std::vector<TypedInput>& inputs) {
    return detail::hetero_forward(*this, input_, convs_, options_, blocks, inputs, "HeteroSAGE");
  }

  const HeteroModelOptions& options() const noexcept { return options_; }
  HeteroInput& input() noexcept { return input_; }
  /// Layer l (input layer first).
  HeteroSAGEConv& layer(std::size_t l) { return convs_.at(l); }

 private:
  HeteroModelOptions options_;
  HeteroInput input_{nullptr};
  torch::nn::ModuleList layers_{nullptr};
  std::vector<HeteroSAGEConv> convs_;
};

/// Holder of a HeteroSAGEImpl (`HeteroSAGE model(HeteroModelOptions{...})`).
TORCH_MODULE(HeteroSAGE);

}  // namespace distgraph

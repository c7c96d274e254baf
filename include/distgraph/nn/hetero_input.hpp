// HeteroModelOptions, TypedInput and HeteroInput: what RGCN and HeteroSAGE share.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/nn/dropout.hpp"
#include "distgraph/nn/hetero_block_tensors.hpp"

namespace distgraph {

/// Shape and regularisation of a heterogeneous model, RGCN or HeteroSAGE (designated
/// initialisers). The number of node types is in_feats.size().
struct HeteroModelOptions {
  /// Per node type, its input width; 0 = the type never feeds the model. Featureless types
  /// get learnable embedding rows passed in as features by the caller (width = theirs).
  std::vector<std::int64_t> in_feats;
  std::int32_t num_relations = 0;               ///< >= 1
  std::vector<std::int32_t> relation_dst_type;  ///< per relation: its destination node type
  std::int64_t hidden = 64;                     ///< input projection and hidden layers, >= 1
  std::int64_t num_classes = 0;                 ///< output columns (logits), >= 1
  std::int64_t num_layers = 2;                  ///< message-passing layers = blocks, >= 1
  double dropout = 0.5;                         ///< after each hidden layer's ReLU, in [0, 1)
  double input_dropout = 0.0;                   ///< on the projected input x, in [0, 1)
  std::int64_t num_bases = 0;  ///< R-GCN basis decomposition; 0 = a full weight per relation
  /// HeteroSAGE: how the relations into one destination type are combined.
  enum class Combine { sum, mean } combine = Combine::sum;
  bool self_loop = true;  ///< R-GCN: add W_self[type(v)] h_v
};

/// The input features of the sources of one node type in the first block.
struct TypedInput {
  std::int32_t ntype = 0;   ///< node type, with in_feats[ntype] > 0
  torch::Tensor positions;  ///< [n] int64 source positions in blocks[0]
  torch::Tensor feat;       ///< [n, in_feats[ntype]] float32
};

namespace detail {

/// Throws InvalidArgument naming `model` unless `o` is consistent.
inline void check_hetero_options(const HeteroModelOptions& o, const std::string& model) {
  const auto fail = [&](const std::string& what) { throw InvalidArgument(model + ": " + what); };
  if (o.in_feats.empty()) fail("in_feats is empty; expected one width per node type");
  const auto num_types = static_cast<std::int64_t>(o.in_feats.size());
  for (std::size_t t = 0; t < o.in_feats.size(); ++t)
    if (o.in_feats[t] < 0)
      fail("in_feats[" + std::to_string(t) + "] " + std::to_string(o.in_feats[t]) +
           "; expected >= 0");
  if (o.num_relations < 1)
    fail("num_relations " + std::to_string(o.num_relations) + "; expected >= 1");
  if (static_cast<std::int64_t>(o.relation_dst_type.size()) != o.num_relations)
    fail("relation_dst_type has " + std::to_string(o.relation_dst_type.size()) +
         " entries; expected num_relations = " + std::to_string(o.num_relations));
  for (std::size_t r = 0; r < o.relation_dst_type.size(); ++r)
    if (o.relation_dst_type[r] < 0 || o.relation_dst_type[r] >= num_types)
      fail("relation_dst_type[" + std::to_string(r) + "] " +
           std::to_string(o.relation_dst_type[r]) + "; expected [0, " + std::to_string(num_types) +
           ")");
  if (o.hidden < 1 || o.num_classes < 1 || o.num_layers < 1 || o.num_bases < 0)
    fail("hidden " + std::to_string(o.hidden) + ", num_classes " + std::to_string(o.num_classes) +
         ", num_layers " + std::to_string(o.num_layers) + ", num_bases " +
         std::to_string(o.num_bases) + "; expected >= 1, >= 1, >= 1, >= 0");
  for (const double p : {o.dropout, o.input_dropout})
    if (!(p >= 0.0 && p < 1.0)) fail("dropout " + std::to_string(p) + "; expected [0, 1)");
}

/// Throws ShapeError naming `model` unless there is one block per layer, each with the
/// model's relation and node type counts, and block l's destinations are block l+1's
/// sources.
inline void check_hetero_blocks(const std::vector<HeteroBlockTensors>& blocks,
                                const HeteroModelOptions& o, const std::string& model) {
  const std::string who = model + " blocks";
  if (static_cast<std::int64_t>(blocks.size()) != o.num_layers)
    throw ShapeError(who, std::to_string(blocks.size()) + " blocks; expected " +
                              std::to_string(o.num_layers) + " (one per layer)");
  for (std::size_t l = 0; l < blocks.size(); ++l) {
    if (blocks[l].num_relations() != o.num_relations ||
        blocks[l].num_node_types() != static_cast<std::int64_t>(o.in_feats.size()))
      throw ShapeError(who, "block " + std::to_string(l) + " has " +
                                std::to_string(blocks[l].num_relations()) + " relations, " +
                                std::to_string(blocks[l].num_node_types()) +
                                " node types; expected " + std::to_string(o.num_relations) + ", " +
                                std::to_string(o.in_feats.size()));
    if (l + 1 < blocks.size() && blocks[l].num_dst() != blocks[l + 1].num_src())
      throw ShapeError(
          who, "block " + std::to_string(l) + " has " + std::to_string(blocks[l].num_dst()) +
                   " destinations, block " + std::to_string(l + 1) + " " +
                   std::to_string(blocks[l + 1].num_src()) + " sources; expected equal");
  }
}

/// Initialises each [in, out] slice of `w` [n, in, out] Xavier-uniform with the ReLU gain
/// (DGL's initialisation of SAGEConv and RelGraphConv weights).
inline void xavier_slices(torch::Tensor& w) {
  torch::NoGradGuard no_grad;
  const double bound = std::sqrt(2.0) * std::sqrt(6.0 / static_cast<double>(w.size(1) + w.size(2)));
  w.uniform_(-bound, bound);
}

/// A layer's output [num_dst, out_feats] for `hb`'s destinations from per_type[t], the
/// [n_t, out_feats] rows of the n_t destinations of type t in dst_of_type[t]'s order
/// (undefined where n_t is 0). When one type holds every destination (the usual last
/// block) its rows are 0 .. num_dst - 1 in order and are returned as they are.
inline torch::Tensor assemble_by_type(const HeteroBlockTensors& hb,
                                      const std::vector<torch::Tensor>& per_type,
                                      std::int64_t out_feats, const torch::TensorOptions& options) {
  const std::int64_t num_dst = hb.num_dst();
  for (const auto& rows : per_type)
    if (num_dst > 0 && rows.defined() && rows.size(0) == num_dst) return rows;
  auto out = torch::zeros({num_dst, out_feats}, options);
  for (std::size_t t = 0; t < per_type.size(); ++t)
    if (per_type[t].defined()) out.index_copy_(0, hb.dst_of_type[t], per_type[t]);
  return out;
}

/// Throws ShapeError naming `layer` unless `h` is [hb.num_src(), in_feats] and hb has
/// `num_relations` relations and `num_node_types` node types.
inline void check_hetero_layer_input(const HeteroBlockTensors& hb, const torch::Tensor& h,
                                     std::int64_t in_feats, std::int64_t num_relations,
                                     std::int64_t num_node_types, const std::string& layer) {
  if (hb.num_relations() != num_relations || hb.num_node_types() != num_node_types)
    throw ShapeError(layer + " block",
                     std::to_string(hb.num_relations()) + " relations, " +
                         std::to_string(hb.num_node_types()) + " node types; expected " +
                         std::to_string(num_relations) + ", " + std::to_string(num_node_types));
  if (h.dim() != 2 || h.size(0) != hb.num_src() || h.size(1) != in_feats) {
    std::string shape = "[";
    for (std::int64_t d = 0; d < h.dim(); ++d) shape += (d ? ", " : "") + std::to_string(h.size(d));
    throw ShapeError(layer + " input", "shape " + shape + "]; expected [" +
                                           std::to_string(hb.num_src()) + ", " +
                                           std::to_string(in_feats) + "]");
  }
}

}  // namespace detail

/// The input layer of RGCN and HeteroSAGE: per node type t with in_feats[t] > 0 a
/// Linear(in_feats[t] -> hidden) (with bias) applied to that type's rows, making
/// x [num_src of blocks[0], hidden]. Use through the `HeteroInput` holder; a torch module.
class HeteroInputImpl : public torch::nn::Module {
 public:
  /// Throws InvalidArgument as RGCN does for inconsistent options.
  explicit HeteroInputImpl(const HeteroModelOptions& options) : options_(options) {
    detail::check_hetero_options(options, "HeteroInput");
    for (std::size_t t = 0; t < options.in_feats.size(); ++t) {
      if (options.in_feats[t] == 0) {
        fc_.emplace_back(nullptr);
        continue;
      }
      fc_.push_back(register_module(
          "fc" + std::to_string(t),
          torch::nn::Linear(torch::nn::LinearOptions(options.in_feats[t], options.hidden))));
    }
  }

  /// x [num_src, hidden]: row p is the projection of the features given for source p.
  /// Every source must be covered exactly once; only the total row count is checked
  /// (ShapeError when it is not num_src), as are each input's type (IdOutOfRange, or
  /// InvalidArgument for a type with in_feats 0) and shapes (ShapeError).
  torch::Tensor forward(const std::vector<TypedInput>& inputs, std::int64_t num_src) {
    const std::string who = "HeteroInput";
    std::int64_t rows = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto& in = inputs[i];
      const std::string item = who + " input " + std::to_string(i);
      if (in.ntype < 0 || in.ntype >= static_cast<std::int32_t>(fc_.size()))
        throw IdOutOfRange(item + " node type", in.ntype, 0, static_cast<std::int64_t>(fc_.size()));
      const auto width = options_.in_feats[static_cast<std::size_t>(in.ntype)];
      if (width == 0)
        throw InvalidArgument(item + ": node type " + std::to_string(in.ntype) +
                              " has in_feats 0; expected a type that feeds the model");
      if (in.positions.dim() != 1 || in.feat.dim() != 2 ||
          in.feat.size(0) != in.positions.size(0) || in.feat.size(1) != width)
        throw ShapeError(item, "positions of " + std::to_string(in.positions.dim()) +
                                   " dims, feat of " + std::to_string(in.feat.dim()) +
                                   "; expected [n] positions and [n, " + std::to_string(width) +
                                   "] features");
      rows += in.positions.size(0);
    }
    if (rows != num_src)
      throw ShapeError(who, std::to_string(rows) + " input rows; expected one per source of " +
                                "blocks[0], " + std::to_string(num_src));
    if (inputs.empty()) return torch::zeros({0, options_.hidden});
    // Zeros, not empty: a row listed twice leaves another unlisted, and it reads as 0.
    auto x = torch::zeros({num_src, options_.hidden}, inputs.front().feat.options());
    for (const auto& in : inputs)
      x.index_copy_(0, in.positions, fc_[static_cast<std::size_t>(in.ntype)]->forward(in.feat));
    return x;
  }

  /// The projection of node type t; an empty holder where in_feats[t] is 0.
  torch::nn::Linear& fc(std::size_t t) { return fc_.at(t); }

 private:
  HeteroModelOptions options_;
  std::vector<torch::nn::Linear> fc_;
};

/// Holder of a HeteroInputImpl.
TORCH_MODULE(HeteroInput);

namespace detail {

/// The forward pass both typed models share: the per-type input projection, input
/// dropout, then the layers with ReLU and dropout between them. Throws as
/// check_hetero_blocks and HeteroInput.
template <class Conv>
torch::Tensor hetero_forward(const torch::nn::Module& model, HeteroInput& input,
                             std::vector<Conv>& convs, const HeteroModelOptions& o,
                             const std::vector<HeteroBlockTensors>& blocks,
                             const std::vector<TypedInput>& inputs, const char* name) {
  check_hetero_blocks(blocks, o, name);
  torch::Tensor h = input->forward(inputs, blocks.front().num_src());
  if (model.is_training()) h = distgraph::dropout(h, o.input_dropout);
  for (std::size_t l = 0; l < convs.size(); ++l) {
    h = convs[l]->forward(blocks[l], h);
    if (l + 1 < convs.size())
      h = model.is_training() ? relu_dropout(h, o.dropout) : torch::relu(h);
  }
  return h;
}

}  // namespace detail

}  // namespace distgraph

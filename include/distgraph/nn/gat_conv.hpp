// GATConv: multi-head graph attention (Velickovic et al. 2018) over a block's CSR, with
// the edge softmax per destination and the attention-weighted sum over its in-edges.
#pragma once

#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "distgraph/core/error.hpp"
#include "distgraph/nn/block_tensors.hpp"
#include "distgraph/nn/dropout.hpp"

namespace distgraph {

namespace detail {

/// out[d, h, :] = sum over k in [indptr[d], indptr[d+1]) of w[k, h] * feat[indices[k], h, :],
/// rows of heads x f values. Parallel over destinations.
template <class T>
void csr_weighted_gather(const std::int64_t* indptr, const std::int64_t* indices, const T* w,
                         const T* feat, T* out, std::int64_t num_dst, std::int64_t heads,
                         std::int64_t f) {
  const std::int64_t row = heads * f;
  at::parallel_for(0, num_dst, 64, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t d = begin; d < end; ++d) {
      T* o = out + d * row;
      std::fill(o, o + row, T(0));
      for (std::int64_t k = indptr[d]; k < indptr[d + 1]; ++k) {
        const T* s = feat + indices[k] * row;
        for (std::int64_t h = 0; h < heads; ++h) {
          const T a = w[k * heads + h];
          for (std::int64_t j = h * f; j < (h + 1) * f; ++j) o[j] += a * s[j];
        }
      }
    }
  });
}

/// d/dw of csr_weighted_gather: grad_w[k, h] = <grad_out[d, h, :], feat[indices[k], h, :]>.
/// Parallel over destinations (each edge belongs to one).
template <class T>
void csr_weighted_gather_grad_w(const std::int64_t* indptr, const std::int64_t* indices,
                                const T* grad_out, const T* feat, T* grad_w, std::int64_t num_dst,
                                std::int64_t heads, std::int64_t f) {
  const std::int64_t row = heads * f;
  at::parallel_for(0, num_dst, 64, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t d = begin; d < end; ++d) {
      const T* g = grad_out + d * row;
      for (std::int64_t k = indptr[d]; k < indptr[d + 1]; ++k) {
        const T* s = feat + indices[k] * row;
        for (std::int64_t h = 0; h < heads; ++h) {
          T acc = 0;
          for (std::int64_t j = h * f; j < (h + 1) * f; ++j) acc += g[j] * s[j];
          grad_w[k * heads + h] = acc;
        }
      }
    }
  });
}

/// d/dfeat of csr_weighted_gather: grad_feat[indices[k], h, :] += w[k, h] grad_out[d, h, :]
/// (grad_feat zeroed by the caller). Parallel over column ranges, so that no two threads
/// add into one value and the result does not depend on the thread count.
template <class T>
void csr_weighted_scatter(const std::int64_t* indptr, const std::int64_t* indices, const T* w,
                          const T* grad_out, T* grad_feat, std::int64_t num_dst, std::int64_t heads,
                          std::int64_t f) {
  const std::int64_t row = heads * f;
  at::parallel_for(0, row, 16, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t d = 0; d < num_dst; ++d) {
      const T* g = grad_out + d * row;
      for (std::int64_t k = indptr[d]; k < indptr[d + 1]; ++k) {
        T* s = grad_feat + indices[k] * row;
        for (std::int64_t c = c0; c < c1; ++c) s[c] += w[k * heads + c / f] * g[c];
      }
    }
  });
}

/// Autograd of the attention-weighted CSR sum over contiguous CPU float/double tensors:
/// weights [E, heads], features [num_src, heads * f] -> [num_dst, heads * f]. Neither
/// pass builds the [E, heads * f] matrix of weighted source rows.
struct CsrWeightedSumFunction : torch::autograd::Function<CsrWeightedSumFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& w,
                               const torch::Tensor& feat, const torch::Tensor& indptr,
                               const torch::Tensor& indices) {
    const auto wc = w.contiguous(), fc = feat.contiguous();
    const std::int64_t num_dst = indptr.size(0) - 1, heads = wc.size(1);
    const std::int64_t f = fc.size(1) / heads;
    auto out = torch::empty({num_dst, heads * f}, fc.options());
    AT_DISPATCH_FLOATING_TYPES(fc.scalar_type(), "csr_weighted_sum", [&] {
      csr_weighted_gather(indptr.data_ptr<std::int64_t>(), indices.data_ptr<std::int64_t>(),
                          wc.data_ptr<scalar_t>(), fc.data_ptr<scalar_t>(),
                          out.data_ptr<scalar_t>(), num_dst, heads, f);
    });
    ctx->save_for_backward({wc, fc, indptr, indices});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &w = saved[0], &feat = saved[1], &indptr = saved[2], &indices = saved[3];
    const auto g = grads[0].contiguous();
    const std::int64_t num_dst = indptr.size(0) - 1, heads = w.size(1);
    const std::int64_t f = feat.size(1) / heads;
    torch::Tensor grad_w, grad_feat;
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "csr_weighted_sum_backward", [&] {
      const auto* ip = indptr.data_ptr<std::int64_t>();
      const auto* ix = indices.data_ptr<std::int64_t>();
      if (ctx->needs_input_grad(0)) {
        grad_w = torch::empty_like(w);
        csr_weighted_gather_grad_w(ip, ix, g.data_ptr<scalar_t>(), feat.data_ptr<scalar_t>(),
                                   grad_w.data_ptr<scalar_t>(), num_dst, heads, f);
      }
      if (ctx->needs_input_grad(1)) {
        grad_feat = torch::zeros_like(feat);
        csr_weighted_scatter(ip, ix, w.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(),
                             grad_feat.data_ptr<scalar_t>(), num_dst, heads, f);
      }
    });
    const torch::Tensor none;  // indptr and indices are integers: no gradient
    return {grad_w, grad_feat, none, none};
  }
};

/// A block's CSR with a self-loop appended to every destination's edges (destination i
/// is source i): what GAT attends over.
struct SelfLoopCsr {
  torch::Tensor indptr, indices, dst_index;
};

inline SelfLoopCsr with_self_loops(const BlockTensors& block) {
  const auto opts = block.indptr.options();
  const auto rows = torch::arange(block.num_dst, opts);
  SelfLoopCsr c;
  c.indptr = block.indptr + torch::arange(block.num_dst + 1, opts);
  c.indices = torch::empty({block.num_edges() + block.num_dst}, opts);
  // Edge k of row d moves down by the d self-loops before it; each row's loop goes last.
  c.indices.index_put_({torch::arange(block.num_edges(), opts) + block.dst_index}, block.indices);
  c.indices.index_put_({c.indptr.slice(0, 1) - 1}, rows);
  c.dst_index = torch::repeat_interleave(rows, block.in_degrees + 1, /*dim=*/{},
                                         block.num_edges() + block.num_dst);
  return c;
}

/// sum over each destination's edges of w[k, h] * feat[indices[k], h, :] (see
/// CsrWeightedSumFunction; index_select then index_add off the CPU), [num_dst, heads * f].
inline torch::Tensor csr_weighted_sum(const SelfLoopCsr& csr, std::int64_t num_dst,
                                      const torch::Tensor& w, const torch::Tensor& feat) {
  if (feat.device().is_cpu() &&
      (feat.scalar_type() == torch::kFloat || feat.scalar_type() == torch::kDouble))
    return CsrWeightedSumFunction::apply(w, feat, csr.indptr, csr.indices);
  const std::int64_t heads = w.size(1);
  const auto msg = feat.index_select(0, csr.indices).view({w.size(0), heads, -1}) * w.unsqueeze(2);
  return torch::zeros({num_dst, feat.size(1)}, feat.options())
      .index_add(0, csr.dst_index, msg.view({w.size(0), -1}));
}

/// Softmax of `scores` [E, heads] over the edges of each destination (rows of `csr`).
inline torch::Tensor edge_softmax(const SelfLoopCsr& csr, std::int64_t num_dst,
                                  const torch::Tensor& scores) {
  const auto index = csr.dst_index.unsqueeze(1).expand_as(scores);
  // The per-destination maximum only keeps exp() in range: a constant for autograd.
  const auto top = torch::zeros({num_dst, scores.size(1)}, scores.options())
                       .scatter_reduce(0, index, scores.detach(), "amax", false);
  const auto ex = (scores - top.index_select(0, csr.dst_index)).exp();
  // Every destination has its self-loop, so no sum is 0.
  const auto sum = torch::zeros_like(top).index_add(0, csr.dst_index, ex);
  return ex / sum.index_select(0, csr.dst_index);
}

}  // namespace detail

/// Sizes and regularisation of one GATConv (designated initialisers).
struct GATConvOptions {
  std::int64_t in_feats = 0;    ///< columns of the source features, >= 1
  std::int64_t out_feats = 0;   ///< columns per head, >= 1
  std::int64_t heads = 1;       ///< attention heads, >= 1
  double negative_slope = 0.2;  ///< of the LeakyReLU on the attention logits
  double attn_dropout = 0.0;    ///< on the normalised attention coefficients, in [0, 1)
  bool bias = true;
};

/// DGL's `GATConv` on one block. Per head h: z = h W (`fc`), e_uv = LeakyReLU(a_l . z_u +
/// a_r . z_v) for every in-edge u -> v of destination v and for v's self-loop, alpha =
/// softmax of e over those edges, out_v = sum_u alpha_uv z_u + bias. Attention dropout acts
/// on alpha while training. Returns [num_dst, heads, out_feats]; the model concatenates or
/// averages the heads. Parameters `fc` (Linear, no bias), `attn_l`, `attn_r` [1, heads,
/// out_feats] and `bias` [heads * out_feats], initialised as DGL does (Xavier-normal with
/// the ReLU gain, zero bias). On the CPU the weighted sum and its gradient walk the CSR
/// (CsrWeightedSumFunction). Use through the `GATConv` holder.
class GATConvImpl : public torch::nn::Module {
 public:
  /// Throws InvalidArgument for a size below 1 or a dropout outside [0, 1).
  explicit GATConvImpl(const GATConvOptions& options) : options_(options) {
    const auto& o = options;
    if (o.in_feats < 1 || o.out_feats < 1 || o.heads < 1)
      throw InvalidArgument("GATConv: in_feats " + std::to_string(o.in_feats) + ", out_feats " +
                            std::to_string(o.out_feats) + ", heads " + std::to_string(o.heads) +
                            "; expected all >= 1");
    if (!(o.attn_dropout >= 0.0 && o.attn_dropout < 1.0))
      throw InvalidArgument("GATConv: attention dropout " + std::to_string(o.attn_dropout) +
                            "; expected [0, 1)");
    const auto width = o.heads * o.out_feats;
    fc_ = register_module(
        "fc", torch::nn::Linear(torch::nn::LinearOptions(o.in_feats, width).bias(false)));
    attn_l_ = register_parameter("attn_l", torch::empty({1, o.heads, o.out_feats}));
    attn_r_ = register_parameter("attn_r", torch::empty({1, o.heads, o.out_feats}));
    if (o.bias) bias_ = register_parameter("bias", torch::zeros({width}));
    reset_parameters();
  }

  /// DGL's initialisation: Xavier-normal with gain sqrt(2), zero bias.
  void reset_parameters() {
    torch::NoGradGuard no_grad;
    const double gain = std::sqrt(2.0);
    torch::nn::init::xavier_normal_(fc_->weight, gain);
    torch::nn::init::xavier_normal_(attn_l_, gain);
    torch::nn::init::xavier_normal_(attn_r_, gain);
    if (bias_.defined()) bias_.zero_();
  }

  /// [num_dst, heads, out_feats] from `h_src` [num_src, in_feats]. Throws ShapeError for
  /// a feature matrix of another shape.
  torch::Tensor forward(const BlockTensors& block, const torch::Tensor& h_src) {
    detail::check_layer_input("GATConv input", h_src, block.num_src, options_.in_feats);
    const auto heads = options_.heads, f = options_.out_feats;
    const auto z = fc_->forward(h_src);  // [num_src, heads * f]
    const auto z3 = z.view({block.num_src, heads, f});
    const auto el = (z3 * attn_l_).sum(-1);                             // [num_src, heads]
    const auto er = (z3.slice(0, 0, block.num_dst) * attn_r_).sum(-1);  // [num_dst, heads]
    const auto csr = detail::with_self_loops(block);
    const auto scores =
        torch::leaky_relu(el.index_select(0, csr.indices) + er.index_select(0, csr.dst_index),
                          options_.negative_slope);
    auto alpha = detail::edge_softmax(csr, block.num_dst, scores);
    if (is_training()) alpha = dropout(alpha, options_.attn_dropout);
    auto out = detail::csr_weighted_sum(csr, block.num_dst, alpha, z);
    if (bias_.defined()) out = out + bias_;
    return out.view({block.num_dst, heads, f});
  }

  const GATConvOptions& options() const noexcept { return options_; }
  torch::nn::Linear& fc() noexcept { return fc_; }
  torch::Tensor& attn_l() noexcept { return attn_l_; }
  torch::Tensor& attn_r() noexcept { return attn_r_; }
  /// Undefined when options().bias is false.
  torch::Tensor& bias() noexcept { return bias_; }

 private:
  GATConvOptions options_;
  torch::nn::Linear fc_{nullptr};
  torch::Tensor attn_l_, attn_r_, bias_;
};

/// Holder of a GATConvImpl (`GATConv conv(GATConvOptions{...}); conv->forward(b, h)`).
TORCH_MODULE(GATConv);

}  // namespace distgraph

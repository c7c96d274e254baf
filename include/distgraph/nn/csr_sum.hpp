// Sum of source rows over each destination's in-edges, straight from a block's CSR.
#pragma once

#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <algorithm>
#include <cstdint>

#include "distgraph/nn/block_tensors.hpp"

namespace distgraph {

namespace detail {

/// out[d] = sum of src[indices[k]] for k in [indptr[d], indptr[d+1]), rows of `f` values.
/// Parallel over destinations; each row sums its edges in CSR order.
template <class T>
void csr_gather_sum(const std::int64_t* indptr, const std::int64_t* indices, const T* src, T* out,
                    std::int64_t num_dst, std::int64_t f) {
  at::parallel_for(0, num_dst, 64, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t d = begin; d < end; ++d) {
      T* o = out + d * f;
      std::fill(o, o + f, T(0));
      for (std::int64_t k = indptr[d]; k < indptr[d + 1]; ++k) {
        const T* s = src + indices[k] * f;
        for (std::int64_t j = 0; j < f; ++j) o[j] += s[j];
      }
    }
  });
}

/// The transpose: grad_src[indices[k]] += grad_out[d] over every edge (grad_src zeroed by
/// the caller). Parallel over column ranges, so that no two threads add into one value
/// and the result does not depend on the thread count.
template <class T>
void csr_scatter_sum(const std::int64_t* indptr, const std::int64_t* indices, const T* grad_out,
                     T* grad_src, std::int64_t num_dst, std::int64_t f) {
  at::parallel_for(0, f, 16, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t d = 0; d < num_dst; ++d) {
      const T* g = grad_out + d * f;
      for (std::int64_t k = indptr[d]; k < indptr[d + 1]; ++k) {
        T* s = grad_src + indices[k] * f;
        for (std::int64_t j = c0; j < c1; ++j) s[j] += g[j];
      }
    }
  });
}

/// Autograd of the CSR sum over contiguous CPU float/double rows.
struct CsrSumFunction : torch::autograd::Function<CsrSumFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& msg,
                               const torch::Tensor& indptr, const torch::Tensor& indices) {
    const auto m = msg.contiguous();
    const std::int64_t num_dst = indptr.size(0) - 1, f = m.size(1);
    auto out = torch::empty({num_dst, f}, m.options());
    AT_DISPATCH_FLOATING_TYPES(m.scalar_type(), "csr_sum", [&] {
      csr_gather_sum(indptr.data_ptr<std::int64_t>(), indices.data_ptr<std::int64_t>(),
                     m.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), num_dst, f);
    });
    ctx->save_for_backward({indptr, indices});
    ctx->saved_data["num_src"] = m.size(0);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& indptr = saved[0];
    const auto& indices = saved[1];
    const auto g = grads[0].contiguous();
    const std::int64_t num_dst = indptr.size(0) - 1, f = g.size(1);
    auto grad_src = torch::zeros({ctx->saved_data["num_src"].toInt(), f}, g.options());
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "csr_sum_backward", [&] {
      csr_scatter_sum(indptr.data_ptr<std::int64_t>(), indices.data_ptr<std::int64_t>(),
                      g.data_ptr<scalar_t>(), grad_src.data_ptr<scalar_t>(), num_dst, f);
    });
    const torch::Tensor none;  // indptr and indices are integers: no gradient
    return {grad_src, none, none};
  }
};

}  // namespace detail

/// Sum of `msg` rows [block.num_src, F] over each destination's in-edges: [block.num_dst, F],
/// differentiable in msg. On the CPU (float, double) a kernel walks the CSR directly and
/// never builds the [num_edges, F] matrix of gathered rows, nor its gradient; elsewhere
/// index_select then index_add.
inline torch::Tensor csr_sum(const BlockTensors& block, const torch::Tensor& msg) {
  if (msg.device().is_cpu() && block.device().is_cpu() &&
      (msg.scalar_type() == torch::kFloat || msg.scalar_type() == torch::kDouble))
    return detail::CsrSumFunction::apply(msg, block.indptr.contiguous(),
                                         block.indices.contiguous());
  return torch::zeros({block.num_dst, msg.size(1)}, msg.options())
      .index_add(0, block.dst_index, msg.index_select(0, block.indices));
}

}  // namespace distgraph

// Two linear maps of one input, the second over its leading rows only, with one gradient.
#pragma once

#include <torch/autograd.h>
#include <torch/types.h>

#include <cstdint>
#include <utility>

namespace distgraph {

namespace detail {

/// Autograd of split_linear. Backward writes the input's gradient once: the all-rows
/// product makes it, the leading-rows product is accumulated into its first rows by the
/// GEMM (addmm_ with beta 1). Through two separate linears the slice's gradient was a
/// zero-filled full-size matrix added to the other one: a memset and an add over
/// [rows, in_feats] per layer and batch.
struct SplitLinearFunction : torch::autograd::Function<SplitLinearFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& x,
                                                const torch::Tensor& w_all,
                                                const torch::Tensor& w_lead,
                                                std::int64_t lead_rows) {
    const auto lead = x.narrow(0, 0, lead_rows);
    ctx->save_for_backward({x, w_all, w_lead});
    ctx->saved_data["lead_rows"] = lead_rows;
    // An unused output's gradient stays undefined (not a zero matrix), and so does its
    // weight's gradient, as with two separate linears.
    ctx->set_materialize_grads(false);
    return {x.mm(w_all.t()), lead.mm(w_lead.t())};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &w_all = saved[1], &w_lead = saved[2];
    const auto lead_rows = ctx->saved_data["lead_rows"].toInt();
    const auto &g_all = grads[0], &g_lead = grads[1];
    torch::Tensor gx, gw_all, gw_lead;
    if (ctx->needs_input_grad(0)) {
      gx = g_all.defined() ? g_all.mm(w_all) : torch::zeros_like(x);
      if (g_lead.defined()) gx.narrow(0, 0, lead_rows).addmm_(g_lead, w_lead);
    }
    if (ctx->needs_input_grad(1) && g_all.defined()) gw_all = g_all.t().mm(x);
    if (ctx->needs_input_grad(2) && g_lead.defined())
      gw_lead = g_lead.t().mm(x.narrow(0, 0, lead_rows));
    const torch::Tensor none;  // lead_rows is a number: no gradient
    return {gx, gw_all, gw_lead, none};
  }
};

}  // namespace detail

/// {x W_all^T, x[:lead_rows] W_lead^T} for x [rows, in] and weights [out_*, in]: what
/// `linear(x, W_all)` and `linear(x.narrow(0, 0, lead_rows), W_lead)` return, with the
/// gradient of x made in one buffer instead of two summed (see SplitLinearFunction). A
/// SAGEConv layer projects every source row for its neighbours and the destination rows
/// (the leading ones) for themselves.
inline std::pair<torch::Tensor, torch::Tensor> split_linear(const torch::Tensor& x,
                                                            const torch::Tensor& w_all,
                                                            const torch::Tensor& w_lead,
                                                            std::int64_t lead_rows) {
  auto out = detail::SplitLinearFunction::apply(x, w_all, w_lead, lead_rows);
  return {std::move(out[0]), std::move(out[1])};
}

}  // namespace distgraph

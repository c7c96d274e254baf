// typed_gather_mean: every relation's neighbour mean (and self rows) of a typed block, in one pass.
#pragma once

#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "distgraph/nn/block_tensors.hpp"
#include "distgraph/nn/hetero_block_tensors.hpp"

namespace distgraph::detail {

/// The rows of one destination node type: `rows` destinations, and per column block j a
/// CSR over them (blocks[j].num_dst == rows) whose row means fill columns [j F, (j+1) F)
/// of the segment's output [rows, blocks.size() * F]. A self block is a CSR with one edge
/// per row (the destination's own source row).
struct GatherSegment {
  std::int64_t rows = 0;
  std::vector<BlockTensors> blocks;
};

/// Where each CSR of a flattened gather plan lives: `segments` holds 3 numbers per segment
/// (rows, number of blocks, first block) and `block_start` each block's first entry in
/// the flat indptr, whose values index the flat indices.
struct GatherPlan {
  std::vector<std::int64_t> segments;
  std::vector<std::int64_t> block_start;

  std::size_t size() const noexcept { return segments.size() / 3; }
  std::int64_t rows(std::size_t s) const { return segments[3 * s]; }
  std::int64_t blocks(std::size_t s) const { return segments[3 * s + 1]; }

  /// Calls f(row, edge_begin, edge_end) for the output rows of segment s's destinations
  /// [i0, i1), row i * blocks + j being destination i's mean over block j.
  template <class F>
  void for_each_row(const std::int64_t* indptr, std::size_t s, std::int64_t i0, std::int64_t i1,
                    F&& f) const {
    const std::int64_t c = blocks(s), first = segments[3 * s + 2];
    for (std::int64_t i = i0; i < i1; ++i)
      for (std::int64_t j = 0; j < c; ++j) {
        const std::int64_t* ip = indptr + block_start[static_cast<std::size_t>(first + j)];
        f(i * c + j, ip[i], ip[i + 1]);
      }
  }
};

/// Autograd of the gather on contiguous CPU float/double rows: one output per segment,
/// [rows, blocks * F], whose row i * blocks + j of F values (viewed flat) is the mean of h
/// over destination i's edges in block j (0 without edges). Separate outputs, not one
/// split afterwards: the split's backward concatenated the gradients (13 ms of a 110 ms
/// DBLP-shaped layer). Backward zeroes one [num_src, F] gradient and scatters into it by
/// column ranges (no two threads add into one value, so the result does not depend on
/// the thread count), as csr_sum does.
struct TypedGatherFunction : torch::autograd::Function<TypedGatherFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& h, const torch::Tensor& indptr,
                                                const torch::Tensor& indices,
                                                std::vector<std::int64_t> segments,
                                                std::vector<std::int64_t> block_start) {
    const auto m = h.contiguous();
    const std::int64_t f = m.size(1);
    const GatherPlan plan{std::move(segments), std::move(block_start)};
    torch::autograd::variable_list outs;
    for (std::size_t s = 0; s < plan.size(); ++s)
      outs.push_back(torch::empty({plan.rows(s), plan.blocks(s) * f}, m.options()));
    AT_DISPATCH_FLOATING_TYPES(m.scalar_type(), "typed_gather_mean", [&] {
      const auto* ip = indptr.data_ptr<std::int64_t>();
      const auto* ix = indices.data_ptr<std::int64_t>();
      const auto* src = m.data_ptr<scalar_t>();
      for (std::size_t s = 0; s < plan.size(); ++s) {
        auto* o = outs[s].data_ptr<scalar_t>();
        at::parallel_for(0, plan.rows(s), 64, [&](std::int64_t i0, std::int64_t i1) {
          plan.for_each_row(ip, s, i0, i1, [&](std::int64_t row, std::int64_t e0, std::int64_t e1) {
            scalar_t* dst = o + row * f;
            std::fill(dst, dst + f, scalar_t(0));
            for (std::int64_t k = e0; k < e1; ++k) {
              const scalar_t* x = src + ix[k] * f;
              for (std::int64_t j = 0; j < f; ++j) dst[j] += x[j];
            }
            if (e1 - e0 > 1) {
              const auto inv = scalar_t(1) / static_cast<scalar_t>(e1 - e0);
              for (std::int64_t j = 0; j < f; ++j) dst[j] *= inv;
            }
          });
        });
      }
    });
    ctx->save_for_backward({indptr, indices});
    ctx->saved_data["segments"] = plan.segments;
    ctx->saved_data["block_start"] = plan.block_start;
    ctx->saved_data["num_src"] = m.size(0);
    ctx->saved_data["f"] = f;
    return outs;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const GatherPlan plan{ctx->saved_data["segments"].toIntVector(),
                          ctx->saved_data["block_start"].toIntVector()};
    const std::int64_t f = ctx->saved_data["f"].toInt();
    // Unused outputs come as zeros (torch materialises them), so every gradient is defined.
    for (auto& g : grads) g = g.contiguous();
    const auto options = grads.front().options();
    auto grad_h = torch::zeros({ctx->saved_data["num_src"].toInt(), f}, options);
    AT_DISPATCH_FLOATING_TYPES(grad_h.scalar_type(), "typed_gather_mean_backward", [&] {
      const auto* ip = saved[0].data_ptr<std::int64_t>();
      const auto* ix = saved[1].data_ptr<std::int64_t>();
      auto* gh = grad_h.data_ptr<scalar_t>();
      at::parallel_for(0, f, 16, [&](std::int64_t c0, std::int64_t c1) {
        for (std::size_t s = 0; s < plan.size(); ++s) {
          const auto* go = grads[s].data_ptr<scalar_t>();
          plan.for_each_row(ip, s, 0, plan.rows(s),
                            [&](std::int64_t row, std::int64_t e0, std::int64_t e1) {
                              if (e1 == e0) return;
                              const auto inv = scalar_t(1) / static_cast<scalar_t>(e1 - e0);
                              const scalar_t* gr = go + row * f;
                              for (std::int64_t k = e0; k < e1; ++k) {
                                scalar_t* x = gh + ix[k] * f;
                                for (std::int64_t j = c0; j < c1; ++j) x[j] += gr[j] * inv;
                              }
                            });
        }
      });
    });
    const torch::Tensor none;  // the plan is integers: no gradient
    return {grad_h, none, none, none, none};
  }
};

/// Per segment s, its [rows_s, blocks_s * F] matrix of column blocks: block j's columns
/// are the mean of `h` [num_src, F] rows over each row's edges in blocks[j] (0 without
/// edges). Differentiable in h. On the CPU (float, double) one kernel walks every CSR and
/// the backward pass makes one [num_src, F] gradient (csr_sum relation by relation made
/// one per relation plus one per self-row gather, and their sums: backward ran 2x longer
/// on a DBLP-shaped batch); elsewhere index_select then index_add per block.
inline std::vector<torch::Tensor> typed_gather_mean(const torch::Tensor& h,
                                                    const std::vector<GatherSegment>& segs) {
  const std::int64_t f = h.size(1);
  const bool cpu = h.device().is_cpu() &&
                   (h.scalar_type() == torch::kFloat || h.scalar_type() == torch::kDouble);
  if (!cpu) {
    std::vector<torch::Tensor> out;
    for (const auto& seg : segs) {
      std::vector<torch::Tensor> cols;
      for (const auto& b : seg.blocks)
        cols.push_back(torch::zeros({seg.rows, f}, h.options())
                           .index_add(0, b.dst_index, h.index_select(0, b.indices)) /
                       b.in_degrees.to(h.scalar_type()).clamp_min(1).unsqueeze(1));
      out.push_back(cols.empty() ? torch::zeros({seg.rows, 0}, h.options()) : torch::cat(cols, 1));
    }
    return out;
  }
  if (segs.empty()) return {};
  // Flatten: every block's indptr shifted to index one concatenated indices array.
  GatherPlan plan;
  std::vector<torch::Tensor> indptrs, indices;
  std::int64_t edges = 0, ptrs = 0, block = 0;
  for (const auto& seg : segs) {
    const auto c = static_cast<std::int64_t>(seg.blocks.size());
    plan.segments.insert(plan.segments.end(), {seg.rows, c, block});
    for (const auto& b : seg.blocks) {
      plan.block_start.push_back(ptrs);
      indptrs.push_back(b.indptr + edges);
      indices.push_back(b.indices);
      edges += b.indices.size(0);
      ptrs += b.indptr.size(0);
      ++block;
    }
  }
  const auto long_opts = torch::TensorOptions().dtype(torch::kLong);
  return TypedGatherFunction::apply(
      h, indptrs.empty() ? torch::zeros({0}, long_opts) : torch::cat(indptrs).contiguous(),
      indices.empty() ? torch::zeros({0}, long_opts) : torch::cat(indices).contiguous(),
      std::move(plan.segments), std::move(plan.block_start));
}

/// A CSR with one edge per row, from source rows[i] to row i (a destination's own row).
inline BlockTensors self_block(const torch::Tensor& rows, std::int64_t num_src) {
  const std::int64_t n = rows.size(0);
  const auto opts = rows.options();
  return BlockTensors{torch::arange(n + 1, opts), rows,    torch::arange(n, opts),
                      torch::ones({n}, opts),     num_src, n};
}

/// What a typed layer multiplies by its weights, per destination node type t.
struct TypedGather {
  /// [n_t, c_t * F]: h of the type's own rows if it has a self term, then per used relation
  /// the mean of h over its edges; undefined where n_t is 0.
  std::vector<torch::Tensor> x;
  std::vector<std::vector<std::int64_t>> rels;  ///< the relations used, in column order
};

/// The TypedGather of `h` [num_src, F] over `hb`: for type t, columns of its own rows when
/// self_of_type[t], then those of each relation in rels_of_type[t] that has an edge in hb
/// (a relation without one would only add zero columns).
inline TypedGather gather_by_type(const HeteroBlockTensors& hb, const torch::Tensor& h,
                                  const std::vector<std::vector<std::int64_t>>& rels_of_type,
                                  const std::vector<bool>& self_of_type) {
  const auto local = dst_ranks(hb);
  TypedGather g;
  g.x.resize(hb.dst_of_type.size());
  g.rels.resize(hb.dst_of_type.size());
  std::vector<GatherSegment> segs;
  std::vector<std::size_t> seg_type;
  for (std::size_t t = 0; t < hb.dst_of_type.size(); ++t) {
    const auto& rows = hb.dst_of_type[t];
    if (rows.size(0) == 0) continue;
    GatherSegment seg{rows.size(0), {}};
    if (self_of_type[t]) seg.blocks.push_back(self_block(rows, hb.num_src()));
    for (const std::int64_t r : rels_of_type[t]) {
      if (hb.rel_edges[static_cast<std::size_t>(r)].size(0) == 0) continue;
      seg.blocks.push_back(relation_block(hb, r, static_cast<std::int64_t>(t), local));
      g.rels[t].push_back(r);
    }
    segs.push_back(std::move(seg));
    seg_type.push_back(t);
  }
  auto x = typed_gather_mean(h, segs);
  for (std::size_t s = 0; s < segs.size(); ++s) g.x[seg_type[s]] = std::move(x[s]);
  return g;
}

}  // namespace distgraph::detail

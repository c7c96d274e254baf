// HeteroBlockTensors: a Block with edge and node types, as tensors, for typed message passing.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/nn/block_tensors.hpp"
#include "distgraph/sampling/block.hpp"

namespace distgraph {

/// A Block with node and edge types, as tensors on one device (a typed graph sampled as a
/// homogeneous one, as DGL's distributed sampler does). Copies share the tensors.
struct HeteroBlockTensors {
  BlockTensors block;       ///< the homogeneous block
  torch::Tensor edge_type;  ///< [num_edges] int64 relation of each edge, in [0, num_relations)
  torch::Tensor src_type;   ///< [num_src] int64 node type of each source (dst = first num_dst)
  /// [num_relations]: ascending int64 edge positions of relation r (possibly empty).
  std::vector<torch::Tensor> rel_edges;
  /// [num_node_types]: ascending int64 destination positions of type t (possibly empty).
  std::vector<torch::Tensor> dst_of_type;

  std::int64_t num_src() const { return block.num_src; }
  std::int64_t num_dst() const { return block.num_dst; }
  std::int64_t num_relations() const { return static_cast<std::int64_t>(rel_edges.size()); }
  std::int64_t num_node_types() const { return static_cast<std::int64_t>(dst_of_type.size()); }
  torch::Device device() const { return block.device(); }

  /// The same block on `d` (a no-op on the device it is on). `non_blocking` copies
  /// asynchronously from pinned host memory.
  HeteroBlockTensors to(torch::Device d, bool non_blocking = false) const {
    if (d == device()) return *this;
    HeteroBlockTensors out{block.to(d, non_blocking),
                           edge_type.to(d, non_blocking),
                           src_type.to(d, non_blocking),
                           {},
                           {}};
    out.rel_edges.reserve(rel_edges.size());
    for (const auto& e : rel_edges) out.rel_edges.push_back(e.to(d, non_blocking));
    out.dst_of_type.reserve(dst_of_type.size());
    for (const auto& v : dst_of_type) out.dst_of_type.push_back(v.to(d, non_blocking));
    return out;
  }
};

namespace detail {

/// Positions [0, n) grouped by `key[i]` in [0, k), stably (so each group ascends), as one
/// int64 tensor and the k groups as views of it: a counting sort, O(n + k).
inline std::vector<torch::Tensor> group_positions(std::span<const std::int32_t> key, std::int32_t k,
                                                  torch::Device device) {
  std::vector<std::int64_t> start(static_cast<std::size_t>(k) + 1, 0);
  for (const std::int32_t t : key) ++start[static_cast<std::size_t>(t) + 1];
  for (std::size_t t = 0; t < static_cast<std::size_t>(k); ++t) start[t + 1] += start[t];
  auto order = torch::empty({static_cast<std::int64_t>(key.size())}, torch::kLong);
  auto* o = order.data_ptr<std::int64_t>();
  std::vector<std::int64_t> next(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < key.size(); ++i)
    o[next[static_cast<std::size_t>(key[i])]++] = static_cast<std::int64_t>(i);
  order = order.to(device);  // one transfer; the groups are views
  std::vector<torch::Tensor> groups;
  groups.reserve(static_cast<std::size_t>(k));
  for (std::size_t t = 0; t < static_cast<std::size_t>(k); ++t)
    groups.push_back(order.slice(0, start[t], start[t + 1]));
  return groups;
}

/// `types` as an int64 tensor on `device`, after checking each lies in [0, limit).
inline torch::Tensor checked_types(std::span<const std::int32_t> types, std::int32_t limit,
                                   const std::string& subject, torch::Device device) {
  auto t = torch::empty({static_cast<std::int64_t>(types.size())}, torch::kLong);
  auto* p = t.data_ptr<std::int64_t>();
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (types[i] < 0 || types[i] >= limit) throw IdOutOfRange(subject, types[i], 0, limit);
    p[i] = types[i];
  }
  return t.to(device);
}

/// The edges of relation `r` into the destinations of type `t` as a BlockTensors whose
/// destinations are those n_t nodes, numbered by their rank in hb.dst_of_type[t] (so the
/// result's row i is destination hb.dst_of_type[t][i]); sources stay block positions.
/// `local` maps each destination to its rank within its type (dst_ranks). Edges of r into
/// a destination of another type are dropped. Relies on rel_edges[r] and dst_of_type[t]
/// ascending (as hetero_block_tensors makes them), which keeps the rows in CSR order.
inline BlockTensors relation_block(const HeteroBlockTensors& hb, std::int64_t r, std::int64_t t,
                                   const torch::Tensor& local) {
  const auto& edges = hb.rel_edges[static_cast<std::size_t>(r)];
  const std::int64_t n_t = hb.dst_of_type[static_cast<std::size_t>(t)].size(0);
  auto dst = hb.block.dst_index.index_select(0, edges);
  auto src = hb.block.indices.index_select(0, edges);
  const auto keep = hb.src_type.index_select(0, dst) == t;
  dst = dst.masked_select(keep);
  src = src.masked_select(keep);
  auto row = local.index_select(0, dst);
  auto deg = torch::zeros({n_t}, row.options()).index_add_(0, row, torch::ones_like(row));
  auto indptr = torch::cat({torch::zeros({1}, row.options()), deg.cumsum(0)});
  return BlockTensors{std::move(indptr), std::move(src), std::move(row),
                      std::move(deg),    hb.num_src(),   n_t};
}

/// Rank of each destination within its node type, [num_dst] int64.
inline torch::Tensor dst_ranks(const HeteroBlockTensors& hb) {
  auto local = torch::zeros({hb.num_dst()}, hb.block.indices.options());
  for (const auto& rows : hb.dst_of_type)
    if (rows.size(0) > 0) local.index_copy_(0, rows, torch::arange(rows.size(0), rows.options()));
  return local;
}

}  // namespace detail

/// `b` with the relation of each of its edges (`edge_types`, in b's edge order) and the node
/// type of each of its sources (`src_types`), as tensors on `device`; b's arrays are copied.
/// Throws InvalidArgument for num_relations or num_node_types below 1, ShapeError for an
/// inconsistent block or a type array of the wrong length, IdOutOfRange for a source
/// position or a type index outside its range.
inline HeteroBlockTensors hetero_block_tensors(const Block& b,
                                               std::span<const std::int32_t> edge_types,
                                               std::span<const std::int32_t> src_types,
                                               std::int32_t num_relations,
                                               std::int32_t num_node_types,
                                               torch::Device device = torch::kCPU) {
  const std::string who = "hetero_block_tensors";
  if (num_relations < 1 || num_node_types < 1)
    throw InvalidArgument(who + ": num_relations " + std::to_string(num_relations) +
                          ", num_node_types " + std::to_string(num_node_types) +
                          "; expected both >= 1");
  if (static_cast<std::int64_t>(edge_types.size()) != b.num_edges())
    throw ShapeError(who + " edge_types", std::to_string(edge_types.size()) +
                                              " entries; expected one per edge, " +
                                              std::to_string(b.num_edges()));
  if (static_cast<std::int64_t>(src_types.size()) != b.num_src())
    throw ShapeError(who + " src_types", std::to_string(src_types.size()) +
                                             " entries; expected one per source, " +
                                             std::to_string(b.num_src()));
  HeteroBlockTensors hb;
  hb.block = block_tensors(b, device);  // checks the CSR
  // Types are checked before the groups are made: the counting sort indexes by them.
  hb.edge_type = detail::checked_types(edge_types, num_relations, who + " edge type", device);
  hb.src_type = detail::checked_types(src_types, num_node_types, who + " node type", device);
  hb.rel_edges = detail::group_positions(edge_types, num_relations, device);
  hb.dst_of_type = detail::group_positions(src_types.first(static_cast<std::size_t>(b.num_dst)),
                                           num_node_types, device);
  return hb;
}

}  // namespace distgraph

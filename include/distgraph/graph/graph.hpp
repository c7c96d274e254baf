// Graph: a typed graph held twice, as a CSR by source and a CSC by destination.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/parallel.hpp"
#include "distgraph/graph/coo.hpp"
#include "distgraph/graph/csr.hpp"
#include "distgraph/graph/type_map.hpp"

namespace distgraph {

/// A directed graph over homogeneous node IDs with both adjacency directions.
///
/// Edge IDs are `[0, num_edges())` and name the same edge in both directions: if
/// `out.edge_ids[i] == e` at row u, column v, then `in` holds e at row v, column u.
/// Edge types own contiguous edge-ID ranges of `types` (see TypeMap). How build_graph
/// assigns edge IDs:
///   - no cleaning option set: edge ID = position of the edge in the input Coo, so callers
///     can index their own per-edge data with it;
///   - any of remove_self_loops, remove_duplicates, symmetrize: edge ID = position of the
///     edge in the cleaned edge list ordered by (edge type, src, dst), i.e. `out.edge_ids`
///     is 0, 1, 2, ... (for typed graphs, type by type).
/// Build through build_graph; the members are public so loaders can assemble mapped arrays.
/// Concurrent reads are thread-safe.
struct Graph {
  TypeMap types;
  Csr out;  ///< CSR, row = src: out-neighbours
  Csr in;   ///< CSC, row = dst: in-neighbours

  std::int64_t num_nodes() const noexcept { return out.num_rows; }
  std::int64_t num_edges() const noexcept { return out.num_edges(); }
  std::span<const std::int64_t> out_neighbors(std::int64_t v) const noexcept {
    return out.neighbors(v);
  }
  std::span<const std::int64_t> in_neighbors(std::int64_t v) const noexcept {
    return in.neighbors(v);
  }
  std::int64_t out_degree(std::int64_t v) const noexcept { return out.degree(v); }
  std::int64_t in_degree(std::int64_t v) const noexcept { return in.degree(v); }
  /// Out-degree of every node.
  std::vector<std::int64_t> out_degrees() const { return degrees(out); }
  /// In-degree of every node.
  std::vector<std::int64_t> in_degrees() const { return degrees(in); }

  /// The edge list ordered by edge ID: `src[e], dst[e]` are the endpoints of edge e.
  /// Requires edge IDs to be a permutation of `[0, num_edges())`, as build_graph makes.
  Coo to_coo(unsigned num_threads = 0) const {
    const std::int64_t m = num_edges();
    std::vector<std::int64_t> src(static_cast<std::size_t>(m)), dst(static_cast<std::size_t>(m));
    const std::int64_t* indptr = out.indptr.data();
    const std::int64_t* idx = out.indices.data();
    const std::int64_t* eid = out.edge_ids.data();
    parallel_chunks(0, num_nodes(), num_threads, [&](unsigned, std::int64_t b, std::int64_t e) {
      for (std::int64_t u = b; u < e; ++u)
        for (std::int64_t i = indptr[u]; i < indptr[u + 1]; ++i) {
          src[static_cast<std::size_t>(eid[i])] = u;
          dst[static_cast<std::size_t>(eid[i])] = idx[i];
        }
    });
    return Coo{num_nodes(), Buffer<std::int64_t>(std::move(src)),
               Buffer<std::int64_t>(std::move(dst))};
  }

 private:
  static std::vector<std::int64_t> degrees(const Csr& c) {
    std::vector<std::int64_t> d(static_cast<std::size_t>(c.num_rows));
    for (std::int64_t v = 0; v < c.num_rows; ++v) d[static_cast<std::size_t>(v)] = c.degree(v);
    return d;
  }
};

}  // namespace distgraph

// LocalGraphView: the adjacency one sampler call reads (indptr, indices, edge and node maps).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "distgraph/core/error.hpp"
#include "distgraph/graph/csr.hpp"
#include "distgraph/graph/graph.hpp"

namespace distgraph {

/// Which edges of a row a view holds: in-edges (a CSC, row = destination, the default for
/// message passing) or out-edges (a CSR, row = source).
enum class EdgeDir { in, out };

/// Non-owning view of a compressed adjacency plus the maps from its local IDs to global
/// IDs: row r's neighbours are `indices[indptr[r] .. indptr[r+1])`, the edge at position i
/// has global ID `edge_ids[i]`, and local node u has global ID `node_ids[u]` (identity
/// when `node_ids` is empty, as for a whole Graph). Rows and neighbours share one local ID
/// space, as in a Partition. The arrays are trusted to form a valid CSR (Csr::validate and
/// load_partition check them); check_shape() does the O(1) checks a batch repeats. The
/// viewed arrays must outlive the view. Concurrent reads are thread-safe.
struct LocalGraphView {
  std::span<const std::int64_t> indptr;    ///< num_rows() + 1 offsets
  std::span<const std::int64_t> indices;   ///< local neighbour IDs
  std::span<const std::int64_t> edge_ids;  ///< global edge ID of each position
  std::span<const std::int64_t> node_ids;  ///< local -> global node IDs; empty = identity
  EdgeDir dir = EdgeDir::in;
  /// Local nodes [0, run_rows) have global IDs run_base + local: node_ids' leading run
  /// (a relabeled partition's owned nodes, identity_run), mapped without reading it. 0:
  /// every node through node_ids.
  std::int64_t run_rows = 0;
  std::int64_t run_base = 0;

  std::int64_t num_rows() const noexcept {
    return indptr.empty() ? 0 : static_cast<std::int64_t>(indptr.size()) - 1;
  }
  std::int64_t num_edges() const noexcept { return static_cast<std::int64_t>(indices.size()); }
  std::int64_t row_begin(std::int64_t row) const noexcept {
    return indptr[static_cast<std::size_t>(row)];
  }
  std::int64_t degree(std::int64_t row) const noexcept {
    return indptr[static_cast<std::size_t>(row) + 1] - indptr[static_cast<std::size_t>(row)];
  }
  /// Global ID of local node `local`.
  std::int64_t global_node(std::int64_t local) const noexcept {
    if (node_ids.empty()) return local;
    // A sampled neighbour is at a random place in node_ids, a cache miss; an owned one
    // (most of them) needs no look-up. Entry 0, always cached, stands in for the read so
    // that the choice is a select rather than a branch owned and halo neighbours would
    // mispredict.
    const bool owned = local < run_rows;
    const std::int64_t looked = node_ids[owned ? 0 : static_cast<std::size_t>(local)];
    return owned ? run_base + local : looked;
  }

  /// Throws ShapeError naming `subject` when edge_ids and indices differ in length, when
  /// indptr does not end at num_edges(), or when node_ids is neither empty nor covers every
  /// row. O(1).
  void check_shape(const std::string& subject = "local graph view") const {
    if (edge_ids.size() != indices.size())
      throw ShapeError(subject + " edge_ids", "length " + std::to_string(edge_ids.size()) +
                                                  "; expected " + std::to_string(indices.size()) +
                                                  " like indices");
    if (!indptr.empty() && (indptr.front() != 0 || indptr.back() != num_edges()))
      throw ShapeError(subject + " indptr", "runs from " + std::to_string(indptr.front()) + " to " +
                                                std::to_string(indptr.back()) + "; expected 0 to " +
                                                std::to_string(num_edges()));
    if (run_rows < 0 || run_rows > static_cast<std::int64_t>(node_ids.size()))
      throw ShapeError(subject + " run_rows", std::to_string(run_rows) + "; expected 0 to " +
                                                  std::to_string(node_ids.size()) +
                                                  " (node_ids' leading run)");
    if (!node_ids.empty() && static_cast<std::int64_t>(node_ids.size()) < num_rows())
      throw ShapeError(subject + " node_ids",
                       "length " + std::to_string(node_ids.size()) +
                           "; expected 0 (identity) or >= " + std::to_string(num_rows()) + " rows");
  }
};

/// How many leading entries of `ids` count up by one from ids[0] (0 for none): the local
/// nodes a view maps by offset (LocalGraphView::run_rows). O(run).
inline std::int64_t identity_run(std::span<const std::int64_t> ids) noexcept {
  std::size_t i = 0;
  while (i < ids.size() && ids[i] == ids[0] + static_cast<std::int64_t>(i)) ++i;
  return static_cast<std::int64_t>(i);
}

/// A view of `csr` whose local IDs map to global IDs through `node_ids` (empty = identity,
/// else one entry per column). Throws ShapeError when node_ids has another length.
inline LocalGraphView make_view(const Csr& csr, std::span<const std::int64_t> node_ids = {},
                                EdgeDir dir = EdgeDir::in) {
  if (!node_ids.empty() && static_cast<std::int64_t>(node_ids.size()) != csr.num_cols)
    throw ShapeError("node_ids", "length " + std::to_string(node_ids.size()) + "; expected " +
                                     std::to_string(csr.num_cols) + " (one per column)");
  return {csr.indptr.span(), csr.indices.span(), csr.edge_ids.span(), node_ids, dir};
}

/// In-edges of a whole graph (its CSC): sampling picks in-neighbours, as DGL's default.
inline LocalGraphView in_edges_view(const Graph& g) { return make_view(g.in, {}, EdgeDir::in); }

/// Out-edges of a whole graph (its CSR): sampling picks out-neighbours; the seed becomes
/// the source of each sampled edge.
inline LocalGraphView out_edges_view(const Graph& g) { return make_view(g.out, {}, EdgeDir::out); }

}  // namespace distgraph

// Boost.Graph interop: Csr models BGL's graph concepts, and from_boost converts BGL graphs.
#pragma once

// Boost 1.74 headers under C++20 use std::pair before including <utility>; keep it first.
#include <utility>
// Then Boost.Graph, included by this file only (the adapter, not a base of Csr).
#include <boost/graph/graph_traits.hpp>
#include <boost/graph/properties.hpp>
#include <boost/iterator/counting_iterator.hpp>
#include <boost/iterator/iterator_facade.hpp>
#include <boost/property_map/property_map.hpp>
#include <cstdint>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/coo.hpp"
#include "distgraph/graph/csr.hpp"
#include "distgraph/graph/graph.hpp"

namespace distgraph {

/// A BGL edge descriptor of a Csr: the row (source) and the entry's position in
/// `indices`/`edge_ids`, so `edge_ids[pos]` is the edge's ID.
struct CsrEdge {
  std::int64_t src = 0;
  std::int64_t pos = 0;
  friend bool operator==(const CsrEdge&, const CsrEdge&) = default;
};

/// Iterates the out-edges of one row: positions [indptr[u], indptr[u + 1]).
class CsrOutEdgeIterator
    : public boost::iterator_facade<CsrOutEdgeIterator, CsrEdge, boost::random_access_traversal_tag,
                                    CsrEdge> {
 public:
  CsrOutEdgeIterator() = default;
  CsrOutEdgeIterator(std::int64_t src, std::int64_t pos) : src_(src), pos_(pos) {}

 private:
  friend class boost::iterator_core_access;
  CsrEdge dereference() const { return {src_, pos_}; }
  bool equal(const CsrOutEdgeIterator& o) const { return pos_ == o.pos_; }
  void increment() { ++pos_; }
  void decrement() { --pos_; }
  void advance(std::ptrdiff_t k) { pos_ += k; }
  std::ptrdiff_t distance_to(const CsrOutEdgeIterator& o) const { return o.pos_ - pos_; }

  std::int64_t src_ = 0, pos_ = 0;
};

/// Iterates every edge of a Csr in row order, tracking the row of the current position.
class CsrEdgeIterator : public boost::iterator_facade<CsrEdgeIterator, CsrEdge,
                                                      boost::forward_traversal_tag, CsrEdge> {
 public:
  CsrEdgeIterator() = default;
  CsrEdgeIterator(const Csr* g, std::int64_t pos) : g_(g), pos_(pos) { skip_empty_rows(); }

 private:
  friend class boost::iterator_core_access;
  CsrEdge dereference() const { return {row_, pos_}; }
  bool equal(const CsrEdgeIterator& o) const { return pos_ == o.pos_; }
  void increment() {
    ++pos_;
    skip_empty_rows();
  }
  void skip_empty_rows() {
    if (g_ == nullptr) return;
    while (row_ < g_->num_rows && g_->indptr[static_cast<std::size_t>(row_) + 1] <= pos_) ++row_;
  }

  const Csr* g_ = nullptr;
  std::int64_t row_ = 0, pos_ = 0;
};

/// BGL's traversal tags this adapter models.
struct CsrTraversalCategory : boost::incidence_graph_tag,
                              boost::adjacency_graph_tag,
                              boost::vertex_list_graph_tag,
                              boost::edge_list_graph_tag {};

}  // namespace distgraph

namespace boost {

/// distgraph::Csr as a directed BGL graph over its rows (out-edges = row entries). Models
/// IncidenceGraph, AdjacencyGraph, VertexListGraph and EdgeListGraph; needs
/// num_rows == num_cols for algorithms that follow edges.
template <>
struct graph_traits<distgraph::Csr> {
  using vertex_descriptor = std::int64_t;
  using edge_descriptor = distgraph::CsrEdge;
  using directed_category = directed_tag;
  using edge_parallel_category = allow_parallel_edge_tag;
  using traversal_category = distgraph::CsrTraversalCategory;
  using out_edge_iterator = distgraph::CsrOutEdgeIterator;
  using adjacency_iterator = const std::int64_t*;
  using vertex_iterator = counting_iterator<std::int64_t>;
  using edge_iterator = distgraph::CsrEdgeIterator;
  using in_edge_iterator = void;
  using vertices_size_type = std::int64_t;
  using edges_size_type = std::int64_t;
  using degree_size_type = std::int64_t;
  static vertex_descriptor null_vertex() { return -1; }
};

template <>
struct property_map<distgraph::Csr, vertex_index_t> {
  using type = typed_identity_property_map<std::int64_t>;
  using const_type = type;
};

}  // namespace boost

namespace distgraph {

// BGL's free functions, found by argument-dependent lookup on Csr.

inline std::pair<CsrOutEdgeIterator, CsrOutEdgeIterator> out_edges(std::int64_t u, const Csr& g) {
  const auto k = static_cast<std::size_t>(u);
  return {CsrOutEdgeIterator(u, g.indptr[k]), CsrOutEdgeIterator(u, g.indptr[k + 1])};
}
inline std::int64_t out_degree(std::int64_t u, const Csr& g) { return g.degree(u); }
inline std::int64_t source(const CsrEdge& e, const Csr&) { return e.src; }
inline std::int64_t target(const CsrEdge& e, const Csr& g) {
  return g.indices[static_cast<std::size_t>(e.pos)];
}
inline std::pair<const std::int64_t*, const std::int64_t*> adjacent_vertices(std::int64_t u,
                                                                             const Csr& g) {
  const auto nb = g.neighbors(u);
  return {nb.data(), nb.data() + nb.size()};
}
inline std::pair<boost::counting_iterator<std::int64_t>, boost::counting_iterator<std::int64_t>>
vertices(const Csr& g) {
  return {boost::counting_iterator<std::int64_t>(0),
          boost::counting_iterator<std::int64_t>(g.num_rows)};
}
inline std::int64_t num_vertices(const Csr& g) { return g.num_rows; }
inline std::pair<CsrEdgeIterator, CsrEdgeIterator> edges(const Csr& g) {
  return {CsrEdgeIterator(&g, 0), CsrEdgeIterator(&g, g.num_edges())};
}
inline std::int64_t num_edges(const Csr& g) { return g.num_edges(); }
/// Vertex index map: a vertex is its own index, so default colour and distance maps work.
inline boost::typed_identity_property_map<std::int64_t> get(boost::vertex_index_t, const Csr&) {
  return {};
}
inline std::int64_t get(boost::vertex_index_t, const Csr&, std::int64_t v) { return v; }
/// The distgraph edge ID of a BGL edge descriptor.
inline std::int64_t edge_id(const CsrEdge& e, const Csr& g) {
  return g.edge_ids[static_cast<std::size_t>(e.pos)];
}

/// Converts any BGL VertexListGraph + EdgeListGraph with a vertex_index property (e.g.
/// boost::adjacency_list<vecS, vecS, ...>) to a Graph. Node IDs are vertex indices. Edge
/// k of `edges(g)` becomes COO entry k; an undirected graph yields both directions, edge
/// k as entries 2k (source, target) and 2k + 1 (target, source), like DGL's from_networkx.
/// Edge IDs then follow build_graph's rule under `opts`. Throws what build_graph throws.
template <class BGLGraph>
Graph from_boost(const BGLGraph& g, BuildOptions opts = {}) {
  const auto index = get(boost::vertex_index, g);
  const bool undirected = boost::is_undirected(g);
  std::vector<std::int64_t> src, dst;
  const auto m = static_cast<std::size_t>(num_edges(g));
  src.reserve(undirected ? 2 * m : m);
  dst.reserve(undirected ? 2 * m : m);
  auto [it, end] = edges(g);
  for (; it != end; ++it) {
    const auto u = static_cast<std::int64_t>(get(index, source(*it, g)));
    const auto v = static_cast<std::int64_t>(get(index, target(*it, g)));
    src.push_back(u);
    dst.push_back(v);
    if (undirected) {
      src.push_back(v);
      dst.push_back(u);
    }
  }
  Coo coo{static_cast<std::int64_t>(num_vertices(g)), Buffer<std::int64_t>(std::move(src)),
          Buffer<std::int64_t>(std::move(dst))};
  return build_graph(coo, opts);
}

}  // namespace distgraph

// The PartitionBook concept: maps global node/edge IDs to (partition, local ID) and back.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "distgraph/core/ids.hpp"

namespace distgraph {

/// Opt-in tag: a partition book declares `using policy_category = partition_book_tag;`.
struct partition_book_tag {};

/// True when B names partition_book_tag as its policy_category (the nominal opt-in).
template <class B>
concept TaggedPartitionBook = std::same_as<typename B::policy_category, partition_book_tag>;

/// A partition book: which partition owns each global node and edge ID, and the local
/// ID of each within its owner. Global IDs are homogeneous int64 over all types; a local
/// ID is the index of an ID among the IDs its partition owns, in global-ID order. Node
/// type t (and likewise edge type) also numbers its own IDs: the per-type ID of a node
/// is its rank among the nodes of type t in global-ID order (DGL's `map_to_per_ntype`).
///
/// Every conversion is batch-shaped: it reads a span of IDs and writes a span of the
/// same length, validates the whole batch first and throws IdOutOfRange (subject
/// "node id", "edge id", ...) naming the first bad value, or ShapeError when an output
/// span has the wrong length, before writing anything. Const calls are thread-safe.
/// Copies are cheap (they share the tables).
template <class B>
concept PartitionBook = TaggedPartitionBook<B> && std::copy_constructible<B> &&
    requires(const B& b, PartId p, NodeType nt, EdgeType et, std::span<const std::int64_t> ids,
             std::span<std::int32_t> parts_out, std::span<std::int32_t> types_out,
             std::span<std::int64_t> ids_out) {
  // Sizes.
  { b.num_partitions() } -> std::same_as<std::int32_t>;
  { b.num_nodes() } -> std::same_as<std::int64_t>;
  { b.num_edges() } -> std::same_as<std::int64_t>;
  { b.num_nodes(nt) } -> std::same_as<std::int64_t>;
  { b.num_edges(et) } -> std::same_as<std::int64_t>;
  { b.num_node_types() } -> std::same_as<std::int32_t>;
  { b.num_edge_types() } -> std::same_as<std::int32_t>;
  { b.node_type_names() } -> std::same_as<const std::vector<std::string>&>;
  { b.edge_type_names() } -> std::same_as<const std::vector<std::string>&>;
  // Ownership.
  { b.num_owned_nodes(p) } -> std::same_as<std::int64_t>;
  { b.num_owned_edges(p) } -> std::same_as<std::int64_t>;
  { b.num_owned_nodes(p, nt) } -> std::same_as<std::int64_t>;
  { b.num_owned_edges(p, et) } -> std::same_as<std::int64_t>;
  { b.owned_nodes(p) } -> std::same_as<std::vector<std::int64_t>>;
  { b.owned_edges(p) } -> std::same_as<std::vector<std::int64_t>>;
  { b.owned_nodes(p, nt) } -> std::same_as<std::vector<std::int64_t>>;
  { b.owned_edges(p, et) } -> std::same_as<std::vector<std::int64_t>>;
  // Batch conversions: global -> partition, global <-> local, global <-> per-type.
  b.node_partition(ids, parts_out);
  b.edge_partition(ids, parts_out);
  b.node_to_local(ids, ids_out);
  b.edge_to_local(ids, ids_out);
  b.node_to_global(p, ids, ids_out);
  b.edge_to_global(p, ids, ids_out);
  b.node_to_per_type(ids, types_out, ids_out);
  b.edge_to_per_type(ids, types_out, ids_out);
  b.per_type_to_node(nt, ids, ids_out);
  b.per_type_to_edge(et, ids, ids_out);
};

}  // namespace distgraph

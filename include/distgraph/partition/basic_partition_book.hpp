// BasicPartitionBook: one partition entry per node and edge, for graphs not relabeled.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/ids.hpp"
#include "distgraph/partition/concepts.hpp"
#include "distgraph/partition/detail/entry_table.hpp"

namespace distgraph {

/// Optional type information for a BasicPartitionBook. Leave a kind's names and array
/// empty for one type ("_N" / "_E"); otherwise give the names and one type index per ID.
struct BasicBookTypes {
  std::vector<std::string> ntypes = {};
  Buffer<std::int32_t> node_types = {};  ///< empty, or node_types[v] indexes ntypes
  std::vector<std::string> etypes = {};
  Buffer<std::int32_t> edge_types = {};  ///< empty, or edge_types[e] indexes etypes
};

/// A partition book with one entry per node and edge (DGL's BasicPartitionBook, read from
/// node_map.npy / edge_map.npy when IDs were not relabeled). Partition p owns any set of
/// IDs; its local IDs number them in ascending global order. Lookups are O(1) array
/// reads; memory is about 20 bytes per ID (36 with per-ID types) beyond the input arrays,
/// which are shared, not copied, when int32. Immutable: const calls are thread-safe, and
/// copies share everything.
class BasicPartitionBook {
 public:
  using policy_category = partition_book_tag;

  /// `node_part[v]` / `edge_part[e]` is the partition of node v / edge e, in
  /// [0, num_parts); int64 arrays (NumPy's default) are narrowed once. Throws
  /// InvalidArgument for num_parts < 1 or inconsistent type arguments, ShapeError for a
  /// type array of the wrong length, and IdOutOfRange naming "node_part[v]",
  /// "edge_part[e]", "node_type[v]" or "edge_type[e]" for an entry out of range.
  template <class I>
  requires std::is_same_v<I, std::int32_t> || std::is_same_v<I, std::int64_t> BasicPartitionBook(
      std::int32_t num_parts, Buffer<I> node_part, Buffer<I> edge_part, BasicBookTypes types = {})
      : state_(std::make_shared<const State>(
            State{detail::EntryTable("node", num_parts, std::move(node_part),
                                     std::move(types.ntypes), std::move(types.node_types)),
                  detail::EntryTable("edge", num_parts, std::move(edge_part),
                                     std::move(types.etypes), std::move(types.edge_types))})) {}

  std::int32_t num_partitions() const noexcept { return nodes().num_parts(); }
  std::int64_t num_nodes() const noexcept { return nodes().total(); }
  std::int64_t num_edges() const noexcept { return edges().total(); }
  /// Nodes of type `t`. Throws IdOutOfRange for a bad type.
  std::int64_t num_nodes(NodeType t) const { return nodes().type_total(t.value); }
  /// Edges of type `t`. Throws IdOutOfRange for a bad type.
  std::int64_t num_edges(EdgeType t) const { return edges().type_total(t.value); }
  std::int32_t num_node_types() const noexcept { return nodes().num_types(); }
  std::int32_t num_edge_types() const noexcept { return edges().num_types(); }
  /// Type names, indexed by NodeType / EdgeType value.
  const std::vector<std::string>& node_type_names() const noexcept { return nodes().names(); }
  const std::vector<std::string>& edge_type_names() const noexcept { return edges().names(); }
  /// The per-node partition array (shared with the caller's buffer when it was int32).
  const Buffer<std::int32_t>& node_part() const noexcept { return nodes().part(); }
  const Buffer<std::int32_t>& edge_part() const noexcept { return edges().part(); }

  /// Throws IdOutOfRange for a bad partition (or type).
  std::int64_t num_owned_nodes(PartId p) const { return nodes().count(p); }
  std::int64_t num_owned_edges(PartId p) const { return edges().count(p); }
  std::int64_t num_owned_nodes(PartId p, NodeType t) const { return nodes().count(p, t.value); }
  std::int64_t num_owned_edges(PartId p, EdgeType t) const { return edges().count(p, t.value); }

  /// Global IDs partition `p` owns, ascending: a view valid while any copy of this book
  /// lives. Throws IdOutOfRange for a bad partition.
  std::span<const std::int64_t> owned_nodes_view(PartId p) const { return nodes().owned(p); }
  std::span<const std::int64_t> owned_edges_view(PartId p) const { return edges().owned(p); }
  /// Global IDs partition `p` owns, ascending, as a fresh vector.
  std::vector<std::int64_t> owned_nodes(PartId p) const { return to_vector(nodes().owned(p)); }
  std::vector<std::int64_t> owned_edges(PartId p) const { return to_vector(edges().owned(p)); }
  /// Global IDs of type `t` partition `p` owns, ascending. O(num_owned_nodes(p)).
  std::vector<std::int64_t> owned_nodes(PartId p, NodeType t) const {
    return nodes().owned(p, t.value);
  }
  std::vector<std::int64_t> owned_edges(PartId p, EdgeType t) const {
    return edges().owned(p, t.value);
  }

  /// parts_out[i] = partition owning node global_ids[i]. Throws IdOutOfRange ("node id")
  /// or ShapeError before writing anything.
  void node_partition(std::span<const std::int64_t> global_ids,
                      std::span<std::int32_t> parts_out) const {
    nodes().partition(global_ids, parts_out);
  }
  void edge_partition(std::span<const std::int64_t> global_ids,
                      std::span<std::int32_t> parts_out) const {
    edges().partition(global_ids, parts_out);
  }
  /// local_out[i] = rank of global_ids[i] among the nodes its owner owns.
  void node_to_local(std::span<const std::int64_t> global_ids,
                     std::span<std::int64_t> local_out) const {
    nodes().to_local(global_ids, local_out);
  }
  void edge_to_local(std::span<const std::int64_t> global_ids,
                     std::span<std::int64_t> local_out) const {
    edges().to_local(global_ids, local_out);
  }
  /// global_out[i] = global ID of partition `p`'s local node local_ids[i]. Throws
  /// IdOutOfRange for a bad partition or a local ID outside [0, num_owned_nodes(p)).
  void node_to_global(PartId p, std::span<const std::int64_t> local_ids,
                      std::span<std::int64_t> global_out) const {
    nodes().to_global(p, local_ids, global_out);
  }
  void edge_to_global(PartId p, std::span<const std::int64_t> local_ids,
                      std::span<std::int64_t> global_out) const {
    edges().to_global(p, local_ids, global_out);
  }
  /// types_out[i] and per_type_out[i] = type of node global_ids[i] and its rank among
  /// the nodes of that type.
  void node_to_per_type(std::span<const std::int64_t> global_ids, std::span<std::int32_t> types_out,
                        std::span<std::int64_t> per_type_out) const {
    nodes().to_per_type(global_ids, types_out, per_type_out);
  }
  void edge_to_per_type(std::span<const std::int64_t> global_ids, std::span<std::int32_t> types_out,
                        std::span<std::int64_t> per_type_out) const {
    edges().to_per_type(global_ids, types_out, per_type_out);
  }
  /// global_out[i] = global ID of the per_type_ids[i]-th node of type `t`. Throws
  /// IdOutOfRange for a bad type or per-type ID.
  void per_type_to_node(NodeType t, std::span<const std::int64_t> per_type_ids,
                        std::span<std::int64_t> global_out) const {
    nodes().from_per_type(t.value, per_type_ids, global_out);
  }
  void per_type_to_edge(EdgeType t, std::span<const std::int64_t> per_type_ids,
                        std::span<std::int64_t> global_out) const {
    edges().from_per_type(t.value, per_type_ids, global_out);
  }

 private:
  struct State {
    detail::EntryTable nodes, edges;
  };
  const detail::EntryTable& nodes() const noexcept { return state_->nodes; }
  const detail::EntryTable& edges() const noexcept { return state_->edges; }
  static std::vector<std::int64_t> to_vector(std::span<const std::int64_t> s) {
    return {s.begin(), s.end()};
  }

  std::shared_ptr<const State> state_;
};

static_assert(PartitionBook<BasicPartitionBook>);

}  // namespace distgraph

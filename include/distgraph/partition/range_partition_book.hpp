// RangePartitionBook: after relabeling, each partition owns one contiguous ID range per type.
#pragma once

#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/ids.hpp"
#include "distgraph/partition/concepts.hpp"
#include "distgraph/partition/detail/range_table.hpp"

namespace distgraph {

/// A partition book for relabeled graphs (DGL's RangePartitionBook). Global IDs are laid
/// out partition-major, then by type: partition 0's type-0 nodes, its type-1 nodes, ...,
/// then partition 1's type-0 nodes, and so on; edges likewise. So partition p owns the
/// node range [node_range(p)) and, per type t, the sub-range node_ranges(t)[p]. Memory is
/// O(parts x types); a lookup is a binary search over range ends. Immutable: const calls
/// are thread-safe, and copies share the tables.
class RangePartitionBook {
 public:
  using policy_category = partition_book_tag;
  using Range = std::pair<std::int64_t, std::int64_t>;

  /// Per-type node and edge counts of each partition: `node_counts[p][t]` nodes of type
  /// `ntypes[t]` in partition p, `edge_counts[p][t]` edges of type `etypes[t]`. Throws
  /// InvalidArgument for no partitions, no types, ragged rows, negative counts, or node and
  /// edge tables with different partition counts.
  RangePartitionBook(std::vector<std::string> ntypes,
                     const std::vector<std::vector<std::int64_t>>& node_counts,
                     std::vector<std::string> etypes,
                     const std::vector<std::vector<std::int64_t>>& edge_counts)
      : state_(std::make_shared<const State>(
            State{detail::RangeTable("node", std::move(ntypes), node_counts),
                  detail::RangeTable("edge", std::move(etypes), edge_counts)})) {
    if (node_counts.size() != edge_counts.size())
      throw InvalidArgument("RangePartitionBook: node counts for " +
                            std::to_string(node_counts.size()) + " partitions, edge counts for " +
                            std::to_string(edge_counts.size()) + "; expected the same number");
  }

  /// Homogeneous graph: one node type "_N" and one edge type "_E" (DGL's default names);
  /// partition p owns `node_counts[p]` nodes and `edge_counts[p]` edges.
  RangePartitionBook(const std::vector<std::int64_t>& node_counts,
                     const std::vector<std::int64_t>& edge_counts)
      : RangePartitionBook({"_N"}, column(node_counts), {"_E"}, column(edge_counts)) {}

  /// Builds the book from the ranges a partition config stores (DGL's "node_map":
  /// {"paper": [[start, end], ...]}): `node_ranges[t][p]` is the range of type t in
  /// partition p. Throws PartitionError naming the type and partition when the ranges do
  /// not tile [0, num_nodes) partition-major then by type, as relabeling produces.
  static RangePartitionBook from_ranges(std::vector<std::string> ntypes,
                                        const std::vector<std::vector<Range>>& node_ranges,
                                        std::vector<std::string> etypes,
                                        const std::vector<std::vector<Range>>& edge_ranges) {
    auto nc = counts_from_ranges("node_map", ntypes, node_ranges);
    auto ec = counts_from_ranges("edge_map", etypes, edge_ranges);
    return RangePartitionBook(std::move(ntypes), nc, std::move(etypes), ec);
  }

  /// Number of partitions.
  std::int32_t num_partitions() const noexcept { return nodes().num_parts(); }
  std::int64_t num_nodes() const noexcept { return nodes().total(); }
  std::int64_t num_edges() const noexcept { return edges().total(); }
  /// Nodes of type `t` over all partitions. Throws IdOutOfRange for a bad type.
  std::int64_t num_nodes(NodeType t) const { return nodes().type_total(t.value); }
  /// Edges of type `t` over all partitions. Throws IdOutOfRange for a bad type.
  std::int64_t num_edges(EdgeType t) const { return edges().type_total(t.value); }
  std::int32_t num_node_types() const noexcept { return nodes().num_types(); }
  std::int32_t num_edge_types() const noexcept { return edges().num_types(); }
  /// Type names, indexed by NodeType / EdgeType value.
  const std::vector<std::string>& node_type_names() const noexcept { return nodes().names(); }
  const std::vector<std::string>& edge_type_names() const noexcept { return edges().names(); }

  /// [start, end) of the nodes partition `p` owns (all types). Throws IdOutOfRange.
  Range node_range(PartId p) const { return {nodes().part_start(p), nodes().part_end(p)}; }
  /// [start, end) of the edges partition `p` owns (all types). Throws IdOutOfRange.
  Range edge_range(PartId p) const { return {edges().part_start(p), edges().part_end(p)}; }
  /// One [start, end) per partition for node type `t`: the config's "node_map" entry.
  std::vector<Range> node_ranges(NodeType t) const { return nodes().ranges(t.value); }
  /// One [start, end) per partition for edge type `t`: the config's "edge_map" entry.
  std::vector<Range> edge_ranges(EdgeType t) const { return edges().ranges(t.value); }

  /// Throws IdOutOfRange for a bad partition (or type).
  std::int64_t num_owned_nodes(PartId p) const {
    return nodes().part_end(p) - nodes().part_start(p);
  }
  std::int64_t num_owned_edges(PartId p) const {
    return edges().part_end(p) - edges().part_start(p);
  }
  std::int64_t num_owned_nodes(PartId p, NodeType t) const { return nodes().count(p, t.value); }
  std::int64_t num_owned_edges(PartId p, EdgeType t) const { return edges().count(p, t.value); }

  /// Global IDs partition `p` owns, ascending (a fresh vector; node_range is cheaper).
  std::vector<std::int64_t> owned_nodes(PartId p) const { return iota(node_range(p)); }
  std::vector<std::int64_t> owned_edges(PartId p) const { return iota(edge_range(p)); }
  /// Global IDs of type `t` partition `p` owns, ascending.
  std::vector<std::int64_t> owned_nodes(PartId p, NodeType t) const {
    const std::int64_t s = nodes().start(p, t.value);
    return iota({s, s + nodes().count(p, t.value)});
  }
  std::vector<std::int64_t> owned_edges(PartId p, EdgeType t) const {
    const std::int64_t s = edges().start(p, t.value);
    return iota({s, s + edges().count(p, t.value)});
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
  /// local_out[i] = global_ids[i] minus the first ID of its owner.
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
  /// the nodes of that type (DGL's map_to_per_ntype).
  void node_to_per_type(std::span<const std::int64_t> global_ids, std::span<std::int32_t> types_out,
                        std::span<std::int64_t> per_type_out) const {
    nodes().to_per_type(global_ids, types_out, per_type_out);
  }
  void edge_to_per_type(std::span<const std::int64_t> global_ids, std::span<std::int32_t> types_out,
                        std::span<std::int64_t> per_type_out) const {
    edges().to_per_type(global_ids, types_out, per_type_out);
  }
  /// global_out[i] = global ID of the per_type_ids[i]-th node of type `t` (DGL's
  /// map_to_homo_nid). Throws IdOutOfRange for a bad type or per-type ID.
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
    detail::RangeTable nodes, edges;
  };
  const detail::RangeTable& nodes() const noexcept { return state_->nodes; }
  const detail::RangeTable& edges() const noexcept { return state_->edges; }

  static std::vector<std::vector<std::int64_t>> column(const std::vector<std::int64_t>& counts) {
    std::vector<std::vector<std::int64_t>> out;
    out.reserve(counts.size());
    for (const std::int64_t c : counts) out.push_back({c});
    return out;
  }
  static std::vector<std::int64_t> iota(Range r) {
    std::vector<std::int64_t> out(static_cast<std::size_t>(r.second - r.first));
    std::iota(out.begin(), out.end(), r.first);
    return out;
  }
  // Checks that ranges[t][p] tile [0, N) in (p, t) order and returns counts[p][t].
  static std::vector<std::vector<std::int64_t>> counts_from_ranges(
      const char* what, const std::vector<std::string>& types,
      const std::vector<std::vector<Range>>& ranges) {
    if (ranges.size() != types.size())
      throw PartitionError(std::string(what) + ": ranges for " + std::to_string(ranges.size()) +
                           " types; expected " + std::to_string(types.size()));
    if (ranges.empty()) return {};
    const std::size_t P = ranges[0].size();
    for (std::size_t t = 0; t < types.size(); ++t)
      if (ranges[t].size() != P)
        throw PartitionError(std::string(what) + "['" + types[t] +
                             "']: " + std::to_string(ranges[t].size()) + " ranges; expected " +
                             std::to_string(P) + ", one per partition");
    std::vector<std::vector<std::int64_t>> counts(P, std::vector<std::int64_t>(types.size()));
    std::int64_t next = 0;
    for (std::size_t p = 0; p < P; ++p)
      for (std::size_t t = 0; t < types.size(); ++t) {
        const auto [s, e] = ranges[t][p];
        if (s != next || e < s)
          throw PartitionError(std::string(what) + "['" + types[t] + "'][" + std::to_string(p) +
                               "]: range [" + std::to_string(s) + ", " + std::to_string(e) +
                               "); expected a range starting at " + std::to_string(next) +
                               " (ranges tile the IDs partition-major, then by type)");
        counts[p][t] = e - s;
        next = e;
      }
    return counts;
  }

  std::shared_ptr<const State> state_;
};

static_assert(PartitionBook<RangePartitionBook>);

}  // namespace distgraph

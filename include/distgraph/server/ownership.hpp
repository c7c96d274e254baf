// Maps request row IDs (global) to the local rows a server owns, validating ownership.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/ids.hpp"
#include "distgraph/partition/concepts.hpp"
#include "distgraph/partition/typed_data.hpp"
#include "distgraph/server/protocol.hpp"

namespace distgraph::detail {

/// The owned rows one tensor holds: every owned row of its kind, or, for typed data
/// ("<type>/<name>", typed_data.hpp), the owned rows of one type. Those are consecutive
/// among the partition's owned rows (see RowSpaces), starting at `start`.
struct RowSpace {
  RowKind kind = RowKind::node;
  std::int32_t type = -1;   ///< -1: every type
  std::int64_t start = 0;   ///< the space's first row among the partition's owned rows
  std::int64_t rows = 0;    ///< owned rows in the space
  std::int64_t global = 0;  ///< rows over all partitions (what a created tensor must have)
};

/// The row spaces of one partition: where each node and edge type's owned rows start.
/// Local rows are ranks in global-ID order, so a type's rows are consecutive when no other
/// type's ID falls between its first and last owned ID: true of relabeled partitions
/// (partition-major, then type) and of unrelabeled ones from partition_graph (input IDs
/// are type-major). A type for which it fails gets no typed tensors (InvalidArgument).
/// Built once per server or client, O(owned IDs); copies are cheap enough (per-type arrays).
class RowSpaces {
 public:
  RowSpaces() = default;
  template <PartitionBook B>
  RowSpaces(const B& book, std::int32_t part)
      : node_names_(book.node_type_names()), edge_names_(book.edge_type_names()) {
    const PartId p{part};
    owned_[0] = book.num_owned_nodes(p);
    owned_[1] = book.num_owned_edges(p);
    total_[0] = book.num_nodes();
    total_[1] = book.num_edges();
    fill(book, p, node_names_.size(), starts_[0], counts_[0], totals_[0], true);
    fill(book, p, edge_names_.size(), starts_[1], counts_[1], totals_[1], false);
  }

  /// The space of tensor `name` (typed_data_type decides). Throws InvalidArgument when its
  /// type's owned rows are not consecutive in this partition.
  RowSpace of(std::string_view name, RowKind kind) const {
    const int k = kind == RowKind::node ? 0 : 1;
    const std::int32_t t = typed_data_type(name, k == 0 ? node_names_ : edge_names_);
    if (t < 0) return {kind, -1, 0, owned_[k], total_[k]};
    const auto i = static_cast<std::size_t>(t);
    if (starts_[k][i] < 0)
      throw InvalidArgument("tensor '" + std::string(name) + "': this partition's " +
                            (k == 0 ? "nodes" : "edges") + " of type '" +
                            (k == 0 ? node_names_ : edge_names_)[i] +
                            "' are not consecutive among its owned IDs; typed data needs a "
                            "partition whose IDs are grouped by type");
    return {kind, t, starts_[k][i], counts_[k][i], totals_[k][i]};
  }

 private:
  template <PartitionBook B>
  static void fill(const B& book, PartId p, std::size_t types, std::vector<std::int64_t>& starts,
                   std::vector<std::int64_t>& counts, std::vector<std::int64_t>& totals,
                   bool nodes) {
    for (std::size_t t = 0; t < types; ++t) {
      const auto ti = static_cast<std::int32_t>(t);
      const auto ids =
          nodes ? book.owned_nodes(p, NodeType(ti)) : book.owned_edges(p, EdgeType(ti));
      totals.push_back(nodes ? book.num_nodes(NodeType(ti)) : book.num_edges(EdgeType(ti)));
      counts.push_back(static_cast<std::int64_t>(ids.size()));
      if (ids.empty()) {
        starts.push_back(0);
        continue;
      }
      const std::int64_t ends[2] = {ids.front(), ids.back()};
      std::int64_t local[2];
      if (nodes)
        book.node_to_local(ends, local);
      else
        book.edge_to_local(ends, local);
      // Ranks in global order: first and last count - 1 apart means nothing in between.
      starts.push_back(local[1] - local[0] + 1 == static_cast<std::int64_t>(ids.size()) ? local[0]
                                                                                          : -1);
    }
  }

  std::vector<std::string> node_names_, edge_names_;
  std::vector<std::int64_t> starts_[2], counts_[2], totals_[2];
  std::int64_t owned_[2] = {0, 0}, total_[2] = {0, 0};
};

/// Rows of `kind` that partition `part` owns under `book`.
template <PartitionBook B>
std::int64_t owned_rows(const B& book, std::int32_t part, RowKind kind) {
  return kind == RowKind::node ? book.num_owned_nodes(PartId{part})
                               : book.num_owned_edges(PartId{part});
}

/// Converts global IDs to local rows of partition `part`. Throws IdOutOfRange for an ID
/// outside the graph or owned by another partition (subject names which).
template <PartitionBook B>
void global_to_owned(const B& book, std::int32_t part, RowKind kind,
                     std::span<const std::int64_t> global_ids, std::span<std::int64_t> local_out) {
  std::vector<std::int32_t> owner(global_ids.size());
  if (kind == RowKind::node)
    book.node_partition(global_ids, owner);
  else
    book.edge_partition(global_ids, owner);
  for (std::size_t i = 0; i < owner.size(); ++i)
    if (owner[i] != part)
      throw IdOutOfRange(std::string(kind == RowKind::node ? "node" : "edge") +
                             " id owned by partition " + std::to_string(owner[i]) +
                             ", not by this server's partition " + std::to_string(part),
                         global_ids[i], 0, 0);
  if (kind == RowKind::node)
    book.node_to_local(global_ids, local_out);
  else
    book.edge_to_local(global_ids, local_out);
}

/// global_to_owned into the rows of `space`: typed spaces subtract their start and refuse
/// an ID of another type (IdOutOfRange naming the type's space).
template <PartitionBook B>
void global_to_owned(const B& book, std::int32_t part, const RowSpace& space,
                     std::span<const std::int64_t> global_ids, std::span<std::int64_t> local_out) {
  global_to_owned(book, part, space.kind, global_ids, local_out);
  if (space.type < 0) return;
  for (std::size_t i = 0; i < local_out.size(); ++i) {
    local_out[i] -= space.start;
    if (local_out[i] < 0 || local_out[i] >= space.rows)
      throw IdOutOfRange(std::string(space.kind == RowKind::node ? "node" : "edge") +
                             " id of another type than the tensor's (type index " +
                             std::to_string(space.type) + ")",
                         global_ids[i], 0, 0);
  }
}

/// Global IDs of rows [begin, end) of `space` in partition `part`.
template <PartitionBook B>
std::vector<std::int64_t> owned_to_global(const B& book, std::int32_t part, const RowSpace& space,
                                          std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> local(static_cast<std::size_t>(end - begin));
  for (std::size_t i = 0; i < local.size(); ++i)
    local[i] = space.start + begin + static_cast<std::int64_t>(i);
  std::vector<std::int64_t> global(local.size());
  if (space.kind == RowKind::node)
    book.node_to_global(PartId{part}, local, global);
  else
    book.edge_to_global(PartId{part}, local, global);
  return global;
}

}  // namespace distgraph::detail

// Maps request row IDs (global) to the local rows a server owns, validating ownership.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/ids.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/server/protocol.hpp"

namespace distgraph::detail {

/// Rows of `kind` that partition `part` owns under `book`.
inline std::int64_t owned_rows(const AnyPartitionBook& book, std::int32_t part, RowKind kind) {
  return std::visit(
      [&](const auto& b) {
        return kind == RowKind::node ? b.num_owned_nodes(PartId{part})
                                     : b.num_owned_edges(PartId{part});
      },
      book);
}

/// Converts global IDs to local rows of partition `part`. Throws IdOutOfRange for an ID
/// outside the graph or owned by another partition (subject names which).
inline void global_to_owned(const AnyPartitionBook& book, std::int32_t part, RowKind kind,
                            std::span<const std::int64_t> global_ids,
                            std::span<std::int64_t> local_out) {
  std::vector<std::int32_t> owner(global_ids.size());
  std::visit(
      [&](const auto& b) {
        if (kind == RowKind::node) {
          b.node_partition(global_ids, owner);
        } else {
          b.edge_partition(global_ids, owner);
        }
        for (std::size_t i = 0; i < owner.size(); ++i)
          if (owner[i] != part)
            throw IdOutOfRange(std::string(kind == RowKind::node ? "node" : "edge") +
                                   " id owned by partition " + std::to_string(owner[i]) +
                                   ", not by this server's partition " + std::to_string(part),
                               global_ids[i], 0, 0);
        if (kind == RowKind::node) {
          b.node_to_local(global_ids, local_out);
        } else {
          b.edge_to_local(global_ids, local_out);
        }
      },
      book);
}

/// Global IDs of local rows [begin, end) of partition `part`.
inline std::vector<std::int64_t> owned_to_global(const AnyPartitionBook& book, std::int32_t part,
                                                 RowKind kind, std::int64_t begin,
                                                 std::int64_t end) {
  std::vector<std::int64_t> local(static_cast<std::size_t>(end - begin));
  for (std::size_t i = 0; i < local.size(); ++i) local[i] = begin + static_cast<std::int64_t>(i);
  std::vector<std::int64_t> global(local.size());
  std::visit(
      [&](const auto& b) {
        if (kind == RowKind::node) {
          b.node_to_global(PartId{part}, local, global);
        } else {
          b.edge_to_global(PartId{part}, local, global);
        }
      },
      book);
  return global;
}

}  // namespace distgraph::detail

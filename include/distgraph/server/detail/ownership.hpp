// Maps request row IDs (global) to the local rows a server owns, validating ownership.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/ids.hpp"
#include "distgraph/partition/concepts.hpp"
#include "distgraph/server/protocol.hpp"

namespace distgraph::detail {

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

/// Global IDs of local rows [begin, end) of partition `part`.
template <PartitionBook B>
std::vector<std::int64_t> owned_to_global(const B& book, std::int32_t part, RowKind kind,
                                          std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> local(static_cast<std::size_t>(end - begin));
  for (std::size_t i = 0; i < local.size(); ++i) local[i] = begin + static_cast<std::int64_t>(i);
  std::vector<std::int64_t> global(local.size());
  if (kind == RowKind::node)
    book.node_to_global(PartId{part}, local, global);
  else
    book.edge_to_global(PartId{part}, local, global);
  return global;
}

}  // namespace distgraph::detail

// group_by_owner: a loader's blocks with the sources each machine owns side by side.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "distgraph/sampling/block.hpp"

namespace distgraph::detail {

/// What a loader passes to sample_blocks as `arrange`: each block's sources that are not
/// destinations grouped by the partition that owns them (group_sources), so that a batch's
/// rows from one owner land in runs (KVClient::pull_rows reads and places them per owner).
/// A graph without a partition book, or of one partition, keeps to_block's order. `g` must
/// outlive the callable. The batch still depends only on what NodeDataLoader lists: owners
/// are the same wherever the trainer runs.
template <class Graph>
auto group_by_owner(const Graph& g) {
  return [&g](Block& b) {
    if constexpr (requires(std::span<const std::int64_t> ids, std::span<std::int32_t> out) {
                    g.book().node_partition(ids, out);
                    { g.book().num_partitions() } -> std::convertible_to<std::int32_t>;
                  }) {
      const std::int32_t parts = g.book().num_partitions();
      if (parts < 2) return;
      const auto others =
          std::span<const std::int64_t>(b.src_nodes).subspan(static_cast<std::size_t>(b.num_dst));
      std::vector<std::int32_t> owner(others.size());
      g.book().node_partition(others, owner);
      group_sources(b, owner, parts);
    }
  };
}

}  // namespace distgraph::detail

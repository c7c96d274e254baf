// Frontier: sampled edges in global IDs, the unit a sampler returns and to_block compacts.
#pragma once

#include <cstdint>
#include <vector>

namespace distgraph {

/// Sampled edges as parallel arrays of global IDs: edge i goes from `src[i]` to `dst[i]`
/// and has global edge ID `eid[i]`. sample_neighbors_local groups edges by seed in seed
/// order; frontiers merged from several servers keep their own order. DGL's "frontier"
/// (a graph over all nodes holding only the sampled edges), without the node set.
struct Frontier {
  std::vector<std::int64_t> src, dst, eid;

  std::int64_t num_edges() const noexcept { return static_cast<std::int64_t>(src.size()); }
};

}  // namespace distgraph

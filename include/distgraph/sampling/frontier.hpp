// Frontier: sampled edges in global IDs, the unit a sampler returns and to_block compacts.
#pragma once

#include <cstdint>
#include <vector>

namespace distgraph {

/// Whether a sampling call fills Frontier::eid. An edge ID is a random read per pick of a
/// partition-sized array, and 8 bytes per remote pick on the wire; a model that never reads
/// a block's edge IDs (GraphSAGE, GCN, GAT over node features) does without them.
enum class EdgeIds : std::uint8_t {
  included,  ///< `eid` holds every edge's global ID (DGL's `block.edata[EID]`)
  omitted,   ///< `eid` is empty
};

/// Sampled edges as parallel arrays of global IDs: edge i goes from `src[i]` to `dst[i]`
/// and has global edge ID `eid[i]` (`eid` is empty where the sampling was asked for
/// EdgeIds::omitted). sample_neighbors_local groups edges by seed in seed order; frontiers
/// merged from several servers keep their own order. DGL's "frontier" (a graph over all
/// nodes holding only the sampled edges), without the node set.
struct Frontier {
  std::vector<std::int64_t> src, dst, eid;

  std::int64_t num_edges() const noexcept { return static_cast<std::int64_t>(src.size()); }
};

}  // namespace distgraph

// partition_view: the LocalGraphView of one loaded Partition (its CSC through nid and eid).
#pragma once

#include "distgraph/partition/load_partition.hpp"
#include "distgraph/sampling/local_graph_view.hpp"

namespace distgraph {

/// In-edges of partition `p`: rows are its local nodes (owned first, then halo), sources
/// map to global IDs through `p.nid` and edges through `p.eid`. Every in-edge of an owned
/// node lives in its partition, so sampling an owned seed here is complete. Kept apart
/// from local_graph_view.hpp because the partition loader costs ~3 s of compile time.
inline LocalGraphView partition_view(const Partition& p) {
  return {p.graph.indptr.span(), p.graph.indices.span(), p.eid.span(), p.nid.span(), EdgeDir::in};
}

}  // namespace distgraph

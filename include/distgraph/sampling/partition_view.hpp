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
  LocalGraphView v{p.graph.indptr.span(), p.graph.indices.span(), p.eid.span(), p.nid.span(),
                   EdgeDir::in};
  // Relabeled, the owned nodes' global IDs are one range: map them without reading nid.
  v.run_rows = identity_run(v.node_ids);
  v.run_base = v.run_rows > 0 ? v.node_ids[0] : 0;
  return v;
}

}  // namespace distgraph

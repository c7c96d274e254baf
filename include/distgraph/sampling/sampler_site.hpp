// SamplerSite: what a partition offers a sampler that is rebuilt where the graph lives.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "distgraph/core/buffer.hpp"
#include "distgraph/sampling/local_graph_view.hpp"

namespace distgraph {

/// The place a sampling request runs: a server's partition, or a trainer's co-located one.
/// A DistributedSampler's `at_site` reads what it needs from here; servers and trainers
/// implement it over the same partition, so a sampler built at either site picks the same
/// edges. Called once per request (not per seed), hence a virtual interface.
class SamplerSite {
 public:
  virtual ~SamplerSite() = default;
  /// The partition's in-edges: rows are its local nodes, positions index indices/edge_ids.
  virtual const LocalGraphView& view() const = 0;
  /// The partition this site holds.
  virtual std::int32_t part_id() const = 0;
  /// Float32 edge data `name` (the name given to set_edata / partitioned as edge feature;
  /// one value per edge) laid out by the view's edge positions, 0 for edges the partition
  /// holds but does not own. O(edges) per call: keep the result with cached(). Throws
  /// NotFound for an unknown tensor, DTypeError unless it is one float32 per edge.
  virtual Buffer<float> edge_values_by_position(const std::string& name) = 0;
  /// The edge type (EdgeType index under the partition book) of each of the view's edge
  /// positions; empty when the graph has a single edge type. Lives as long as the site.
  virtual std::span<const std::int32_t> edge_types_by_position() const = 0;
  /// Edge types of the graph (1 for a homogeneous graph).
  virtual std::int32_t num_edge_types() const = 0;
  /// The object cached under `key` at this site, made by `make` on first use (once, even
  /// with concurrent callers). For what a sampler derives from the partition, e.g. a
  /// weighted sampler's checked probabilities. Made again when edge data that `make` read
  /// through edge_values_by_position has been written since, at sites whose storage keeps
  /// write generations (VersionedStorage: every built-in storage), so a sampler never
  /// picks by probabilities older than the last completed push.
  virtual std::shared_ptr<const void> cached(
      const std::string& key, const std::function<std::shared_ptr<const void>()>& make) = 0;
};

}  // namespace distgraph

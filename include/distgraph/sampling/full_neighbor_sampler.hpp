// FullNeighborSampler: every neighbour edge of every seed (DGL's MultiLayerFullNeighborSampler).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "distgraph/sampling/concepts.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/rng.hpp"

namespace distgraph {

/// Takes the whole row of each seed in row order, whatever the fanout: full-neighbour
/// inference, or a reference the random samplers converge to. No randomness; stateless;
/// thread-safe.
class FullNeighborSampler {
 public:
  using policy_category = sampler_tag;
  /// How requests name it (DistributedSampler); it takes no parameters.
  static constexpr std::string_view wire_name = "full";
  static FullNeighborSampler at_site(HeadReader&, SamplerSite&) { return {}; }

  /// Nothing to check: the sampler brings no per-edge data.
  void validate(const LocalGraphView&) const noexcept {}

  /// Appends every edge of each seed in `local_seeds` to `picks`; `fanout` and `key` are
  /// ignored. O(sum of degrees); does not throw except std::bad_alloc.
  void sample(const LocalGraphView& g, std::span<const std::int64_t> local_seeds, std::int64_t,
              const SampleKey&, Picks& picks) const {
    for (const std::int64_t v : local_seeds) picks.take_all(g.row_begin(v), g.degree(v));
  }
};

static_assert(DistributedSampler<FullNeighborSampler>);

}  // namespace distgraph

// UniformReplaceSampler: `fanout` neighbour edges per seed, uniformly with replacement.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "distgraph/sampling/concepts.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/rng.hpp"

namespace distgraph {

/// Uniform neighbour sampling with replacement (DGL's `sample_neighbors(replace=True)`): a
/// seed with at least one edge gets exactly `fanout` independent uniform draws from its
/// row, so an edge may repeat and fanout may exceed the degree; a seed with no edges gets
/// none; fanout -1 takes every edge once, in row order. Stateless; thread-safe.
class UniformReplaceSampler {
 public:
  using policy_category = sampler_tag;
  /// How requests name it (DistributedSampler); it takes no parameters.
  static constexpr std::string_view wire_name = "uniform_replace";
  static UniformReplaceSampler at_site(HeadReader&, SamplerSite&) { return {}; }

  /// Nothing to check: the sampler brings no per-edge data.
  void validate(const LocalGraphView&) const noexcept {}

  /// Appends the picks of each seed in `local_seeds` to `picks` (see Sampler). O(sum of
  /// picks); does not throw except std::bad_alloc.
  void sample(const LocalGraphView& g, std::span<const std::int64_t> local_seeds,
              std::int64_t fanout, const SampleKey& key, Picks& picks) const {
    const std::uint64_t key_hash = hash_key(key);
    for (const std::int64_t v : local_seeds) {
      const std::int64_t begin = g.row_begin(v), degree = g.degree(v);
      if (fanout < 0 || degree == 0) {
        picks.take_all(begin, degree);
        continue;
      }
      picks.counts.push_back(fanout);
      SampleRng rng(key_hash, g.global_node(v));
      for (std::int64_t i = 0; i < fanout; ++i)
        picks.positions.push_back(
            begin + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(degree))));
    }
  }
};

static_assert(DistributedSampler<UniformReplaceSampler>);

}  // namespace distgraph

// UniformSampler: up to `fanout` distinct neighbour edges per seed, uniformly at random.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>

#include "distgraph/sampling/concepts.hpp"
#include "distgraph/sampling/id_hash_map.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/rng.hpp"

namespace distgraph {

namespace detail {

/// Floyd's algorithm (Bentley & Floyd, "A sample of brilliance", CACM 1987): writes a
/// uniformly random k-subset of [0, n) to `out[0..k)` with exactly k draws, 0 < k < n.
/// Membership is a linear scan for small k (the usual fanouts, 5 to 25: cheaper than any
/// table) and `seen` for larger k, so the cost is O(k) draws whatever the degree, where a
/// partial Fisher-Yates would first fill an O(n) array (R-MAT hubs have 10^5+ edges).
inline void floyd_sample(SampleRng& rng, std::int64_t n, std::int64_t k, std::int64_t* out,
                         IdHashMap& seen) {
  constexpr std::int64_t linear_limit = 32;
  if (k <= linear_limit) {
    for (std::int64_t j = n - k, m = 0; j < n; ++j, ++m) {
      const auto t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(j) + 1));
      bool dup = false;
      for (std::int64_t i = 0; i < m; ++i) dup |= out[i] == t;
      out[m] = dup ? j : t;
    }
    return;
  }
  seen.reset(static_cast<std::size_t>(k));
  for (std::int64_t j = n - k, m = 0; j < n; ++j, ++m) {
    const auto t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(j) + 1));
    // insert returns the earlier slot when t is taken; then j, never drawn before (earlier
    // draws were < j), goes in instead.
    out[m] = seen.insert(t, m) == m ? t : j;
    if (out[m] != t) seen.insert(j, m);
  }
}

}  // namespace detail

/// Uniform neighbour sampling without replacement (DGL's `sample_neighbors(replace=False)`):
/// a seed with degree d gets min(fanout, d) distinct edges, each k-subset equally likely;
/// fanout -1 or fanout >= d takes every edge in row order. Picks within a seed come in no
/// particular (but deterministic) order. Stateless: copies are free; thread-safe.
class UniformSampler {
 public:
  using policy_category = sampler_tag;
  /// How requests name it (DistributedSampler); it takes no parameters.
  static constexpr std::string_view wire_name = "uniform";
  static UniformSampler at_site(HeadReader&, SamplerSite&) { return {}; }

  /// Nothing to check: the sampler brings no per-edge data.
  void validate(const LocalGraphView&) const noexcept {}

  /// Appends the picks of each seed in `local_seeds` to `picks` (see Sampler). O(sum of
  /// picks) expected; does not throw except std::bad_alloc.
  void sample(const LocalGraphView& g, std::span<const std::int64_t> local_seeds,
              std::int64_t fanout, const SampleKey& key, Picks& picks) const {
    const std::uint64_t key_hash = hash_key(key);
    detail::IdHashMap seen;
    // No seed yields more than fanout picks: one allocation instead of repeated growth
    // for the usual fanouts (capped so a huge fanout does not reserve for its worst case).
    picks.counts.reserve(picks.counts.size() + local_seeds.size());
    if (fanout >= 0)
      picks.positions.reserve(picks.positions.size() +
                              local_seeds.size() *
                                  static_cast<std::size_t>(std::min<std::int64_t>(fanout, 64)));
    for (std::size_t s = 0; s < local_seeds.size(); ++s) {
      // Seeds are random rows: fetch the offsets of a later seed while this one samples.
      if (s + 8 < local_seeds.size()) __builtin_prefetch(g.indptr.data() + local_seeds[s + 8]);
      const std::int64_t v = local_seeds[s];
      const std::int64_t begin = g.row_begin(v), degree = g.degree(v);
      if (fanout < 0 || fanout >= degree) {
        picks.take_all(begin, degree);
        continue;
      }
      picks.counts.push_back(fanout);
      const std::size_t at = picks.positions.size();
      picks.positions.resize(at + static_cast<std::size_t>(fanout));
      std::int64_t* out = picks.positions.data() + at;
      if (fanout == 0) continue;
      SampleRng rng(key_hash, g.global_node(v));
      detail::floyd_sample(rng, degree, fanout, out, seen);
      for (std::int64_t i = 0; i < fanout; ++i) out[i] += begin;
    }
  }
};

static_assert(DistributedSampler<UniformSampler>);

}  // namespace distgraph

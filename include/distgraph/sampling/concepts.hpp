// The Sampler concept: picks neighbour edges of a batch of seed rows from a local adjacency.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <vector>

#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/rng.hpp"

namespace distgraph {

/// What one Sampler::sample call appends: per seed, how many edges it picked (`counts`),
/// and the picked edges as positions into the view's indices/edge_ids arrays, grouped by
/// seed in seed order (`positions`). Reused across calls to keep its capacity.
struct Picks {
  std::vector<std::int64_t> counts;
  std::vector<std::int64_t> positions;

  void clear() noexcept {
    counts.clear();
    positions.clear();
  }
  /// Appends every edge of the row that starts at position `begin` and has `degree` edges.
  void take_all(std::int64_t begin, std::int64_t degree) {
    counts.push_back(degree);
    for (std::int64_t i = 0; i < degree; ++i) positions.push_back(begin + i);
  }
};

/// Opt-in tag: a sampler declares `using policy_category = sampler_tag;`.
struct sampler_tag {};

/// True when S names sampler_tag as its policy_category (the nominal opt-in).
template <class S>
concept TaggedSampler = requires {
  typename S::policy_category;
}
&&std::same_as<typename S::policy_category, sampler_tag>;

/// A neighbour sampler (docs/concepts/Sampler.md). Semantics every model guarantees:
/// - `s.validate(g)` checks what the sampler itself brings against the view (e.g. an edge
///   probability per position) and throws ShapeError or InvalidArgument; callers run it
///   once per batch, before any sample call. Seeds and fanout are the caller's to check.
/// - `s.sample(g, local_seeds, fanout, key, picks)` appends one count and that many edge
///   positions per seed, in seed order. Seeds must be rows of `g` and fanout >= -1
///   (-1 = all neighbours). It does not throw (except std::bad_alloc).
/// - The picks of seed v depend only on (hash of `key`, global ID of v, the row's
///   contents, the sampler's parameters, fanout): not on the other seeds, the batch's
///   split into calls, the thread, or the process.
/// Const calls are thread-safe; copies are cheap (they share read-only arrays).
template <class S>
concept Sampler = TaggedSampler<S> && std::copy_constructible<S> &&
    requires(const S& s, const LocalGraphView& g, std::span<const std::int64_t> local_seeds,
             std::int64_t fanout, const SampleKey& key, Picks& picks) {
  s.validate(g);
  s.sample(g, local_seeds, fanout, key, picks);
};

}  // namespace distgraph

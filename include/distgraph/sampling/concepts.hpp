// The Sampler concept: picks neighbour edges of a batch of seed rows from a local adjacency.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/rng.hpp"
#include "distgraph/sampling/sampler_site.hpp"
#include "distgraph/transport/head_codec.hpp"

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
concept TaggedSampler = std::same_as<typename S::policy_category, sampler_tag>;

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

/// A Sampler that can run where the graph lives (docs/concepts/Sampler.md): requests name
/// it by `S::wire_name` (a stable string, unique in a sampler set), and the server, or a
/// trainer sampling its co-located partition, rebuilds it with
/// `S::at_site(params, site)` from the parameter block the client's SamplerSpec carries
/// (decoded through `params`, a length-checked HeadReader: malformed parameters throw
/// ProtocolError, which the server answers with bad_request) and from what the partition
/// holds (`site`, e.g. per-edge weights laid out by position).
template <class S>
concept DistributedSampler = Sampler<S> && requires(HeadReader& params, SamplerSite& site) {
  { S::wire_name } -> std::convertible_to<std::string_view>;
  { S::at_site(params, site) } -> std::same_as<S>;
};

}  // namespace distgraph

// PerRelationSampler: up to f_r distinct in-edges of each relation r per seed (typed graphs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/parallel.hpp"
#include "distgraph/graph/csr.hpp"
#include "distgraph/graph/graph.hpp"
#include "distgraph/sampling/concepts.hpp"
#include "distgraph/sampling/id_hash_map.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/rng.hpp"
#include "distgraph/sampling/sampler_spec.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"

namespace distgraph {

namespace detail {

/// Where each relation's edges sit in each row of a typed view: row r's edges of relation
/// t are the positions [starts[r * (R + 1) + t], starts[r * (R + 1) + t + 1]) for R
/// relations. Sampling reads one short run of offsets per seed instead of searching the
/// row's type array (the per-seed cost that made typed sampling 2.6x the homogeneous
/// sampler per edge). `error` names the first fault when the type array does not fit
/// the view (then `starts` is empty).
struct RelationSegments {
  std::vector<std::int64_t> starts;
  std::int32_t relations = 1;
  std::string error;  ///< empty when the rows are grouped by type
};

/// The segments of `g` whose edge at position i has type `types[i]`: checks that `types`
/// has one entry per edge position, every entry is in [0, relations), and every row
/// lists its edges by ascending type (naming the first row and global node that does
/// not). O(edges + rows x relations), once per view.
inline RelationSegments relation_segments(const LocalGraphView& g,
                                          std::span<const std::int32_t> types,
                                          std::int32_t relations) {
  RelationSegments out;
  out.relations = relations;
  if (static_cast<std::int64_t>(types.size()) != g.num_edges()) {
    out.error = "edge types by position: length " + std::to_string(types.size()) +
                "; expected " + std::to_string(g.num_edges()) +
                " (one per edge position of the view)";
    return out;
  }
  const auto width = static_cast<std::size_t>(relations) + 1;
  out.starts.resize(static_cast<std::size_t>(g.num_rows()) * width);
  for (std::int64_t r = 0; r < g.num_rows(); ++r) {
    const std::int64_t b = g.row_begin(r), e = b + g.degree(r);
    std::int64_t* row = out.starts.data() + static_cast<std::size_t>(r) * width;
    std::int32_t next = 0;  // the first relation whose start is not yet written
    for (std::int64_t i = b; i < e; ++i) {
      const std::int32_t t = types[static_cast<std::size_t>(i)];
      if (t < 0 || t >= relations || t < next - 1) {
        out.error = "edge types of row " + std::to_string(r) + " (node " +
                    std::to_string(g.global_node(r)) + "): position " + std::to_string(i) +
                    " has type " + std::to_string(t);
        out.error += t < 0 || t >= relations
                         ? "; expected [0, " + std::to_string(relations) + ")"
                         : " after type " + std::to_string(types[static_cast<std::size_t>(i) - 1]) +
                               "; expected each row's edges grouped by edge type in ascending "
                               "order (group_in_edges_by_type does that for a whole graph)";
        out.starts.clear();
        return out;
      }
      for (; next <= t; ++next) row[next] = i;
    }
    for (; next <= relations; ++next) row[next] = e;
  }
  return out;
}

/// What at_site caches per site: the site's type array and its relation segments.
struct SiteEdgeTypes {
  std::span<const std::int32_t> types;
  RelationSegments segments;
};

}  // namespace detail

/// A typed graph's in-edges (CSC) with every row ordered by (edge type, row position), and
/// the edge type of each position: the input PerRelationSampler needs to sample a whole
/// typed graph standalone. `edge_types` is empty for a graph with one edge type.
struct TypedInEdges {
  Csr in;
  Buffer<std::int32_t> edge_types;

  /// The view to sample (its spans point into `in`: keep this object alive).
  LocalGraphView view() const { return make_view(in); }
};

/// Reorders each CSC row of `g` stably by edge type (an edge's type is the TypeMap range
/// its edge ID falls in), so within a type the row keeps its order (by source). Shares
/// `g.in`'s arrays when `g` has one edge type. O(edges log degree); uses `num_threads`
/// threads (0 = hardware threads); the result does not depend on it.
inline TypedInEdges group_in_edges_by_type(const Graph& g, unsigned num_threads = 0) {
  const Csr& c = g.in;
  if (g.types.num_edge_types() <= 1) return {c, {}};
  const auto m = static_cast<std::size_t>(c.num_edges());
  const std::vector<std::int64_t>& off = g.types.edge_offsets();
  std::vector<std::int64_t> indices(m), edge_ids(m);
  std::vector<std::int32_t> types(m);
  parallel_chunks(
      0, c.num_rows, num_threads,
      [&](unsigned, std::int64_t rb, std::int64_t re) {
        std::vector<std::pair<std::int32_t, std::int64_t>> keyed;  // (type, position)
        for (std::int64_t r = rb; r < re; ++r) {
          const std::int64_t b = c.indptr[static_cast<std::size_t>(r)];
          const std::int64_t e = c.indptr[static_cast<std::size_t>(r) + 1];
          keyed.clear();
          for (std::int64_t i = b; i < e; ++i) {
            const std::int64_t eid = c.edge_ids[static_cast<std::size_t>(i)];
            const auto t = std::upper_bound(off.begin(), off.end(), eid) - off.begin() - 1;
            keyed.emplace_back(static_cast<std::int32_t>(t), i);
          }
          // Sorting (type, position) pairs is the stable sort by type.
          std::sort(keyed.begin(), keyed.end());
          for (std::size_t j = 0; j < keyed.size(); ++j) {
            const auto to = static_cast<std::size_t>(b) + j;
            const auto from = static_cast<std::size_t>(keyed[j].second);
            indices[to] = c.indices[from];
            edge_ids[to] = c.edge_ids[from];
            types[to] = keyed[j].first;
          }
        }
      },
      1 << 12);
  Csr in{c.num_rows, c.num_cols, c.indptr, Buffer<std::int64_t>(std::move(indices)),
         Buffer<std::int64_t>(std::move(edge_ids))};
  return {std::move(in), Buffer<std::int32_t>(std::move(types))};
}

/// Per-relation neighbour sampling of typed graphs (DGL's `sample_neighbors` with a fanout
/// dict): a seed gets, for each relation r, up to `fanouts[r]` distinct in-edges of that
/// relation, uniformly without replacement within the relation; -1 takes all of r, 0 none.
/// The view's rows must list their edges grouped by edge type in ascending order (typed
/// partitions are written so; group_in_edges_by_type makes a whole graph so), and
/// `edge_types[position]` gives each position's type (empty: one relation).
///
/// Each row's relation segments are precomputed once per view (detail::RelationSegments,
/// 8 (R + 1) bytes per row for R relations), so a seed reads one run of R + 1 offsets,
/// skips relations of fanout 0, and draws each other segment as UniformSampler draws a
/// row (Floyd's algorithm), segments in type order from one SampleRng per seed. With one
/// relation of fanout f the picks are exactly UniformSampler's with fanout f.
/// The `fanout` argument of sample() is ignored (the fanouts are the sampler's
/// parameters): pass -1. Copies share the type array and segments; thread-safe.
class PerRelationSampler {
 public:
  using policy_category = sampler_tag;
  /// How requests name it (DistributedSampler). Parameter block: u32 count, then count
  /// i64 fanouts, one per edge type of the partition book, in edge type order.
  static constexpr std::string_view wire_name = "per_relation";

  /// The request form. Throws InvalidArgument for a fanout < -1 or an empty list.
  static SamplerSpec spec(std::span<const std::int64_t> fanout_per_relation) {
    check_fanouts(fanout_per_relation);
    HeadWriter w;
    w.put(static_cast<std::uint32_t>(fanout_per_relation.size()));
    for (const std::int64_t f : fanout_per_relation) w.put(f);
    return SamplerSpec{std::string(wire_name), w.take()};
  }
  static SamplerSpec spec(std::initializer_list<std::int64_t> fanout_per_relation) {
    return spec(
        std::span<const std::int64_t>(fanout_per_relation.begin(), fanout_per_relation.size()));
  }

  /// Rebuilt where the partition lives from the site's edge types (checked once per site,
  /// O(edges), then cached). The sampler views the site's type array: use it while the
  /// site lives, as a request does. Throws ProtocolError when the count differs from the
  /// site's edge type count or the block is short or has trailing bytes, InvalidArgument
  /// for a fanout < -1 or for a partition whose rows are not grouped by type (naming the
  /// first such row).
  static PerRelationSampler at_site(HeadReader& params, SamplerSite& site) {
    const std::int32_t relations = site.num_edge_types();
    const auto count = params.get<std::uint32_t>();
    // Checked before anything is allocated: the count is bounded by the site's types.
    if (count != static_cast<std::uint32_t>(relations))
      throw ProtocolError("per_relation sampler: " + std::to_string(count) +
                          " fanouts; partition " + std::to_string(site.part_id()) + " has " +
                          std::to_string(relations) +
                          " edge types (expected one fanout per edge type, in type order)");
    std::vector<std::int64_t> fanouts(count);
    for (auto& f : fanouts) f = params.get<std::int64_t>();
    params.finish();
    check_fanouts(fanouts);
    auto made = site.cached("per_relation:edge_types", [&] {
      auto st = std::make_shared<detail::SiteEdgeTypes>();
      st->types = site.edge_types_by_position();
      if (relations > 1 || !st->types.empty()) {
        st->segments = detail::relation_segments(site.view(), st->types, relations);
        if (!st->segments.error.empty())
          st->segments.error =
              "partition " + std::to_string(site.part_id()) + ": " + st->segments.error;
      }
      return std::static_pointer_cast<const void>(std::shared_ptr<const detail::SiteEdgeTypes>(st));
    });
    const auto& st = *static_cast<const detail::SiteEdgeTypes*>(made.get());
    if (!st.segments.error.empty()) throw InvalidArgument(st.segments.error);
    std::shared_ptr<const detail::RelationSegments> segments;
    if (!st.types.empty() || relations > 1)  // shares the cache entry's ownership
      segments = std::shared_ptr<const detail::RelationSegments>(made, &st.segments);
    return PerRelationSampler(made, st.types, std::move(segments), std::move(fanouts));
  }

  /// For a view `g` whose rows are grouped by type (e.g. group_in_edges_by_type's):
  /// `edge_type_by_position` holds one type in [0, fanouts.size()) per edge position of
  /// `g` (or is empty when `fanouts` has one entry), `fanouts[r]` is relation r's fanout.
  /// Throws InvalidArgument for an empty or bad fanout list, a type out of range or a row
  /// not grouped by type (naming it), ShapeError for a length other than g.num_edges().
  /// O(edges + rows x relations), once; the sampler is meant for `g` (validate() checks
  /// only the sizes).
  PerRelationSampler(const LocalGraphView& g, Buffer<std::int32_t> edge_type_by_position,
                     std::vector<std::int64_t> fanouts)
      : keep_(edge_type_by_position.owner()),
        types_(edge_type_by_position.span()),
        fanouts_(std::move(fanouts)) {
    check_fanouts(fanouts_);
    if (types_.empty()) {
      if (fanouts_.size() != 1 && g.num_edges() > 0)
        throw InvalidArgument("per_relation sampler: " + std::to_string(fanouts_.size()) +
                              " fanouts but no edge types; expected one fanout for an untyped "
                              "view, or one edge type per position");
      return;
    }
    if (static_cast<std::int64_t>(types_.size()) != g.num_edges())
      throw ShapeError("edge types by position", "length " + std::to_string(types_.size()) +
                                                     "; expected " + std::to_string(g.num_edges()) +
                                                     " (one per edge position of the view)");
    auto segments = std::make_shared<detail::RelationSegments>(
        detail::relation_segments(g, types_, static_cast<std::int32_t>(fanouts_.size())));
    if (!segments->error.empty()) throw InvalidArgument(segments->error);
    segments_ = std::move(segments);
  }

  /// Fanout of each relation, by edge type.
  const std::vector<std::int64_t>& fanouts() const noexcept { return fanouts_; }
  /// Edge type of each position (empty: one relation).
  std::span<const std::int32_t> edge_types() const noexcept { return types_; }

  /// Throws ShapeError unless the type array has one entry per edge position of `g` (or
  /// is empty with a single relation) and the segments one run per row of `g`. O(1).
  void validate(const LocalGraphView& g) const {
    if (types_.empty() ? (fanouts_.size() != 1 && g.num_edges() > 0)
                       : static_cast<std::int64_t>(types_.size()) != g.num_edges())
      throw ShapeError("edge types by position", "length " + std::to_string(types_.size()) +
                                                     "; expected " + std::to_string(g.num_edges()) +
                                                     " (one per edge position of the view)");
    if (segments_ && segments_->starts.size() !=
                         static_cast<std::size_t>(g.num_rows()) * (fanouts_.size() + 1))
      throw ShapeError("relation segments",
                       std::to_string(segments_->starts.size() / (fanouts_.size() + 1)) +
                           " rows; expected " + std::to_string(g.num_rows()) +
                           " (the sampler was built for another view)");
  }

  /// Appends the picks of each seed in `local_seeds` to `picks` (see Sampler): per seed,
  /// the picks of its relations in type order. `fanout` is ignored (pass -1). Expected
  /// O(R + picks) per seed; does not throw except std::bad_alloc.
  void sample(const LocalGraphView& g, std::span<const std::int64_t> local_seeds,
              std::int64_t /*fanout*/, const SampleKey& key, Picks& picks) const {
    // One relation without a type array: the row is its one segment.
    if (!segments_) return UniformSampler{}.sample(g, local_seeds, fanouts_[0], key, picks);
    const std::uint64_t key_hash = hash_key(key);
    detail::IdHashMap seen;
    const std::int64_t* fans = fanouts_.data();
    std::int64_t per_seed = 0;  // an upper bound on a seed's picks, capped as UniformSampler's
    for (const std::int64_t f : fanouts_) per_seed += f < 0 ? 64 : f;
    picks.counts.reserve(picks.counts.size() + local_seeds.size());
    picks.positions.reserve(picks.positions.size() +
                            local_seeds.size() *
                                static_cast<std::size_t>(std::min<std::int64_t>(per_seed, 64)));
    const std::size_t width = fanouts_.size() + 1;
    const std::int64_t* starts = segments_->starts.data();
    for (std::size_t s = 0; s < local_seeds.size(); ++s) {
      if (s + 8 < local_seeds.size())
        __builtin_prefetch(starts + static_cast<std::size_t>(local_seeds[s + 8]) * width);
      const std::int64_t v = local_seeds[s];
      const std::int64_t* row = starts + static_cast<std::size_t>(v) * width;
      // The seed's pick count first, so its picks are written in place (no growth checks).
      std::int64_t total = 0;
      for (std::size_t t = 0; t + 1 < width; ++t)
        total += std::min(row[t + 1] - row[t], fans[t] < 0 ? row[t + 1] - row[t] : fans[t]);
      picks.counts.push_back(total);
      if (total == 0) continue;
      const std::size_t at = picks.positions.size();
      picks.positions.resize(at + static_cast<std::size_t>(total));
      std::int64_t* out = picks.positions.data() + at;
      // One stream per seed, drawn segment by segment in type order: the picks depend on
      // nothing but (key, v's global ID, the row, the fanouts). Only a segment with more
      // edges than its fanout draws, so the stream starts at the first such segment (a
      // seed taking whole segments or none reads no node ID and hashes nothing).
      std::optional<SampleRng> rng;
      for (std::size_t t = 0; t + 1 < width; ++t) {
        const std::int64_t first = row[t], n = row[t + 1] - first, f = fans[t];
        if (n == 0 || f == 0) continue;
        if (f < 0 || f >= n) {
          for (std::int64_t i = 0; i < n; ++i) out[i] = first + i;
          out += n;
          continue;
        }
        if (!rng) rng.emplace(key_hash, g.global_node(v));
        detail::floyd_sample(*rng, n, f, out, seen);
        for (std::int64_t i = 0; i < f; ++i) out[i] += first;
        out += f;
      }
    }
  }

 private:
  PerRelationSampler(std::shared_ptr<const void> keep, std::span<const std::int32_t> types,
                     std::shared_ptr<const detail::RelationSegments> segments,
                     std::vector<std::int64_t> fanouts)
      : keep_(std::move(keep)),
        types_(types),
        segments_(std::move(segments)),
        fanouts_(std::move(fanouts)) {}

  static void check_fanouts(std::span<const std::int64_t> fanouts) {
    if (fanouts.empty())
      throw InvalidArgument("per_relation sampler: no fanouts; expected one per edge type");
    for (std::size_t r = 0; r < fanouts.size(); ++r)
      if (fanouts[r] < -1)
        throw InvalidArgument("per_relation sampler: fanout " + std::to_string(fanouts[r]) +
                              " of relation " + std::to_string(r) +
                              "; expected -1 (all neighbours) or >= 0");
  }

  std::shared_ptr<const void> keep_;     ///< keeps types_ alive (or the site's cache entry)
  std::span<const std::int32_t> types_;  ///< edge type by position; empty = one relation
  /// Each row's relation offsets; null for one relation without a type array.
  std::shared_ptr<const detail::RelationSegments> segments_;
  std::vector<std::int64_t> fanouts_;    ///< by edge type
};

static_assert(DistributedSampler<PerRelationSampler>);

}  // namespace distgraph

// PerRelationSampler: up to f_r distinct in-edges of each relation r per seed (typed graphs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
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
#include "distgraph/sampling/detail/id_hash_map.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/rng.hpp"
#include "distgraph/sampling/sampler_spec.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"

namespace distgraph {

namespace detail {

/// Empty when `types` has one entry per edge position of `g`, every entry is in
/// [0, relations), and every row lists its edges by ascending type; else the message of
/// the first fault (naming the row and its global node). O(edges).
inline std::string edge_type_grouping_error(const LocalGraphView& g,
                                            std::span<const std::int32_t> types,
                                            std::int32_t relations) {
  if (static_cast<std::int64_t>(types.size()) != g.num_edges())
    return "edge types by position: length " + std::to_string(types.size()) + "; expected " +
           std::to_string(g.num_edges()) + " (one per edge position of the view)";
  for (std::int64_t r = 0; r < g.num_rows(); ++r) {
    const std::int64_t b = g.row_begin(r), e = b + g.degree(r);
    for (std::int64_t i = b; i < e; ++i) {
      const std::int32_t t = types[static_cast<std::size_t>(i)];
      const std::string where = "edge types of row " + std::to_string(r) + " (node " +
                                std::to_string(g.global_node(r)) + "): position " +
                                std::to_string(i) + " has type " + std::to_string(t);
      if (t < 0 || t >= relations)
        return where + "; expected [0, " + std::to_string(relations) + ")";
      if (i > b && t < types[static_cast<std::size_t>(i) - 1])
        return where + " after type " + std::to_string(types[static_cast<std::size_t>(i) - 1]) +
               "; expected each row's edges grouped by edge type in ascending order "
               "(group_in_edges_by_type does that for a whole graph)";
    }
  }
  return {};
}

/// What at_site caches per site: the site's type array and the verdict of its O(E) check.
struct SiteEdgeTypes {
  std::span<const std::int32_t> types;
  std::string error;  ///< empty when the rows are grouped by type
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
/// Each row's relation segments are found by binary search, O(R log d) per seed for R
/// relations and degree d, then each segment is drawn as UniformSampler draws a row
/// (Floyd's algorithm), segments in type order from one SampleRng per seed. With one
/// relation of fanout f the picks are exactly UniformSampler's with fanout f.
/// The `fanout` argument of sample() is ignored (the fanouts are the sampler's
/// parameters): pass -1. Copies share the type array; thread-safe.
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
        const std::string error =
            detail::edge_type_grouping_error(site.view(), st->types, relations);
        if (!error.empty())
          st->error = "partition " + std::to_string(site.part_id()) + ": " + error;
      }
      return std::static_pointer_cast<const void>(std::shared_ptr<const detail::SiteEdgeTypes>(st));
    });
    const auto& st = *static_cast<const detail::SiteEdgeTypes*>(made.get());
    if (!st.error.empty()) throw InvalidArgument(st.error);
    return PerRelationSampler(made, st.types, std::move(fanouts));
  }

  /// For a view `g` whose rows are grouped by type (e.g. group_in_edges_by_type's):
  /// `edge_type_by_position` holds one type in [0, fanouts.size()) per edge position of
  /// `g` (or is empty when `fanouts` has one entry), `fanouts[r]` is relation r's fanout.
  /// Throws InvalidArgument for an empty or bad fanout list, a type out of range or a row
  /// not grouped by type (naming it), ShapeError for a length other than g.num_edges().
  /// O(edges), once; the sampler is meant for `g` (validate() checks only the length).
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
    const std::string error =
        detail::edge_type_grouping_error(g, types_, static_cast<std::int32_t>(fanouts_.size()));
    if (!error.empty()) throw InvalidArgument(error);
  }

  /// Fanout of each relation, by edge type.
  const std::vector<std::int64_t>& fanouts() const noexcept { return fanouts_; }
  /// Edge type of each position (empty: one relation).
  std::span<const std::int32_t> edge_types() const noexcept { return types_; }

  /// Throws ShapeError unless the type array has one entry per edge position of `g` (or
  /// is empty with a single relation). O(1).
  void validate(const LocalGraphView& g) const {
    if (types_.empty() ? (fanouts_.size() != 1 && g.num_edges() > 0)
                       : static_cast<std::int64_t>(types_.size()) != g.num_edges())
      throw ShapeError("edge types by position", "length " + std::to_string(types_.size()) +
                                                     "; expected " + std::to_string(g.num_edges()) +
                                                     " (one per edge position of the view)");
  }

  /// Appends the picks of each seed in `local_seeds` to `picks` (see Sampler): per seed,
  /// the picks of its relations in type order. `fanout` is ignored (pass -1). Expected
  /// O(R log d + picks) per seed; does not throw except std::bad_alloc.
  void sample(const LocalGraphView& g, std::span<const std::int64_t> local_seeds,
              std::int64_t /*fanout*/, const SampleKey& key, Picks& picks) const {
    const std::uint64_t key_hash = hash_key(key);
    detail::IdHashMap seen;
    const std::int32_t* types = types_.empty() ? nullptr : types_.data();
    picks.counts.reserve(picks.counts.size() + local_seeds.size());
    for (std::size_t s = 0; s < local_seeds.size(); ++s) {
      if (s + 8 < local_seeds.size()) __builtin_prefetch(g.indptr.data() + local_seeds[s + 8]);
      const std::int64_t v = local_seeds[s];
      const std::int64_t begin = g.row_begin(v), degree = g.degree(v);
      const std::size_t at = picks.positions.size();
      // One stream per seed, drawn segment by segment in type order: the picks depend on
      // nothing but (key, v's global ID, the row, the fanouts).
      SampleRng rng(key_hash, g.global_node(v));
      for (std::int64_t lo = 0; lo < degree;) {
        std::int32_t t = 0;
        std::int64_t hi = degree;
        if (types) {
          const std::int32_t* row = types + begin;
          t = row[lo];
          hi = std::upper_bound(row + lo + 1, row + degree, t) - row;
        }
        take_segment(rng, begin + lo, hi - lo, fanouts_[static_cast<std::size_t>(t)], seen,
                     picks.positions);
        lo = hi;
      }
      picks.counts.push_back(static_cast<std::int64_t>(picks.positions.size() - at));
    }
  }

 private:
  PerRelationSampler(std::shared_ptr<const void> keep, std::span<const std::int32_t> types,
                     std::vector<std::int64_t> fanouts)
      : keep_(std::move(keep)), types_(types), fanouts_(std::move(fanouts)) {}

  static void check_fanouts(std::span<const std::int64_t> fanouts) {
    if (fanouts.empty())
      throw InvalidArgument("per_relation sampler: no fanouts; expected one per edge type");
    for (std::size_t r = 0; r < fanouts.size(); ++r)
      if (fanouts[r] < -1)
        throw InvalidArgument("per_relation sampler: fanout " + std::to_string(fanouts[r]) +
                              " of relation " + std::to_string(r) +
                              "; expected -1 (all neighbours) or >= 0");
  }

  /// What UniformSampler does to a row, for the n edges from position `first`.
  static void take_segment(SampleRng& rng, std::int64_t first, std::int64_t n, std::int64_t f,
                           detail::IdHashMap& seen, std::vector<std::int64_t>& out) {
    if (f < 0 || f >= n) {
      for (std::int64_t i = 0; i < n; ++i) out.push_back(first + i);
      return;
    }
    if (f == 0) return;
    const std::size_t at = out.size();
    out.resize(at + static_cast<std::size_t>(f));
    std::int64_t* o = out.data() + at;
    detail::floyd_sample(rng, n, f, o, seen);
    for (std::int64_t i = 0; i < f; ++i) o[i] += first;
  }

  std::shared_ptr<const void> keep_;     ///< keeps types_ alive (or the site's cache entry)
  std::span<const std::int32_t> types_;  ///< edge type by position; empty = one relation
  std::vector<std::int64_t> fanouts_;    ///< by edge type
};

static_assert(DistributedSampler<PerRelationSampler>);

}  // namespace distgraph

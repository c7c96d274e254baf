// LaborSampler: layer-neighbour (LABOR-0) sampling, one random variate per source node.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string_view>
#include <vector>

#include "distgraph/sampling/concepts.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/rng.hpp"
#include "distgraph/sampling/sampler_site.hpp"

namespace distgraph {

namespace detail {

/// The 53 random bits behind global node `u`'s LABOR variate under stream `base`: output
/// `u` of the SplitMix64 stream at `base` (variate = bits * 2^-53).
constexpr std::uint64_t labor_bits(std::uint64_t base, std::int64_t u) noexcept {
  return mix64(base + (static_cast<std::uint64_t>(u) + 1) * golden_gamma) >> 11;
}

/// LABOR's row scan: appends `begin + i` for every edge i < degree of the row whose source
/// u (`row[i]`, mapped through `ids` unless it is null) has labor_bits(base, u) < limit.
/// In row order.
inline void labor_scan_scalar(const std::int64_t* row, const std::int64_t* ids, std::int64_t degree,
                              std::uint64_t base, std::uint64_t limit, std::int64_t begin,
                              std::vector<std::int64_t>& positions) {
  constexpr std::int64_t ahead = 16;  // the neighbours' global IDs are random reads
  for (std::int64_t i = 0; i < degree; ++i) {
    if (ids != nullptr && i + ahead < degree) __builtin_prefetch(ids + row[i + ahead]);
    const std::int64_t u = ids != nullptr ? ids[row[i]] : row[i];
    if (labor_bits(base, u) < limit) positions.push_back(begin + i);
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DISTGRAPH_DETAIL_LABOR_AVX512 1
/// labor_scan_scalar eight edges at a time with AVX-512 (64-bit multiplies need AVX512DQ):
/// labor_bits in vector lanes, the same picks in the same order. The hub rows LABOR scans
/// whole are most of its time (PERFORMANCE.md); the library is built for any x86-64, so
/// this is chosen at run time. Written with the compiler's vector extensions and the two
/// builtins behind _mm512_i64gather_epi64 and _mm512_movepi64_mask, so that no header of
/// the library needs <immintrin.h> (0.6 s of parsing per translation unit).
__attribute__((target("avx512f,avx512dq"))) inline void labor_scan_avx512(
    const std::int64_t* row, const std::int64_t* ids, std::int64_t degree, std::uint64_t base,
    std::uint64_t limit, std::int64_t begin, std::vector<std::int64_t>& positions) {
  // long long lanes: the builtins' own types (std::int64_t is long here).
  using v8u = unsigned long long __attribute__((vector_size(64)));
  using v8s = long long __attribute__((vector_size(64)));
  constexpr std::int64_t ahead = 32;
  const v8u vlimit = v8u{} + limit;
  std::int64_t i = 0;
  for (; i + 8 <= degree; i += 8) {
    v8s local;
    __builtin_memcpy(&local, row + i, sizeof local);
    v8u u = reinterpret_cast<v8u>(local);
    if (ids != nullptr) {
      if (i + ahead + 8 <= degree)
        for (int k = 0; k < 8; ++k) __builtin_prefetch(ids + row[i + ahead + k]);
      // _mm512_i64gather_epi64's builtin (vpgatherqq), all eight lanes.
      u = reinterpret_cast<v8u>(__builtin_ia32_gatherdiv8di(v8s{}, ids, local, -1, 8));
    }
    v8u z = base + (u + 1) * golden_gamma;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z = (z ^ (z >> 31)) >> 11;
    const v8s below = z < vlimit;  // all ones where picked; picks are rare in hub rows
    // _mm512_movepi64_mask's builtin (vpmovq2m): one bit per lane.
    for (unsigned m = __builtin_ia32_cvtq2mask512(below); m != 0; m &= m - 1)
      positions.push_back(begin + i + __builtin_ctz(m));
  }
  labor_scan_scalar(row + i, ids, degree - i, base, limit, begin + i, positions);
}

/// Whether this CPU runs labor_scan_avx512 (checked once).
inline bool labor_avx512_available() noexcept {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  return yes;
}
#endif

/// labor_scan_scalar, on AVX-512 where the CPU has it (rows of 32 edges or more).
inline void labor_scan(const std::int64_t* row, const std::int64_t* ids, std::int64_t degree,
                       std::uint64_t base, std::uint64_t limit, std::int64_t begin,
                       std::vector<std::int64_t>& positions) {
#if defined(DISTGRAPH_DETAIL_LABOR_AVX512)
  if (degree >= 32 && labor_avx512_available())
    return labor_scan_avx512(row, ids, degree, base, limit, begin, positions);
#endif
  labor_scan_scalar(row, ids, degree, base, limit, begin, positions);
}

}  // namespace detail

/// Layer-neighbour sampling, LABOR-0 (Balin & Çatalyürek, "Layer-Neighbor Sampling —
/// Defusing Neighborhood Explosion in GNNs", NeurIPS 2023; DGL's `sample_labors` with
/// `importance_sampling=0`): a drop-in for UniformSampler with the same fanout that samples
/// far fewer distinct source nodes per layer.
///
/// Each neighbour u draws one variate r_u, uniform in [0, 1), from (hash_key(key), global
/// ID of u) alone; a seed with d edges and fanout k takes edge (u -> seed) iff
/// r_u < k / d. So, from one seed's point of view, its edges are Poisson-sampled: each is
/// taken independently with probability k / d, k picks expected (Binomial(d, k/d) many,
/// not exactly k), and the Horvitz-Thompson mean of its neighbours has the Poisson variance
/// (1/k - 1/d) (1/d) sum h_u^2. Across the seeds of a layer the variates are shared: a
/// source with two seeds of inclusion probabilities p1 <= p2 is picked by both with
/// probability p1 (instead of p1 p2), so popular sources are fetched once for many seeds.
/// A neighbour that appears twice in a row (a multigraph) is taken or left as one.
///
/// Fanout -1 or fanout >= d takes the whole row in row order; fanout 0 takes nothing.
/// Picks within a seed come in row order. Which edges a seed takes depends on the key, the
/// global IDs of its neighbours and k / d only (not on the row's order, the other seeds,
/// the batch's split or the process), so a whole graph and its partitions pick the same
/// edges. O(d) variates per seed that samples (UniformSampler draws O(k)).
///
/// LABOR-* (the importance-sampling iterations that fit one shared probability per source
/// to the whole layer) is not offered: it makes a seed's picks depend on every other seed
/// of the layer, which a layer split over servers cannot compute without another round of
/// messages, and breaks the Sampler rule that a seed's picks depend on itself alone.
/// Copies are free (they share a site's table); thread-safe.
class LaborSampler {
 public:
  using policy_category = sampler_tag;
  /// How requests name it (DistributedSampler); it takes no parameters
  /// (`sampler_spec<LaborSampler>()`).
  static constexpr std::string_view wire_name = "labor";

  /// Each edge position's neighbour as a global ID, for one view's `indices`: a row scan
  /// then reads its row in order instead of mapping every neighbour through node_ids at
  /// random (the map's reads were what was left of LABOR's cost, PERFORMANCE.md).
  struct NeighbourIds {
    const std::int64_t* indices = nullptr;   ///< the view it was built for: its indices
    const std::int64_t* node_ids = nullptr;  ///< and its local -> global map
    std::size_t num_node_ids = 0;
    std::vector<std::int64_t> global;  ///< global ID of indices[i]

    /// Whether this is the table of `g`.
    bool built_for(const LocalGraphView& g) const noexcept {
      return indices == g.indices.data() && global.size() == g.indices.size() &&
             node_ids == g.node_ids.data() && num_node_ids == g.node_ids.size() &&
             !g.indices.empty();
    }
  };
  /// A site's table is built only up to this size (8 bytes per edge the site holds, once
  /// per process that samples there); past it rows are mapped as they are scanned.
  static constexpr std::size_t max_table_bytes = std::size_t{1} << 30;

  /// The sampler for `site`: with the site's NeighbourIds table (made on first use, kept
  /// by SamplerSite::cached) where its view maps local IDs to global ones and the table
  /// fits max_table_bytes. The picks are the same either way, so a site short of memory
  /// for the table samples without it.
  static LaborSampler at_site(HeadReader&, SamplerSite& site) {
    const LocalGraphView& g = site.view();
    if (g.node_ids.empty() || g.indices.size() > max_table_bytes / sizeof(std::int64_t)) return {};
    LaborSampler out;
    try {
      auto made = site.cached("labor:neighbour_global_ids", [&] {
        auto t = std::make_shared<NeighbourIds>();
        t->indices = g.indices.data();
        t->node_ids = g.node_ids.data();
        t->num_node_ids = g.node_ids.size();
        t->global.resize(g.indices.size());
        for (std::size_t i = 0; i < g.indices.size(); ++i)
          t->global[i] = g.node_ids[static_cast<std::size_t>(g.indices[i])];
        return std::static_pointer_cast<const void>(std::shared_ptr<const NeighbourIds>(t));
      });
      out.ids_ = std::static_pointer_cast<const NeighbourIds>(made);
    } catch (const std::bad_alloc&) {
    }
    return out;
  }

  /// Nothing to check: the sampler brings no per-edge data.
  void validate(const LocalGraphView&) const noexcept {}

  /// The variate r_u in [0, 1) of global node `node` under a key hashed by hash_key: the
  /// same for every seed, row, thread and process that asks. It is output `node` of the
  /// SplitMix64 stream seeded by the salted key (one mix per edge, where a SampleRng per
  /// node would cost three), 53 bits.
  static constexpr double variate(std::uint64_t key_hash, std::int64_t node) noexcept {
    return variate_at(stream_base(key_hash), node);
  }

  /// Appends the picks of each seed in `local_seeds` to `picks` (see Sampler). O(sum of
  /// the sampled rows' degrees); does not throw except std::bad_alloc.
  void sample(const LocalGraphView& g, std::span<const std::int64_t> local_seeds,
              std::int64_t fanout, const SampleKey& key, Picks& picks) const {
    const std::uint64_t base = stream_base(hash_key(key));
    // The site's table, when this is the view it was built for.
    const std::int64_t* table = ids_ && ids_->built_for(g) ? ids_->global.data() : nullptr;
    picks.counts.reserve(picks.counts.size() + local_seeds.size());
    for (std::size_t s = 0; s < local_seeds.size(); ++s) {
      if (s + 8 < local_seeds.size()) __builtin_prefetch(g.indptr.data() + local_seeds[s + 8]);
      const std::int64_t v = local_seeds[s];
      const std::int64_t begin = g.row_begin(v), degree = g.degree(v);
      if (fanout < 0 || fanout >= degree) {
        picks.take_all(begin, degree);
        continue;
      }
      // 0 <= k < d: edge kept when r_u < k / d, with probability k / d to within 2^-53
      // (r_u is a multiple of 2^-53). The row is scanned in order, so picks come in row
      // order; the hub rows this scans are what makes LABOR O(d) (PERFORMANCE.md).
      const double p = static_cast<double>(fanout) / static_cast<double>(degree);
      const std::size_t before = picks.positions.size();
      if (fanout > 0) {
        // r_u < p exactly when r_u's 53 bits are below ceil(p * 2^53) (scaling by 2^53 is
        // exact): an integer compare per edge. The neighbours' global IDs come in row order
        // from the site's table, else as random reads into node_ids, fetched ahead of use.
        const auto limit = static_cast<std::uint64_t>(std::ceil(p * 0x1.0p53));
        if (table != nullptr)
          detail::labor_scan(table + begin, nullptr, degree, base, limit, begin, picks.positions);
        else
          detail::labor_scan(g.indices.data() + begin,
                             g.node_ids.empty() ? nullptr : g.node_ids.data(), degree, base, limit,
                             begin, picks.positions);
      }
      picks.counts.push_back(static_cast<std::int64_t>(picks.positions.size() - before));
    }
  }

 private:
  std::shared_ptr<const NeighbourIds> ids_;  // null: rows mapped as scanned

  // Salted so the stream is not any SampleRng's: other samplers draw a node's own row from
  // SampleRng(hash_key(key), node).
  static constexpr std::uint64_t stream_base(std::uint64_t key_hash) noexcept {
    return detail::mix64(key_hash ^ 0x6C61626F72303030ull);  // "labor000"
  }
  /// The 53 random bits behind node `node`'s variate: variate = bits * 2^-53.
  static constexpr std::uint64_t bits_at(std::uint64_t base, std::int64_t node) noexcept {
    return detail::labor_bits(base, node);
  }
  static constexpr double variate_at(std::uint64_t base, std::int64_t node) noexcept {
    return static_cast<double>(bits_at(base, node)) * 0x1.0p-53;
  }
};

static_assert(DistributedSampler<LaborSampler>);

}  // namespace distgraph

// Bound loops of the benchmark programs: the same memory work as a figure with no library
// code in the way (row gathers, random row reads, in-memory block sampling), and the
// alternating best-of timer that puts a figure and its bound under the same machine noise.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "distgraph/core/timer.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/multi_layer.hpp"
#include "distgraph/sampling/rng.hpp"

namespace distgraph::bench {

/// Best of `runs` alternating runs of `fn` and `bound_fn`, in seconds (figure, bound),
/// after one untimed run of each (page faults, allocator warm-up); alternating puts both
/// under the same machine noise.
inline std::pair<double, double> best_pair(int runs, const std::function<void()>& fn,
                                           const std::function<void()>& bound_fn) {
  bound_fn();
  fn();
  double best = std::numeric_limits<double>::infinity(), best_bound = best;
  for (int r = 0; r < runs; ++r) {
    distgraph::Stopwatch a;
    bound_fn();
    best_bound = std::min(best_bound, a.seconds());
    distgraph::Stopwatch b;
    fn();
    best = std::min(best, b.seconds());
  }
  return {best, best_bound};
}

/// Per-call best of `runs` alternating runs, in seconds (figure, bound): runs fn(k) and
/// bound_fn(k) for every call k in [0, calls), each timed alone, and sums each call's
/// fastest time over k; one untimed run of each first. For loops of short independent
/// calls on a shared machine: a lost scheduler slice (about 4 ms here, 20-40 times a
/// short call) lands in some call of nearly every run, so the best whole loop still carries
/// a few; the best of each call does not, for the figure and the bound alike.
inline std::pair<double, double> best_per_call(int runs, std::size_t calls,
                                               const std::function<void(std::size_t)>& fn,
                                               const std::function<void(std::size_t)>& bound_fn) {
  for (std::size_t k = 0; k < calls; ++k) bound_fn(k);
  for (std::size_t k = 0; k < calls; ++k) fn(k);
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<double> best(calls, inf), best_bound(calls, inf);
  for (int r = 0; r < runs; ++r) {
    for (std::size_t k = 0; k < calls; ++k) {
      distgraph::Stopwatch w;
      bound_fn(k);
      best_bound[k] = std::min(best_bound[k], w.seconds());
    }
    for (std::size_t k = 0; k < calls; ++k) {
      distgraph::Stopwatch w;
      fn(k);
      best[k] = std::min(best[k], w.seconds());
    }
  }
  double sum = 0, sum_bound = 0;
  for (std::size_t k = 0; k < calls; ++k) {
    sum += best[k];
    sum_bound += best_bound[k];
  }
  return {sum, sum_bound};
}

/// The plain gather loop: copies rows `ids` of the row-major table `table` (`cols` values
/// per row) into `out`, one memcpy per row, in order.
template <class T>
void gather_rows(const T* table, std::size_t cols, std::span<const std::int64_t> ids, T* out) {
  for (std::size_t i = 0; i < ids.size(); ++i)
    std::memcpy(out + i * cols, table + static_cast<std::size_t>(ids[i]) * cols, cols * sizeof(T));
}

/// How many entries of a seed's row of degree d a sampler returns, for `fanout` f.
enum class RowPicks {
  at_most_fanout,  ///< min(f, d): uniform and weighted without replacement
  exactly_fanout,  ///< f when d > 0, else 0: with replacement
  whole_row,       ///< d, whatever f: full neighbourhoods
};

/// What random_row_reads touched: entries read, and a sum of them so nothing is elided.
struct RowReads {
  std::int64_t reads = 0;
  std::uint64_t checksum = 0;
};

/// The random-access bound of neighbour sampling: for each seed, reads indptr[v],
/// indptr[v+1] and as many entries of v's row of `indices` as `picks` says a sampler
/// returns, at random positions (a whole row is read in order), with no sampling logic:
/// the rate a sampler over this CSC cannot beat.
inline RowReads random_row_reads(std::span<const std::int64_t> indptr,
                                 std::span<const std::int64_t> indices,
                                 std::span<const std::int64_t> seeds, std::int64_t fanout,
                                 RowPicks picks = RowPicks::at_most_fanout) {
  RowReads out;
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  const std::int64_t* ptr = indptr.data();
  const std::int64_t* idx = indices.data();
  const std::size_t num_seeds = seeds.size();
  for (std::size_t s = 0; s < num_seeds; ++s) {
    // The samplers fetch the offsets of the seed 8 ahead; so does the bound, else the
    // bound would leave memory-level parallelism unused and stop being one.
    if (s + 8 < num_seeds) __builtin_prefetch(ptr + seeds[s + 8]);
    const std::int64_t v = seeds[s];
    const std::int64_t begin = ptr[v], degree = ptr[v + 1] - begin;
    if (picks == RowPicks::whole_row) {
      for (std::int64_t j = 0; j < degree; ++j)
        out.checksum += static_cast<std::uint64_t>(idx[begin + j]);
      out.reads += degree;
      continue;
    }
    const std::int64_t k =
        picks == RowPicks::exactly_fanout ? (degree > 0 ? fanout : 0) : std::min(fanout, degree);
    for (std::int64_t j = 0; j < k; ++j) {
      x ^= x << 13;  // xorshift64 (Marsaglia 2003): the cheapest way to scatter reads
      x ^= x >> 7;
      x ^= x << 17;
      __extension__ using u128 = unsigned __int128;
      const auto at = static_cast<std::int64_t>(
          (static_cast<u128>(x) * static_cast<std::uint64_t>(degree)) >> 64);
      out.checksum += static_cast<std::uint64_t>(idx[begin + at]);
    }
    out.reads += k;
  }
  return out;
}

/// One epoch of the in-memory loader ceiling, in seconds: for each seed batch (input node
/// IDs of the whole graph `view`), `sampler`'s blocks keyed {seed, epoch, batch b}, then
/// a memcpy gather of the input nodes' rows of `feat` (`dim` floats per row) into `rows`.
/// One thread, nothing fetched through a client: what a data loader cannot beat.
inline double in_memory_loader_epoch(const LocalGraphView& view,
                                     const MultiLayerNeighborSampler<>& sampler,
                                     const std::vector<std::vector<std::int64_t>>& batches,
                                     std::uint64_t seed, std::int64_t epoch,
                                     std::span<const float> feat, std::size_t dim,
                                     std::vector<float>& rows) {
  distgraph::Stopwatch clock;
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const auto mb = sampler.sample_blocks(
        view, batches[b], {.seed = seed, .epoch = epoch, .batch = static_cast<std::int64_t>(b)});
    rows.resize(mb.input_nodes.size() * dim);
    gather_rows(feat.data(), dim, mb.input_nodes, rows.data());
  }
  return clock.seconds();
}

}  // namespace distgraph::bench

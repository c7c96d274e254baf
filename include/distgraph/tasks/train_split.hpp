// The training seeds of each trainer from counts: a trainer reads the training mask of its
// own partition (and of another only where its share runs into it), and the trainers
// exchange counts, not arrays of IDs. Nothing a trainer holds grows with the whole graph.
#pragma once

#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/ids.hpp"
#include "distgraph/train/allreduce.hpp"

namespace distgraph {

/// How local_train_share splits (designated initialisers).
struct LocalSplitOptions {
  std::string mask = "train_mask";  ///< boolean node data marking the training nodes
  std::int32_t rank = 0;            ///< this trainer, ranked machine-major
  std::int32_t world = 1;           ///< all trainers; a multiple of the partitions
  /// Even out the shares' costs (1 + in-degree capped at degree_cap per seed), as
  /// balance_shares does, planned on cost histograms.
  bool balance = true;
  std::int64_t degree_cap = INT64_MAX;
  double tolerance = 0.005;  ///< stop once the costliest and cheapest differ by this of the mean
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  ///< each collective
};

/// This trainer's seeds and what the split knows of the whole training set.
struct LocalShare {
  std::vector<std::int64_t> ids;  ///< the seeds, ceil(total / world) of them
  std::int64_t total = 0;         ///< training nodes in the graph
  /// Mask values this trainer read: its own partition's nodes, and another partition's
  /// where its share runs into it (a whole-graph split reads every node's).
  std::int64_t mask_rows_read = 0;
};

/// Whether local_train_share can split for `world` trainers over `partitions`: each
/// partition's machine holds the same number of trainers.
inline bool local_split_applies(std::int32_t world, std::int32_t partitions) {
  return partitions > 0 && world >= partitions && world % partitions == 0;
}

namespace detail {

/// The global IDs of partition `p`'s nodes whose boolean node data `mask` is true,
/// ascending (none when the graph has no such data). Reads the partition's mask in chunks.
template <class Graph>
std::vector<std::int64_t> partition_masked(const Graph& g, const std::string& mask, std::int32_t p,
                                           std::int64_t* rows_read = nullptr) {
  std::vector<std::int64_t> out;
  std::optional<typename Graph::template tensor_type<bool>> m;
  try {
    m = g.template ndata<bool>(mask);
  } catch (const NotFound&) {
    return out;
  }
  std::vector<std::int64_t> owned = g.book().owned_nodes(PartId(p));
  std::sort(owned.begin(), owned.end());
  constexpr std::size_t chunk = 1 << 20;
  std::unique_ptr<bool[]> values(new bool[std::min(chunk, owned.size()) + 1]);
  for (std::size_t lo = 0; lo < owned.size(); lo += chunk) {
    const std::size_t n = std::min(chunk, owned.size() - lo);
    m->pull(std::span<const std::int64_t>(owned.data() + lo, n), std::span<bool>(values.get(), n));
    for (std::size_t i = 0; i < n; ++i)
      if (values[i]) out.push_back(owned[lo + i]);
  }
  if (rows_read != nullptr) *rows_read += static_cast<std::int64_t>(owned.size());
  return out;
}

/// The first (`back`: last) `k` of partition `p`'s nodes marked by `mask`, ascending: the
/// partition's mask read from that end in chunks that double, so a share that runs a few
/// seeds into another partition reads about as many of its nodes, not all of them.
template <class Graph>
std::vector<std::int64_t> partition_masked_end(const Graph& g, const std::string& mask,
                                               std::int32_t p, std::int64_t k, bool back,
                                               std::int64_t* rows_read) {
  std::vector<std::int64_t> out;
  const auto m = g.template ndata<bool>(mask);
  std::vector<std::int64_t> owned = g.book().owned_nodes(PartId(p));
  std::sort(owned.begin(), owned.end());
  if (back) std::reverse(owned.begin(), owned.end());
  std::size_t chunk = 64;
  std::vector<std::int64_t> ids;
  std::unique_ptr<bool[]> values;
  for (std::size_t lo = 0; lo < owned.size() && static_cast<std::int64_t>(out.size()) < k;
       lo += chunk, chunk = std::min<std::size_t>(chunk * 2, 1 << 20)) {
    const std::size_t n = std::min(chunk, owned.size() - lo);
    values.reset(new bool[n]);
    m.pull(std::span<const std::int64_t>(owned.data() + lo, n), std::span<bool>(values.get(), n));
    *rows_read += static_cast<std::int64_t>(n);
    for (std::size_t i = 0; i < n && static_cast<std::int64_t>(out.size()) < k; ++i)
      if (values[i]) out.push_back(owned[lo + i]);
  }
  if (back) std::reverse(out.begin(), out.end());
  return out;
}

/// A run of one origin trainer's movable seeds of one cost: ordinals [first, first + count)
/// among that origin's seeds of that cost, in share order.
struct SeedRun {
  std::int32_t origin = 0;
  std::int64_t first = 0, count = 0;
};

/// The balancing plan on histograms: `hist[r]` maps cost to trainer r's movable seeds of
/// that cost, `total[r]` is its whole cost. Returns, per trainer and cost, the runs of
/// seeds it ends with (every trainer computes the same). Mirrors balance_shares: while
/// the costliest and cheapest trainer differ by more than `tolerance` of the mean, the
/// costliest gives its dearest seeds for the cheapest one's cheapest, each swap narrowing
/// their gap without overshooting.
inline std::vector<std::map<std::int64_t, std::vector<SeedRun>>> plan_balance(
    const std::vector<std::map<std::int64_t, std::int64_t>>& hist, std::vector<double> total,
    double tolerance) {
  const std::size_t t = hist.size();
  std::vector<std::map<std::int64_t, std::vector<SeedRun>>> have(t);
  for (std::size_t r = 0; r < t; ++r)
    for (const auto& [c, n] : hist[r])
      if (n > 0) have[r][c].push_back({static_cast<std::int32_t>(r), 0, n});
  const auto count_of = [](const std::vector<SeedRun>& runs) {
    std::int64_t n = 0;
    for (const auto& s : runs) n += s.count;
    return n;
  };
  // Takes `k` seeds from the front of `runs`.
  const auto take = [](std::vector<SeedRun>& runs, std::int64_t k) {
    std::vector<SeedRun> out;
    while (k > 0) {
      SeedRun& s = runs.front();
      const std::int64_t n = std::min(k, s.count);
      out.push_back({s.origin, s.first, n});
      s.first += n;
      s.count -= n;
      k -= n;
      if (s.count == 0) runs.erase(runs.begin());
    }
    return out;
  };
  for (std::size_t round = 0; round < 4 * t * t; ++round) {
    const auto hi =
        static_cast<std::size_t>(std::max_element(total.begin(), total.end()) - total.begin());
    const auto lo =
        static_cast<std::size_t>(std::min_element(total.begin(), total.end()) - total.begin());
    const double mean = std::accumulate(total.begin(), total.end(), 0.0) / static_cast<double>(t);
    double gap = total[hi] - total[lo];
    if (hi == lo || gap <= tolerance * mean) break;
    // This round's swaps: (dear cost, cheap cost, how many); applied afterwards, so seeds
    // swapped in are not offered again within the round (as in balance_shares).
    struct Swap {
      std::int64_t dear, cheap, k;
    };
    std::vector<Swap> swaps;
    std::map<std::int64_t, std::int64_t> dear_left, cheap_left;
    for (const auto& [c, runs] : have[hi]) dear_left[c] = count_of(runs);
    for (const auto& [c, runs] : have[lo]) cheap_left[c] = count_of(runs);
    auto cheap = cheap_left.begin();
    for (auto dear = dear_left.rbegin(); dear != dear_left.rend() && cheap != cheap_left.end();) {
      while (cheap != cheap_left.end() && cheap->second == 0) ++cheap;
      if (cheap == cheap_left.end()) break;
      const double d = static_cast<double>(dear->first - cheap->first);
      if (d <= 0) break;  // nothing dearer left to give
      const auto fit = static_cast<std::int64_t>(gap / (2 * d));
      const std::int64_t k = std::min({dear->second, cheap->second, fit});
      if (k > 0) {
        swaps.push_back({dear->first, cheap->first, k});
        dear->second -= k;
        cheap->second -= k;
        gap -= 2 * d * static_cast<double>(k);
      }
      if (dear->second == 0 || fit == k) ++dear;  // spent, or too dear for the gap left
    }
    if (swaps.empty()) break;
    for (const auto& s : swaps) {
      auto given = take(have[hi][s.dear], s.k);
      auto got = take(have[lo][s.cheap], s.k);
      auto& to_lo = have[lo][s.dear];
      to_lo.insert(to_lo.end(), given.begin(), given.end());
      auto& to_hi = have[hi][s.cheap];
      to_hi.insert(to_hi.end(), got.begin(), got.end());
      const double d = static_cast<double>(s.dear - s.cheap) * static_cast<double>(s.k);
      total[hi] -= d;
      total[lo] += d;
    }
  }
  return have;
}

/// Where the split's positions lie: the global order (partition, then ID) of the `n`
/// training nodes cut into shares of `per`, the last ones wrapping to the front as repeats.
struct SplitLayout {
  std::vector<std::int64_t> start;  ///< partition p holds positions [start[p], start[p + 1])
  std::int64_t n = 0, per = 0;      ///< training nodes; seeds per share
  std::int64_t first = 0;           ///< this share's first position
  std::int64_t pad = 0;             ///< repeats: positions n .. n + pad - 1
  std::int32_t own = 0;             ///< this trainer's partition

  /// A position of the global order (wrapping past n) as (partition, index within it).
  std::pair<std::int32_t, std::int64_t> locate(std::int64_t position) const {
    const std::int64_t gpos = position % n;
    const auto p = static_cast<std::int32_t>(std::upper_bound(start.begin(), start.end(), gpos) -
                                             start.begin() - 1);
    return std::pair{p, gpos - start[static_cast<std::size_t>(p)]};
  }
  /// Whether share position `i` stays put: repeats and their originals, since a swap could
  /// put both copies in one share.
  bool pinned(std::size_t i) const {
    const std::int64_t gpos = first + static_cast<std::int64_t>(i);
    return gpos < pad || gpos >= n;
  }
};

/// Stage: the one exchange every split needs; one count per partition (from the first
/// trainer of its machine) tells each trainer where every partition's seeds fall.
inline std::vector<std::int64_t> agreed_starts(std::int64_t own_count, std::int32_t parts,
                                               std::int32_t per_part, const LocalSplitOptions& o,
                                               CollectiveGroup* group) {
  const std::int32_t own = o.rank / per_part;
  std::vector<double> counts(static_cast<std::size_t>(parts), 0.0);
  if (o.rank % per_part == 0)
    counts[static_cast<std::size_t>(own)] = static_cast<double>(own_count);
  if (group != nullptr) counts = all_reduce_sum(*group, counts, o.timeout);
  std::vector<std::int64_t> start(static_cast<std::size_t>(parts) + 1, 0);
  for (std::int32_t p = 0; p < parts; ++p)
    start[static_cast<std::size_t>(p) + 1] =
        start[static_cast<std::size_t>(p)] +
        static_cast<std::int64_t>(counts[static_cast<std::size_t>(p)]);
  return start;
}

/// Stage: each trainer's share of the global order, as node_split cuts it: ceil(n / world)
/// seeds each, so the last shares repeat the first seeds.
inline SplitLayout split_layout(std::vector<std::int64_t> start, std::int32_t own,
                                const LocalSplitOptions& o) {
  SplitLayout at{.start = std::move(start), .own = own};
  at.n = at.start.back();
  at.per = (at.n + o.world - 1) / o.world;
  at.first = static_cast<std::int64_t>(o.rank) * at.per;
  at.pad = static_cast<std::int64_t>(o.world) * at.per - at.n;
  return at;
}

/// Stage: the share's global IDs; of another partition a share needs a run at its front or
/// its back (or all of it), so only that end of its mask is read. Takes the own partition's
/// marked IDs by value so that they are freed before balancing.
template <class Graph>
std::vector<std::int64_t> read_share(const Graph& g, const std::string& mask, const SplitLayout& at,
                                     std::vector<std::int64_t> own_ids, std::int64_t* rows_read) {
  std::map<std::int32_t, std::pair<std::int64_t, std::int64_t>> need;  // q -> [lo, hi]
  for (std::int64_t i = 0; i < at.per; ++i) {
    const auto [q, k] = at.locate(at.first + i);
    if (q == at.own) continue;
    auto [it, fresh] = need.try_emplace(q, k, k);
    it->second.first = std::min(it->second.first, k);
    it->second.second = std::max(it->second.second, k);
  }
  // lists[q] holds q's marked IDs from index offset[q] within q.
  std::map<std::int32_t, std::vector<std::int64_t>> lists;
  std::map<std::int32_t, std::int64_t> offset;
  for (const auto& [q, range] : need) {
    const std::int64_t count =
        at.start[static_cast<std::size_t>(q) + 1] - at.start[static_cast<std::size_t>(q)];
    const bool back = range.first > 0;
    const std::int64_t k = back ? count - range.first : range.second + 1;
    lists[q] = partition_masked_end(g, mask, q, k, back, rows_read);
    offset[q] = back ? range.first : 0;
  }
  std::vector<std::int64_t> ids;
  ids.reserve(static_cast<std::size_t>(at.per));
  for (std::int64_t i = 0; i < at.per; ++i) {
    const auto [q, k] = at.locate(at.first + i);
    ids.push_back(q == at.own ? own_ids[static_cast<std::size_t>(k)]
                              : lists[q][static_cast<std::size_t>(k - offset[q])]);
  }
  return ids;
}

/// The share's seeds by cost: the movable ones' positions per cost, and the pinned ones'
/// whole cost.
struct ShareCosts {
  std::map<std::int64_t, std::vector<std::size_t>> movable;  ///< cost -> share positions
  double fixed = 0;
};

/// Stage: a seed's cost (1 + in-degree capped at `degree_cap`) is what balancing evens out;
/// repeats and their originals are pinned.
template <class Graph>
ShareCosts share_costs(const Graph& g, const std::vector<std::int64_t>& ids, const SplitLayout& at,
                       std::int64_t degree_cap) {
  const auto deg = g.in_degrees(ids);
  ShareCosts costs;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t cost = 1 + std::min(deg[i], degree_cap);
    if (at.pinned(i))
      costs.fixed += static_cast<double>(cost);
    else
      costs.movable[cost].push_back(i);
  }
  return costs;
}

/// Every trainer's cost histogram (cost -> movable seeds) and whole cost.
struct CostHistograms {
  std::vector<std::map<std::int64_t, std::int64_t>> hist;
  std::vector<double> total;
};

/// Stage: every trainer plans the same balance from the same histograms, so histograms
/// travel instead of seeds. Empty when no trainer has a movable seed.
inline std::optional<CostHistograms> gather_histograms(const ShareCosts& costs,
                                                       const LocalSplitOptions& o,
                                                       CollectiveGroup& group) {
  std::vector<std::int64_t> mine;  // (cost, count) pairs
  double my_total = costs.fixed;
  for (const auto& [c, pos] : costs.movable) {
    mine.push_back(c);
    mine.push_back(static_cast<std::int64_t>(pos.size()));
    my_total += static_cast<double>(c) * static_cast<double>(pos.size());
  }
  // Per trainer: the length of its pairs and its whole cost.
  std::vector<double> sizes(static_cast<std::size_t>(o.world) * 2, 0.0);
  sizes[static_cast<std::size_t>(o.rank) * 2] = static_cast<double>(mine.size());
  sizes[static_cast<std::size_t>(o.rank) * 2 + 1] = my_total;
  sizes = all_reduce_sum(group, sizes, o.timeout);
  double gathered = 0;
  for (std::size_t r = 0; r < sizes.size(); r += 2) gathered += sizes[r];
  if (gathered == 0) return std::nullopt;  // nothing may move
  const torch::Tensor all =
      all_gather_cat(group, torch::tensor(mine, torch::kLong), o.timeout).contiguous();
  CostHistograms h{
      .hist = std::vector<std::map<std::int64_t, std::int64_t>>(static_cast<std::size_t>(o.world)),
      .total = std::vector<double>(static_cast<std::size_t>(o.world))};
  const auto* flat = all.data_ptr<std::int64_t>();
  for (std::size_t r = 0, at_pos = 0; r < h.hist.size(); ++r) {
    const auto len = static_cast<std::size_t>(sizes[2 * r]);
    for (std::size_t k = 0; k + 1 < len; k += 2) h.hist[r][flat[at_pos + k]] = flat[at_pos + k + 1];
    at_pos += len;
    h.total[r] = sizes[2 * r + 1];
  }
  return h;
}

/// Seeds a trainer receives: `count` of them from `offset` among those leaving `origin`.
struct IncomingRun {
  std::int32_t origin;
  std::int64_t offset, count;
};

/// The plan's moves as one trainer sees them.
struct SeedMoves {
  std::vector<std::int64_t> outgoing;  ///< this trainer's seeds leaving it, in plan order
  std::vector<std::int64_t> sent;      ///< seeds leaving each origin
  std::vector<IncomingRun> incoming;   ///< this trainer's new seeds
};

/// Stage: seeds leaving their origin, by origin: for each trainer and cost (in order), its
/// runs from that origin. Every trainer lays them out alike, so each finds its own.
inline SeedMoves seed_moves(const std::vector<std::map<std::int64_t, std::vector<SeedRun>>>& plan,
                            const std::vector<std::int64_t>& ids, const ShareCosts& costs,
                            std::int32_t rank) {
  SeedMoves moves;
  moves.sent.assign(plan.size(), 0);
  for (std::size_t r = 0; r < plan.size(); ++r)
    for (const auto& [c, runs] : plan[r])
      for (const auto& s : runs) {
        if (s.origin == static_cast<std::int32_t>(r)) continue;
        if (s.origin == rank)
          for (std::int64_t k = 0; k < s.count; ++k)
            moves.outgoing.push_back(
                ids[costs.movable.at(c)[static_cast<std::size_t>(s.first + k)]]);
        if (static_cast<std::int32_t>(r) == rank)
          moves.incoming.push_back(
              {s.origin, moves.sent[static_cast<std::size_t>(s.origin)], s.count});
        moves.sent[static_cast<std::size_t>(s.origin)] += s.count;
      }
  return moves;
}

/// Stage: the new share, its own seeds that stayed (share order) then those that came
/// (`moved`: every trainer's outgoing seeds, by origin); it keeps the old share's size.
inline std::vector<std::int64_t> rebalanced_share(
    const std::vector<std::int64_t>& ids, const SplitLayout& at, const ShareCosts& costs,
    const std::map<std::int64_t, std::vector<SeedRun>>& kept, const SeedMoves& moves,
    const torch::Tensor& moved, std::int32_t rank) {
  std::vector<std::int64_t> origin_start(moves.sent.size() + 1, 0);
  for (std::size_t r = 0; r < moves.sent.size(); ++r)
    origin_start[r + 1] = origin_start[r] + moves.sent[r];
  std::vector<bool> stays(ids.size(), false);
  for (std::size_t i = 0; i < ids.size(); ++i) stays[i] = at.pinned(i);
  for (const auto& [c, runs] : kept)
    for (const auto& s : runs)
      if (s.origin == rank)
        for (std::int64_t k = 0; k < s.count; ++k)
          stays[costs.movable.at(c)[static_cast<std::size_t>(s.first + k)]] = true;
  std::vector<std::int64_t> out;
  out.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (stays[i]) out.push_back(ids[i]);
  const auto* m = moved.data_ptr<std::int64_t>();
  for (const auto& run : moves.incoming) {
    const std::int64_t base = origin_start[static_cast<std::size_t>(run.origin)] + run.offset;
    out.insert(out.end(), m + base, m + base + run.count);
  }
  if (out.size() != ids.size())
    throw InvalidArgument("local_train_share: the balanced share has " +
                          std::to_string(out.size()) + " seeds; expected " +
                          std::to_string(ids.size()));
  return out;
}

/// Stage: balance_shares' evening-out of costs done from counts: histograms are gathered,
/// every trainer computes the same plan, and only seeds that change trainer travel.
template <class Graph>
void balance_by_cost(const Graph& g, const LocalSplitOptions& o, const SplitLayout& at,
                     CollectiveGroup& group, std::vector<std::int64_t>& ids) {
  const ShareCosts costs = share_costs(g, ids, at, o.degree_cap);
  const std::optional<CostHistograms> h = gather_histograms(costs, o, group);
  if (!h) return;
  const auto plan = plan_balance(h->hist, h->total, o.tolerance);
  const SeedMoves moves = seed_moves(plan, ids, costs, o.rank);
  if (std::accumulate(moves.sent.begin(), moves.sent.end(), std::int64_t{0}) == 0)
    return;  // balanced
  const torch::Tensor moved =
      all_gather_cat(group, torch::tensor(moves.outgoing, torch::kLong), o.timeout).contiguous();
  ids = rebalanced_share(ids, at, costs, plan[static_cast<std::size_t>(o.rank)], moves, moved,
                         o.rank);
}

}  // namespace detail

/// This trainer's training seeds, split as node_split splits every training node over
/// `o.world` trainers (the same seeds, ordered by partition then ID, equal counts with the
/// fewest repeats), and with o.balance rebalanced by cost as balance_shares does, but from
/// counts: the trainer reads the training mask of its own partition (rank / (world /
/// partitions)) and of another partition only where its share runs into it, the trainers
/// all-reduce one count per partition and all-gather cost histograms, and only seeds that
/// change trainer travel. Collective over `group` (none: one trainer). Throws
/// InvalidArgument when o.world is not a multiple of the partitions (local_split_applies)
/// or the graph marks no training node.
template <class Graph>
LocalShare local_train_share(const Graph& g, const LocalSplitOptions& o, CollectiveGroup* group) {
  const std::int32_t parts = g.book().num_partitions();
  if (!local_split_applies(o.world, parts))
    throw InvalidArgument("local_train_share: " + std::to_string(o.world) + " trainers over " +
                          std::to_string(parts) + " partitions; expected a multiple");
  if (o.world > 1 && group == nullptr)
    throw InvalidArgument("local_train_share: " + std::to_string(o.world) +
                          " trainers need a group for their counts");
  const std::int32_t per_part = o.world / parts;
  const std::int32_t own = o.rank / per_part;
  // Count the own partition's training nodes, then agree all partitions' counts.
  std::int64_t rows_read = 0;
  std::vector<std::int64_t> own_ids = detail::partition_masked(g, o.mask, own, &rows_read);
  std::vector<std::int64_t> start =
      detail::agreed_starts(static_cast<std::int64_t>(own_ids.size()), parts, per_part, o, group);
  LocalShare out;
  out.total = start.back();
  if (out.total == 0)
    throw InvalidArgument("train: node data '" + o.mask + "' marks no training node");
  const detail::SplitLayout at = detail::split_layout(std::move(start), own, o);
  out.ids = detail::read_share(g, o.mask, at, std::move(own_ids), &rows_read);
  out.mask_rows_read = rows_read;
  if (!o.balance || o.world < 2) return out;
  if constexpr (requires(std::span<const std::int64_t> ids) { g.in_degrees(ids); })
    detail::balance_by_cost(g, o, at, *group, out.ids);
  return out;
}

}  // namespace distgraph

// node_split / edge_split: give every trainer the same number of training IDs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/ids.hpp"
#include "distgraph/partition/concepts.hpp"

namespace distgraph {

/// How the training set is divided.
struct SplitOptions {
  std::int32_t rank = 0;          ///< this trainer, in [0, num_trainers)
  std::int32_t num_trainers = 1;  ///< all trainers of the job, ranked machine-major
  /// Pad so every trainer gets exactly ceil(n / num_trainers) IDs (the first IDs of the
  /// ordered set are repeated, the fewest repeats possible). Off: the first n %
  /// num_trainers trainers get one more. Equal counts keep the gradient all-reduce in
  /// lock-step (no trainer waits on one that ran out of batches).
  bool force_even = true;
};

namespace detail {
template <class OwnerFn>
std::vector<std::int64_t> split_ids(std::span<const std::int64_t> ids, const SplitOptions& o,
                                    const char* what, OwnerFn owner_of) {
  if (o.num_trainers < 1)
    throw InvalidArgument(std::string(what) + ": num_trainers " + std::to_string(o.num_trainers) +
                          "; expected >= 1");
  if (o.rank < 0 || o.rank >= o.num_trainers)
    throw IdOutOfRange(std::string(what) + " rank", o.rank, 0, o.num_trainers);
  if (ids.empty()) throw InvalidArgument(std::string(what) + ": the training set is empty");
  // Order by owning partition, then ID: trainers are ranked machine-major and machine m
  // holds partition m, so contiguous chunks of this order fall mostly on each trainer's
  // own partition (its features are local).
  std::vector<std::int32_t> owner(ids.size());
  owner_of(ids, std::span<std::int32_t>(owner));
  std::vector<std::size_t> order(ids.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return owner[a] != owner[b] ? owner[a] < owner[b] : ids[a] < ids[b];
  });
  std::vector<std::int64_t> sorted(ids.size());
  for (std::size_t i = 0; i < order.size(); ++i) sorted[i] = ids[order[i]];
  const auto n = static_cast<std::int64_t>(sorted.size());
  const std::int64_t t = o.num_trainers, r = o.rank;
  std::int64_t begin = 0, end = 0;
  if (o.force_even) {
    const std::int64_t per = (n + t - 1) / t;
    begin = r * per;
    end = begin + per;
  } else {
    const std::int64_t base = n / t, extra = n % t;
    begin = r * base + std::min(r, extra);
    end = begin + base + (r < extra ? 1 : 0);
  }
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(end - begin));
  for (std::int64_t i = begin; i < end; ++i) out.push_back(sorted[static_cast<std::size_t>(i % n)]);
  return out;
}
}  // namespace detail

/// This trainer's share of the training nodes `train_ids` (global IDs, unique): equal
/// counts for all trainers (see SplitOptions::force_even), preferring nodes its own
/// machine's partition owns, and the same answer on every trainer (deterministic). The
/// union over all ranks is `train_ids` (plus the documented repeats). Throws
/// InvalidArgument for an empty set, IdOutOfRange for IDs outside the graph.
template <PartitionBook Book>
std::vector<std::int64_t> node_split(std::span<const std::int64_t> train_ids, const Book& book,
                                     const SplitOptions& options) {
  return detail::split_ids(train_ids, options, "node_split",
                           [&](auto ids, auto out) { book.node_partition(ids, out); });
}

/// Seeds of one node type, by type-wise ID (0 .. nodes of the type - 1), as DGL's
/// `node_split(mask, ntype=...)` takes them.
struct TypedIds {
  std::string ntype;
  std::vector<std::int64_t> ids;
};

/// The global IDs of typed seeds: `per_type_to_node` of each entry, concatenated in the
/// given order. Throws InvalidArgument naming an unknown node type (and listing the
/// known ones), IdOutOfRange for a type-wise ID outside its type.
template <PartitionBook Book>
std::vector<std::int64_t> typed_to_global(std::span<const TypedIds> seeds, const Book& book) {
  std::vector<std::int64_t> out;
  const auto& names = book.node_type_names();
  for (const auto& s : seeds) {
    const auto it = std::find(names.begin(), names.end(), s.ntype);
    if (it == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      throw InvalidArgument("node type '" + s.ntype + "': unknown; expected one of " + known);
    }
    const NodeType t(static_cast<std::int32_t>(it - names.begin()));
    std::vector<std::int64_t> g(s.ids.size());
    book.per_type_to_node(t, s.ids, g);
    out.insert(out.end(), g.begin(), g.end());
  }
  return out;
}

/// node_split over seeds of several node types in one call (DGL needs a call per type,
/// and trainers then differ in how many seeds of each type they get): the union is split
/// as one set, so every trainer gets the same count in total. Returns global IDs; use
/// the book's node_to_per_type to go back to (type, type-wise ID). Throws as
/// typed_to_global and node_split.
template <PartitionBook Book>
std::vector<std::int64_t> node_split(std::span<const TypedIds> seeds, const Book& book,
                                     const SplitOptions& options) {
  const auto ids = typed_to_global(seeds, book);
  return node_split(std::span<const std::int64_t>(ids), book, options);
}

/// Evens out the work of trainers' equal-sized shares (e.g. node_split's for every rank):
/// while the costliest and the cheapest share differ by more than `tolerance` of the mean,
/// the costliest gives its most expensive IDs for the cheapest one's least expensive, each
/// swap narrowing their gap without overshooting. Sizes stay (equal batch counts) and most
/// IDs stay where they were (locality). An ID listed more than once (force_even's padding
/// repeats the first IDs in the last share) never moves: a swap could put both copies in
/// one share, and a loader refuses a seed listed twice. `cost(id)` > 0; deterministic, so
/// every trainer computes the same shares. Why: with skewed degrees a partition's seeds can
/// cost half as much again to sample and train as another's, and the cheaper trainer idles
/// at every gradient all-reduce.
template <class Cost>
void balance_shares(std::vector<std::vector<std::int64_t>>& shares, Cost&& cost,
                    double tolerance = 0.005) {
  const std::size_t t = shares.size();
  if (t < 2) return;
  std::vector<std::int64_t> repeated;  // sorted IDs listed more than once
  {
    std::vector<std::int64_t> all;
    for (const auto& share : shares) all.insert(all.end(), share.begin(), share.end());
    std::sort(all.begin(), all.end());
    for (std::size_t i = 1; i < all.size(); ++i)
      if (all[i] == all[i - 1] && (repeated.empty() || repeated.back() != all[i]))
        repeated.push_back(all[i]);
  }
  const auto movable = [&](std::int64_t id) {
    return !std::binary_search(repeated.begin(), repeated.end(), id);
  };
  std::vector<std::vector<double>> c(t);
  std::vector<double> total(t, 0.0);
  for (std::size_t r = 0; r < t; ++r) {
    for (const std::int64_t id : shares[r]) c[r].push_back(static_cast<double>(cost(id)));
    for (const double x : c[r]) total[r] += x;
  }
  for (std::size_t round = 0; round < 4 * t * t; ++round) {
    const auto hi =
        static_cast<std::size_t>(std::max_element(total.begin(), total.end()) - total.begin());
    const auto lo =
        static_cast<std::size_t>(std::min_element(total.begin(), total.end()) - total.begin());
    const double mean = std::accumulate(total.begin(), total.end(), 0.0) / static_cast<double>(t);
    double gap = total[hi] - total[lo];
    if (hi == lo || gap <= tolerance * mean) return;
    const auto by_cost = [](const std::vector<double>& cs, bool descending) {
      std::vector<std::size_t> idx(cs.size());
      std::iota(idx.begin(), idx.end(), std::size_t{0});
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
        return descending ? cs[a] > cs[b] : cs[a] < cs[b];
      });
      return idx;
    };
    const auto dear = by_cost(c[hi], true), cheap = by_cost(c[lo], false);
    bool swapped = false;
    for (std::size_t i = 0, j = 0; i < dear.size() && j < cheap.size(); ++i) {
      while (j < cheap.size() && !movable(shares[lo][cheap[j]])) ++j;
      if (j == cheap.size()) break;
      if (!movable(shares[hi][dear[i]])) continue;
      const double d = c[hi][dear[i]] - c[lo][cheap[j]];
      if (d <= 0) break;          // nothing dearer left to give
      if (2 * d > gap) continue;  // would overshoot: try a cheaper one
      std::swap(shares[hi][dear[i]], shares[lo][cheap[j]]);
      std::swap(c[hi][dear[i]], c[lo][cheap[j]]);
      total[hi] -= d;
      total[lo] += d;
      gap -= 2 * d;
      swapped = true;
      ++j;
    }
    if (!swapped) return;
  }
}

/// The IDs where `mask` is true (mask[i] for global ID i), as node_split expects.
inline std::vector<std::int64_t> mask_to_ids(std::span<const bool> mask) {
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) ids.push_back(static_cast<std::int64_t>(i));
  return ids;
}

/// node_split for training edges (link prediction), by the edges' owners.
template <PartitionBook Book>
std::vector<std::int64_t> edge_split(std::span<const std::int64_t> train_eids, const Book& book,
                                     const SplitOptions& options) {
  return detail::split_ids(train_eids, options, "edge_split",
                           [&](auto ids, auto out) { book.edge_partition(ids, out); });
}

}  // namespace distgraph

// Block: a message-flow graph (DGL's block) and to_block, which compacts a frontier into one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/sampling/frontier.hpp"
#include "distgraph/sampling/id_hash_map.hpp"

namespace distgraph {

/// One layer of message flow from `src_nodes` to the first `num_dst` of them. Source
/// positions are local: `src_nodes[j]` is the global ID of source j, and the destination
/// nodes come first in their given order (so destination i is also source i), then the
/// other sources in order of first appearance. Edges are a CSR by destination: the edges
/// into destination i are `indices[indptr[i] .. indptr[i+1])` (source positions) with
/// global edge IDs `eid[...]` (DGL's `block.srcdata[NID]`, `block.edata[EID]`).
struct Block {
  std::vector<std::int64_t> src_nodes;
  std::int64_t num_dst = 0;
  std::vector<std::int64_t> indptr;   ///< num_dst + 1 offsets
  std::vector<std::int64_t> indices;  ///< source position of each edge, in [0, num_src())
  std::vector<std::int64_t> eid;      ///< global edge ID of each edge; empty if sampled without

  std::int64_t num_src() const noexcept { return static_cast<std::int64_t>(src_nodes.size()); }
  std::int64_t num_edges() const noexcept { return static_cast<std::int64_t>(indices.size()); }
  /// Global IDs of the destination nodes (the first num_dst sources).
  std::span<const std::int64_t> dst_nodes() const noexcept {
    return std::span<const std::int64_t>(src_nodes).first(static_cast<std::size_t>(num_dst));
  }
};

namespace detail {

/// Throws IdOutOfRange naming `subject` for the first negative ID: global IDs are >= 0
/// and the hash map reserves -1.
inline void check_non_negative(std::span<const std::int64_t> ids, const std::string& subject) {
  std::int64_t bad = 0;
  for (const std::int64_t x : ids) bad |= x;  // sign bit set iff some ID is negative
  if (bad >= 0) return;
  for (const std::int64_t x : ids)
    if (x < 0) throw IdOutOfRange(subject, x, 0, std::numeric_limits<std::int64_t>::max());
}

}  // namespace detail

/// Compacts `f` into a Block whose destinations are `dst_nodes` (DGL's `to_block(frontier,
/// dst_nodes)`): edges into each destination keep their frontier order, and sources that
/// are not destinations are numbered in the order they first appear in `f`. O(edges +
/// destinations) expected, through an open-addressing hash map.
///
/// A frontier without edge IDs (EdgeIds::omitted) gives a block without them.
///
/// Throws ShapeError when f's arrays differ in length, IdOutOfRange for a negative ID, and
/// InvalidArgument when a destination is listed twice or an edge's destination is not in
/// `dst_nodes`; all before building anything.
inline Block to_block(const Frontier& f, std::span<const std::int64_t> dst_nodes) {
  const bool with_eid = !f.eid.empty();
  if (f.dst.size() != f.src.size() || (with_eid && f.eid.size() != f.src.size()))
    throw ShapeError("frontier", "src, dst, eid have " + std::to_string(f.src.size()) + ", " +
                                     std::to_string(f.dst.size()) + ", " +
                                     std::to_string(f.eid.size()) +
                                     " entries; expected equal (or no edge IDs)");
  detail::check_non_negative(dst_nodes, "dst node");
  detail::check_non_negative(f.src, "frontier src");
  detail::check_non_negative(f.dst, "frontier dst");

  const auto num_dst = static_cast<std::int64_t>(dst_nodes.size());
  const std::size_t m = f.src.size();
  // Sampled sources repeat (hubs, shared neighbours), so start at a quarter of the edges
  // and let the map double: sizing for every edge would clear 4x the memory up front.
  detail::IdHashMap local(dst_nodes.size() + m / 4);
  Block b;
  b.num_dst = num_dst;
  for (std::int64_t i = 0; i < num_dst; ++i) {
    const std::int64_t v = dst_nodes[static_cast<std::size_t>(i)];
    if (local.insert(v, i) != i)
      throw InvalidArgument("to_block: dst node " + std::to_string(v) + " listed twice (at " +
                            std::to_string(local.find(v)) + " and " + std::to_string(i) +
                            "); expected distinct destinations");
  }
  // A sampler's frontier lists each destination's edges together: one look-up per run of
  // them (destinations first, while the map holds only them), and a counting sort by
  // destination that moves whole runs lays the edges out as a CSR, stable in frontier
  // order.
  struct Run {
    std::int64_t pos;  // the destination's position
    std::size_t end;   // one past the run's last edge
  };
  std::vector<Run> runs;
  runs.reserve(std::min(dst_nodes.size(), m));
  b.indptr.assign(static_cast<std::size_t>(num_dst) + 1, 0);
  for (std::size_t e = 0; e < m;) {
    const std::int64_t v = f.dst[e];
    std::size_t end = e + 1;
    while (end < m && f.dst[end] == v) ++end;
    const std::int64_t d = local.find(v);
    if (d == detail::IdHashMap::absent)
      throw InvalidArgument("to_block: edge " + std::to_string(e) + " goes to node " +
                            std::to_string(v) + "; expected one of the " + std::to_string(num_dst) +
                            " dst nodes");
    b.indptr[static_cast<std::size_t>(d) + 1] += static_cast<std::int64_t>(end - e);
    runs.push_back({d, end});
    e = end;
  }
  for (std::size_t i = 0; i < static_cast<std::size_t>(num_dst); ++i)
    b.indptr[i + 1] += b.indptr[i];
  std::vector<std::int64_t> next(b.indptr.begin(), b.indptr.end() - 1);
  b.indices.resize(m);
  if (with_eid) b.eid.resize(m);
  // The other sources, in order of first appearance, go to a plain array and join the
  // destinations at the end, so nothing in the per-edge loop below can reallocate and the
  // compiler keeps its state in registers. With the per-run slots: 5-8% less time a block
  // (a /tmp microbenchmark of 60,700-edge frontiers into 5,441 destinations, skewed
  // sources, caches swept between calls; PERFORMANCE.md, session 32).
  auto fresh = std::make_unique_for_overwrite<std::int64_t[]>(m);
  std::int64_t next_src = num_dst;
  std::int64_t* const indices = b.indices.data();
  const std::int64_t* const src = f.src.data();
  // Sources land anywhere in a table larger than the caches the model's step leaves warm:
  // asking for the slot 8 sources ahead cut this loop's time by 12% (R-MAT 18's partition,
  // 52,000 edges, caches swept between calls).
  constexpr std::size_t ahead = 8;
  std::size_t e = 0;
  for (const Run& r : runs) {
    auto& slot = next[static_cast<std::size_t>(r.pos)];
    std::int64_t at = slot;
    slot += static_cast<std::int64_t>(r.end - e);
    if (with_eid)
      std::copy(f.eid.begin() + static_cast<std::ptrdiff_t>(e),
                f.eid.begin() + static_cast<std::ptrdiff_t>(r.end),
                b.eid.begin() + static_cast<std::ptrdiff_t>(at));
    for (; e < r.end; ++e, ++at) {
      if (e + ahead < m) local.prefetch(src[e + ahead]);
      const std::int64_t s = local.insert(src[e], next_src);
      if (s == next_src) fresh[static_cast<std::size_t>(next_src++ - num_dst)] = src[e];
      indices[at] = s;
    }
  }
  b.src_nodes.reserve(static_cast<std::size_t>(next_src));
  b.src_nodes.assign(dst_nodes.begin(), dst_nodes.end());
  b.src_nodes.insert(b.src_nodes.end(), fresh.get(), fresh.get() + (next_src - num_dst));
  return b;
}

/// Renumbers `b`'s sources that are not destinations so that they come grouped by
/// `group[j]` (the group of source num_dst + j, in [0, num_groups)), ascending, keeping
/// their order within a group; destinations and the edges' (source, destination) pairs
/// stay as they were. Why: a batch's input rows are fetched per owner, and an owner's
/// rows written to one run of the batch instead of slots scattered among the other
/// owners' copy faster (a run is written front to back: 65 against 88 ns a 400-byte row,
/// PERFORMANCE.md, session 31) and arrive as one block. Throws ShapeError unless `group`
/// has one entry per such source, IdOutOfRange for a group outside [0, num_groups).
inline void group_sources(Block& b, std::span<const std::int32_t> group, std::int32_t num_groups) {
  const auto d = static_cast<std::size_t>(b.num_dst);
  const std::size_t n = b.src_nodes.size() - d;
  if (group.size() != n)
    throw ShapeError("group_sources", std::to_string(group.size()) + " groups for " +
                                          std::to_string(n) +
                                          " sources that are not destinations; expected one each");
  bool sorted = true;
  std::int32_t top = 0;  // the largest group present: counts are kept for those only
  for (std::size_t j = 0; j < n; ++j) {
    const std::int32_t g = group[j];
    if (g < 0 || g >= num_groups) throw IdOutOfRange("source group", g, 0, num_groups);
    top = std::max(top, g);
    sorted = sorted && (j == 0 || group[j - 1] <= g);
  }
  if (sorted) return;  // one group, or grouped already
  std::vector<std::int64_t> start(static_cast<std::size_t>(top) + 2, 0);
  for (std::size_t j = 0; j < n; ++j) ++start[static_cast<std::size_t>(group[j]) + 1];
  for (std::size_t g = 0; g + 1 < start.size(); ++g) start[g + 1] += start[g];
  // to[i]: the new position of source i (destinations stay), so that every edge is
  // renumbered by one look-up without a branch (which half the edges would mispredict).
  std::vector<std::int64_t> to(b.src_nodes.size());
  std::vector<std::int64_t> src(b.src_nodes.size());
  for (std::size_t i = 0; i < d; ++i) {
    to[i] = static_cast<std::int64_t>(i);
    src[i] = b.src_nodes[i];
  }
  for (std::size_t j = 0; j < n; ++j) {
    const auto k = d + static_cast<std::size_t>(start[static_cast<std::size_t>(group[j])]++);
    to[d + j] = static_cast<std::int64_t>(k);
    src[k] = b.src_nodes[d + j];
  }
  for (std::int64_t& s : b.indices) s = to[static_cast<std::size_t>(s)];
  b.src_nodes = std::move(src);
}

}  // namespace distgraph

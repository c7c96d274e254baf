// Parallel COO -> CSR/CSC builder (counting sort) and build_graph with cleaning options.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/parallel.hpp"
#include "distgraph/graph/coo.hpp"
#include "distgraph/graph/csr.hpp"
#include "distgraph/graph/graph.hpp"
#include "distgraph/graph/type_map.hpp"

namespace distgraph {

/// How build_graph cleans the edge list. Any cleaning option renumbers edges (see Graph).
struct BuildOptions {
  bool remove_self_loops = false;  ///< drop edges (v, v)
  bool remove_duplicates = false;  ///< keep one edge per (src, dst) pair
  /// Add (v, u) for every edge (u, v), self loops included (DGL's add_reverse_edges);
  /// combine with remove_duplicates for a simple undirected graph.
  bool symmetrize = false;
  unsigned num_threads = 0;  ///< 0 = hardware threads
};

namespace detail {

/// An owned buffer of `n` uninitialised elements: the builder writes every element, and
/// skipping value-initialisation saves one full pass over the output (and lets the first
/// touch happen in the parallel writers).
template <class T>
Buffer<T> uninit_buffer(std::size_t n) {
  std::shared_ptr<T[]> p(new T[n]);
  T* data = p.get();
  return Buffer<T>(std::move(p), data, n);
}

/// Exclusive prefix sum of `counts[0..n)` into `offsets[0..n]` (offsets[n] = total), in
/// parallel: per-chunk sums, a serial scan over chunks, then per-chunk scans.
/// `counts` and `offsets` may not alias.
inline void exclusive_scan(const std::int64_t* counts, std::int64_t n, std::int64_t* offsets,
                           unsigned num_threads) {
  const unsigned chunks = plan_chunks(0, n, num_threads, 1 << 16);
  std::vector<std::int64_t> sums(chunks + 1, 0);
  parallel_chunks(
      0, n, num_threads,
      [&](unsigned c, std::int64_t b, std::int64_t e) {
        std::int64_t s = 0;
        for (std::int64_t i = b; i < e; ++i) s += counts[i];
        sums[c + 1] = s;
      },
      1 << 16);
  for (unsigned c = 0; c < chunks; ++c) sums[c + 1] += sums[c];
  parallel_chunks(
      0, n, num_threads,
      [&](unsigned c, std::int64_t b, std::int64_t e) {
        std::int64_t s = sums[c];
        for (std::int64_t i = b; i < e; ++i) {
          offsets[i] = s;
          s += counts[i];
        }
      },
      1 << 16);
  offsets[n] = sums[chunks];
}

/// Row boundaries splitting `[0, num_rows)` into `parts` ranges of near-equal edge counts,
/// so skewed (power-law) rows do not leave one thread with most of the work.
inline std::vector<std::int64_t> balanced_row_splits(const std::int64_t* indptr,
                                                     std::int64_t num_rows, unsigned parts) {
  std::vector<std::int64_t> splits(parts + 1, num_rows);
  splits[0] = 0;
  const std::int64_t m = indptr[num_rows];
  for (unsigned p = 1; p < parts; ++p) {
    // m / parts * p + remainder share, without overflowing for any edge count.
    const std::int64_t target = m / parts * p + (m % parts) * p / parts;
    splits[p] = std::lower_bound(indptr, indptr + num_rows, target) - indptr;
    splits[p] = std::max(splits[p], splits[p - 1]);
  }
  return splits;
}

/// Runs `fn(row_begin, row_end)` over edge-balanced row ranges on `num_threads` threads.
template <class Fn>
void parallel_rows(const std::int64_t* indptr, std::int64_t num_rows, unsigned num_threads,
                   Fn&& fn) {
  if (num_threads == 0) num_threads = default_num_threads();
  const auto parts = static_cast<unsigned>(std::max<std::int64_t>(
      1, std::min<std::int64_t>(num_threads, (indptr[num_rows] + num_rows) >> 14)));
  const auto splits = balanced_row_splits(indptr, num_rows, parts);
  parallel_chunks(
      0, parts, parts,
      [&](unsigned, std::int64_t b, std::int64_t e) {
        for (std::int64_t p = b; p < e; ++p)
          fn(splits[static_cast<std::size_t>(p)], splits[static_cast<std::size_t>(p) + 1]);
      },
      1);
}

/// Number of bits needed for values in [0, x].
inline int bit_width_of(std::int64_t x) noexcept {
  int bits = 0;
  while (bits < 63 && (std::int64_t{1} << bits) <= x) ++bits;
  return bits;
}

/// Sorts the `n` entries of one row by (column, edge ID), moving both arrays together.
/// Rows are short on average (insertion sort), a few are huge: there, when column and
/// edge ID fit together in 64 bits (`eid_bits` >= 0), one packed-key std::sort, which
/// measured ~2x faster than sorting pairs on R-MAT hubs; otherwise pairs.
inline void sort_row(std::int64_t* cols, std::int64_t* eids, std::int64_t n, int eid_bits,
                     std::vector<std::uint64_t>& keys,
                     std::vector<std::pair<std::int64_t, std::int64_t>>& pairs) {
  std::int64_t i = 1;
  while (i < n && (cols[i - 1] < cols[i] || (cols[i - 1] == cols[i] && eids[i - 1] <= eids[i])))
    ++i;
  if (i >= n) return;
  if (n <= 48) {
    for (; i < n; ++i) {
      const std::int64_t c = cols[i], e = eids[i];
      std::int64_t j = i;
      while (j > 0 && (cols[j - 1] > c || (cols[j - 1] == c && eids[j - 1] > e))) {
        cols[j] = cols[j - 1];
        eids[j] = eids[j - 1];
        --j;
      }
      cols[j] = c;
      eids[j] = e;
    }
    return;
  }
  const auto nz = static_cast<std::size_t>(n);
  if (eid_bits >= 0) {
    const std::uint64_t mask = eid_bits == 64 ? ~0ull : (std::uint64_t{1} << eid_bits) - 1;
    keys.resize(nz);
    for (std::size_t k = 0; k < nz; ++k)
      keys[k] =
          (static_cast<std::uint64_t>(cols[k]) << eid_bits) | static_cast<std::uint64_t>(eids[k]);
    std::sort(keys.begin(), keys.end());
    for (std::size_t k = 0; k < nz; ++k) {
      cols[k] = static_cast<std::int64_t>(eid_bits == 64 ? 0 : keys[k] >> eid_bits);
      eids[k] = static_cast<std::int64_t>(keys[k] & mask);
    }
    return;
  }
  pairs.resize(nz);
  for (std::size_t k = 0; k < nz; ++k) pairs[k] = {cols[k], eids[k]};
  std::sort(pairs.begin(), pairs.end());
  for (std::size_t k = 0; k < nz; ++k) {
    cols[k] = pairs[k].first;
    eids[k] = pairs[k].second;
  }
}

/// Per-chunk row histograms (chunk-major, `chunks` x `num_rows`) to absolute scatter
/// positions: afterwards hist[c][r] = indptr[r] + (row-r entries of chunks < c), and
/// `indptr` (num_rows + 1) holds the row offsets.
inline void histograms_to_offsets(std::vector<std::int64_t>& hist, unsigned chunks,
                                  std::int64_t num_rows, std::int64_t* indptr,
                                  unsigned num_threads) {
  const auto n = static_cast<std::size_t>(num_rows);
  std::vector<std::int64_t> degree(n);
  parallel_chunks(
      0, num_rows, num_threads,
      [&](unsigned, std::int64_t b, std::int64_t e) {
        std::fill(degree.begin() + b, degree.begin() + e, 0);
        for (unsigned c = 0; c < chunks; ++c) {
          std::int64_t* h = hist.data() + static_cast<std::size_t>(c) * n;
          for (std::int64_t r = b; r < e; ++r) {
            const std::int64_t k = h[r];
            h[r] = degree[static_cast<std::size_t>(r)];
            degree[static_cast<std::size_t>(r)] += k;
          }
        }
      },
      1 << 14);
  exclusive_scan(degree.data(), num_rows, indptr, num_threads);
  parallel_chunks(
      0, num_rows, num_threads,
      [&](unsigned, std::int64_t b, std::int64_t e) {
        for (unsigned c = 0; c < chunks; ++c) {
          std::int64_t* h = hist.data() + static_cast<std::size_t>(c) * n;
          for (std::int64_t r = b; r < e; ++r) h[r] += indptr[r];
        }
      },
      1 << 14);
}

/// Histogram chunks for `m` entries over `num_rows` rows: one per thread, fewer when the
/// chunks * num_rows words of histograms would outweigh the entries themselves.
inline unsigned histogram_chunks(std::int64_t m, std::int64_t num_rows, unsigned num_threads) {
  const unsigned chunks = plan_chunks(0, m, num_threads, 1 << 16);
  return static_cast<unsigned>(std::max<std::int64_t>(
      1, std::min<std::int64_t>(chunks, 1 + m / std::max<std::int64_t>(1, num_rows))));
}

/// Counting sort of the entries (rows[i], cols[i], edge_ids[i] or i), i in [0, m), plus,
/// when `reversed`, the entries (cols[i], rows[i], same edge ID) at i + m. Each row is then
/// sorted by (column, edge ID), so the result is canonical and independent of chunking.
inline Csr build_csr_unchecked(std::int64_t num_rows, std::int64_t num_cols,
                               std::span<const std::int64_t> rows,
                               std::span<const std::int64_t> cols,
                               std::span<const std::int64_t> edge_ids, unsigned num_threads,
                               bool reversed = false) {
  if (num_threads == 0) num_threads = default_num_threads();
  const auto m = static_cast<std::int64_t>(rows.size());
  const std::int64_t total = reversed ? 2 * m : m;
  const auto n = static_cast<std::size_t>(num_rows);
  Csr out;
  out.num_rows = num_rows;
  out.num_cols = num_cols;
  out.indptr = uninit_buffer<std::int64_t>(n + 1);
  out.indices = uninit_buffer<std::int64_t>(static_cast<std::size_t>(total));
  out.edge_ids = uninit_buffer<std::int64_t>(static_cast<std::size_t>(total));

  // One histogram per chunk of entries: chunk c's entries of row r go to
  // [indptr[r] + before(c, r), ...), where before(c, r) counts row-r entries of chunks < c.
  // That places each row's entries in input order without atomics.
  const unsigned chunks = histogram_chunks(total, num_rows, num_threads);
  std::vector<std::int64_t> hist(static_cast<std::size_t>(chunks) * n, 0);
  const std::int64_t* r_in = rows.data();
  const std::int64_t* c_in = cols.data();
  const std::int64_t* e_in = edge_ids.empty() ? nullptr : edge_ids.data();
  const ChunkPlan plan{0, total, chunks};
  // Calls fn(row, col, edge_id) for the entries in [b, e) of the (possibly doubled) list.
  const auto for_entries = [&](std::int64_t b, std::int64_t e, auto&& fn) {
    for (std::int64_t i = b; i < std::min(e, m); ++i) fn(r_in[i], c_in[i], e_in ? e_in[i] : i);
    for (std::int64_t i = std::max(b, m); i < e; ++i) {
      const std::int64_t k = i - m;
      fn(c_in[k], r_in[k], e_in ? e_in[k] : k);
    }
  };
  parallel_chunks(
      0, chunks, chunks,
      [&](unsigned, std::int64_t cb, std::int64_t ce) {
        for (auto c = static_cast<unsigned>(cb); c < static_cast<unsigned>(ce); ++c) {
          std::int64_t* h = hist.data() + static_cast<std::size_t>(c) * n;
          for_entries(plan.chunk_begin(c), plan.chunk_begin(c + 1),
                      [h](std::int64_t r, std::int64_t, std::int64_t) { ++h[r]; });
        }
      },
      1);
  std::int64_t* indptr = out.indptr.data();
  histograms_to_offsets(hist, chunks, num_rows, indptr, num_threads);
  std::int64_t* idx = out.indices.data();
  std::int64_t* eid = out.edge_ids.data();
  parallel_chunks(
      0, chunks, chunks,
      [&](unsigned, std::int64_t cb, std::int64_t ce) {
        for (auto c = static_cast<unsigned>(cb); c < static_cast<unsigned>(ce); ++c) {
          std::int64_t* h = hist.data() + static_cast<std::size_t>(c) * n;
          for_entries(plan.chunk_begin(c), plan.chunk_begin(c + 1),
                      [h, idx, eid](std::int64_t r, std::int64_t col, std::int64_t id) {
                        const std::int64_t p = h[r]++;
                        idx[p] = col;
                        eid[p] = id;
                      });
        }
      },
      1);
  hist.clear();
  hist.shrink_to_fit();

  // Pack (column, edge ID) into one key when both fit, for faster sorts of hub rows.
  int eid_bits = bit_width_of(std::max<std::int64_t>(0, m - 1));
  if (e_in != nullptr) {
    const auto [lo, hi] = std::minmax_element(e_in, e_in + m);
    eid_bits = m == 0 ? 0 : (*lo < 0 ? 64 : bit_width_of(*hi));
  }
  if (eid_bits + bit_width_of(std::max<std::int64_t>(0, num_cols - 1)) > 63) eid_bits = -1;
  parallel_rows(indptr, num_rows, num_threads, [&](std::int64_t b, std::int64_t e) {
    std::vector<std::uint64_t> keys;
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
    for (std::int64_t r = b; r < e; ++r)
      sort_row(idx + indptr[r], eid + indptr[r], indptr[r + 1] - indptr[r], eid_bits, keys, pairs);
  });
  return out;
}

/// The transpose of `c` (a CSR becomes the CSC of the same edges and back), by one
/// stable counting sort: row v of the result lists the old rows that point to v in
/// increasing order and, within one old row, in old position order, so a sorted input
/// gives a sorted output without any further sort.
inline Csr transpose(const Csr& c, unsigned num_threads) {
  if (num_threads == 0) num_threads = default_num_threads();
  const std::int64_t m = c.num_edges();
  const auto n = static_cast<std::size_t>(c.num_cols);
  Csr out;
  out.num_rows = c.num_cols;
  out.num_cols = c.num_rows;
  out.indptr = uninit_buffer<std::int64_t>(n + 1);
  out.indices = uninit_buffer<std::int64_t>(static_cast<std::size_t>(m));
  out.edge_ids = uninit_buffer<std::int64_t>(static_cast<std::size_t>(m));
  // Chunks are ranges of old rows with near-equal entry counts.
  const unsigned chunks = histogram_chunks(m, c.num_cols, num_threads);
  const std::int64_t* indptr = c.indptr.data();
  const auto splits = balanced_row_splits(indptr, c.num_rows, chunks);
  const std::int64_t* idx = c.indices.data();
  const std::int64_t* eid = c.edge_ids.data();
  std::vector<std::int64_t> hist(static_cast<std::size_t>(chunks) * n, 0);
  parallel_chunks(
      0, chunks, chunks,
      [&](unsigned, std::int64_t cb, std::int64_t ce) {
        for (auto k = static_cast<std::size_t>(cb); k < static_cast<std::size_t>(ce); ++k) {
          std::int64_t* h = hist.data() + k * n;
          for (std::int64_t i = indptr[splits[k]]; i < indptr[splits[k + 1]]; ++i) ++h[idx[i]];
        }
      },
      1);
  histograms_to_offsets(hist, chunks, c.num_cols, out.indptr.data(), num_threads);
  std::int64_t* o_idx = out.indices.data();
  std::int64_t* o_eid = out.edge_ids.data();
  parallel_chunks(
      0, chunks, chunks,
      [&](unsigned, std::int64_t cb, std::int64_t ce) {
        for (auto k = static_cast<std::size_t>(cb); k < static_cast<std::size_t>(ce); ++k) {
          std::int64_t* h = hist.data() + k * n;
          for (std::int64_t r = splits[k]; r < splits[k + 1]; ++r)
            for (std::int64_t i = indptr[r]; i < indptr[r + 1]; ++i) {
              const std::int64_t p = h[idx[i]]++;
              o_idx[p] = r;
              o_eid[p] = eid[i];
            }
        }
      },
      1);
  return out;
}

/// Source of every entry of `c` (row IDs expanded from indptr).
inline Buffer<std::int64_t> expand_rows(const Csr& c, unsigned num_threads) {
  auto rows = uninit_buffer<std::int64_t>(static_cast<std::size_t>(c.num_edges()));
  const std::int64_t* indptr = c.indptr.data();
  std::int64_t* out = rows.data();
  parallel_rows(indptr, c.num_rows, num_threads, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) std::fill(out + indptr[r], out + indptr[r + 1], r);
  });
  return rows;
}

/// The cleaned edges of one edge type as a CSR by source whose edge IDs are 0, 1, ... in
/// (src, dst) order. Compacts in place: every allocation here is first-touched memory,
/// which dominated the build on the VM we measured on (first-touch memcpy ~0.65 GB/s,
/// touched ~33 GB/s; see bench_graph).
inline Csr clean_edges(std::int64_t num_nodes, std::span<const std::int64_t> src,
                       std::span<const std::int64_t> dst, const BuildOptions& opts) {
  const unsigned threads = opts.num_threads == 0 ? default_num_threads() : opts.num_threads;
  Csr out = build_csr_unchecked(num_nodes, num_nodes, src, dst, {}, threads, opts.symmetrize);

  // Rows are sorted by column, so duplicates are adjacent: keep an entry unless it is a
  // dropped self loop or repeats the previous column. Each part compacts its rows to the
  // front of its own range (no overlap with other parts), then parts move down in order.
  std::int64_t* indptr = out.indptr.data();
  std::int64_t* idx = out.indices.data();
  const std::int64_t m = out.num_edges();
  const unsigned parts =
      std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(1 + m / (1 << 16))));
  const auto splits = balanced_row_splits(indptr, num_nodes, parts);
  const auto n = static_cast<std::size_t>(num_nodes);
  std::vector<std::int64_t> kept(n);
  std::vector<std::int64_t> part_kept(parts);
  parallel_chunks(
      0, parts, parts,
      [&](unsigned, std::int64_t pb, std::int64_t pe) {
        for (auto p = static_cast<std::size_t>(pb); p < static_cast<std::size_t>(pe); ++p) {
          std::int64_t w = indptr[splits[p]];
          for (std::int64_t r = splits[p]; r < splits[p + 1]; ++r) {
            const std::int64_t w0 = w;
            for (std::int64_t i = indptr[r]; i < indptr[r + 1]; ++i) {
              const std::int64_t col = idx[i];
              if (opts.remove_self_loops && col == r) continue;
              if (opts.remove_duplicates && i > indptr[r] && col == idx[i - 1]) continue;
              idx[w++] = col;
            }
            kept[static_cast<std::size_t>(r)] = w - w0;
          }
          part_kept[p] = w - indptr[splits[p]];
        }
      },
      1);
  // Reads idx[i - 1] above are safe: within one part, writes never pass reads (w <= i), and
  // the previous-entry check only looks inside the same row.
  std::int64_t at = 0;
  for (std::size_t p = 0; p < parts; ++p) {
    const std::int64_t from = indptr[splits[p]];
    if (from != at) std::memmove(idx + at, idx + from, static_cast<std::size_t>(part_kept[p]) * 8);
    at += part_kept[p];
  }
  exclusive_scan(kept.data(), num_nodes, indptr, threads);
  const std::int64_t kept_m = indptr[n];
  if (kept_m != m) {
    out.indices = out.indices.slice(0, static_cast<std::size_t>(kept_m));
    out.edge_ids = out.edge_ids.slice(0, static_cast<std::size_t>(kept_m));
  }
  std::int64_t* eid = out.edge_ids.data();
  parallel_chunks(0, kept_m, threads, [&](unsigned, std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) eid[i] = i;
  });
  return out;
}

}  // namespace detail

/// Builds a CSR with `num_rows` rows from the entries (rows[i], cols[i]), edge ID
/// `edge_ids[i]` (or i when `edge_ids` is empty). Each row lists its entries sorted by
/// column, then edge ID; the result does not depend on `num_threads` (0 = hardware).
/// Pass (src, dst) for a CSR by source, (dst, src) for a CSC by destination. Counting sort:
/// O(E + T * num_rows) time and T * num_rows extra words for T chunks. Throws ShapeError on
/// mismatched lengths, IdOutOfRange naming "rows" or "cols" and the first bad value.
/// Blocks until done.
inline Csr build_csr(std::int64_t num_rows, std::int64_t num_cols,
                     std::span<const std::int64_t> rows, std::span<const std::int64_t> cols,
                     std::span<const std::int64_t> edge_ids = {}, unsigned num_threads = 0) {
  if (num_rows < 0 || num_cols < 0)
    throw ShapeError("build_csr", "shape (" + std::to_string(num_rows) + ", " +
                                      std::to_string(num_cols) + "); expected non-negative");
  if (rows.size() != cols.size())
    throw ShapeError("build_csr", "rows has " + std::to_string(rows.size()) + " ids, cols has " +
                                      std::to_string(cols.size()) + "; expected equal lengths");
  if (!edge_ids.empty() && edge_ids.size() != rows.size())
    throw ShapeError("build_csr", "edge_ids has " + std::to_string(edge_ids.size()) + " ids for " +
                                      std::to_string(rows.size()) +
                                      " edges; expected equal lengths or none");
  detail::check_ids_in_range(rows, num_rows, "rows", num_threads);
  detail::check_ids_in_range(cols, num_cols, "cols", num_threads);
  return detail::build_csr_unchecked(num_rows, num_cols, rows, cols, edge_ids, num_threads);
}

/// Builds a typed graph (CSR by source and CSC by destination) from `coo`, whose edges are
/// grouped by edge type as `types` declares (edge type t = input positions
/// `types.edge_range(t)`). Edge IDs follow the rule documented on Graph; with cleaning
/// options each edge type is cleaned on its own and `types` gets the new edge counts.
/// Throws ShapeError if `coo` disagrees with `types` in node or edge count or src/dst
/// lengths, IdOutOfRange naming "src"/"dst" (or the edge type whose endpoint lies outside
/// its node type's range) and the value, InvalidArgument when symmetrizing an edge type
/// whose source and destination node types differ. Blocks; deterministic in the input.
inline Graph build_graph(const Coo& coo, TypeMap types, BuildOptions opts = {}) {
  const unsigned threads = opts.num_threads;
  coo.validate(threads);
  if (types.num_nodes() != coo.num_nodes)
    throw ShapeError("type map", std::to_string(types.num_nodes()) + " nodes; the coo has " +
                                     std::to_string(coo.num_nodes));
  if (types.num_edges() != coo.num_edges())
    throw ShapeError("type map", std::to_string(types.num_edges()) + " edges; the coo has " +
                                     std::to_string(coo.num_edges()));
  const std::int64_t n = coo.num_nodes;
  const auto src = coo.src.span();
  const auto dst = coo.dst.span();
  // With one node type every endpoint in [0, n) is in its type's range; coo.validate
  // already checked that, so only typed graphs pay for this second pass.
  if (types.num_node_types() > 1) {
    for (std::int32_t t = 0; t < types.num_edge_types(); ++t) {
      const auto& c = types.edge_type(EdgeType(t));
      const IdRange er = types.edge_range(EdgeType(t));
      const IdRange sr = types.node_range(types.node_type(c.src_type));
      const IdRange dr = types.node_range(types.node_type(c.dst_type));
      const std::string label = TypeMap::edge_type_label(c);
      for (std::int64_t i = er.begin; i < er.end; ++i) {
        const auto k = static_cast<std::size_t>(i);
        if (src[k] < sr.begin || src[k] >= sr.end)
          throw IdOutOfRange("src of edge type " + label, src[k], sr.begin, sr.end);
        if (dst[k] < dr.begin || dst[k] >= dr.end)
          throw IdOutOfRange("dst of edge type " + label, dst[k], dr.begin, dr.end);
      }
    }
  }
  Graph g;
  if (!opts.remove_self_loops && !opts.remove_duplicates && !opts.symmetrize) {
    g.out = detail::build_csr_unchecked(n, n, src, dst, {}, threads);
    g.in = detail::transpose(g.out, threads);
    g.types = std::move(types);
    return g;
  }
  if (opts.symmetrize)
    for (const auto& c : types.edge_types())
      if (c.src_type != c.dst_type)
        throw InvalidArgument("edge type " + TypeMap::edge_type_label(c) +
                              ": cannot symmetrize; expected equal source and destination "
                              "node types");

  // Clean type by type so every edge type keeps one contiguous edge-ID range.
  std::vector<Csr> cleaned;
  std::vector<std::int64_t> counts;
  std::int64_t total = 0;
  for (std::int32_t t = 0; t < types.num_edge_types(); ++t) {
    const IdRange er = types.edge_range(EdgeType(t));
    const auto b = static_cast<std::size_t>(er.begin);
    const auto len = static_cast<std::size_t>(er.size());
    cleaned.push_back(detail::clean_edges(n, src.subspan(b, len), dst.subspan(b, len), opts));
    counts.push_back(cleaned.back().num_edges());
    total += counts.back();
  }
  if (cleaned.size() == 1) {
    g.out = std::move(cleaned.front());
  } else {
    auto all_src = detail::uninit_buffer<std::int64_t>(static_cast<std::size_t>(total));
    auto all_dst = detail::uninit_buffer<std::int64_t>(static_cast<std::size_t>(total));
    std::int64_t at = 0;
    for (auto& c : cleaned) {
      const auto s = detail::expand_rows(c, threads);
      std::copy(s.begin(), s.end(), all_src.begin() + at);
      std::copy(c.indices.begin(), c.indices.end(), all_dst.begin() + at);
      at += c.num_edges();
      c = Csr{};
    }
    g.out = detail::build_csr_unchecked(n, n, all_src.span(), all_dst.span(), {}, threads);
  }
  // The out-CSR is sorted by (src, dst, edge ID); its stable transpose is the CSC sorted by
  // (dst, src, edge ID), the same edges with the same IDs.
  g.in = detail::transpose(g.out, threads);
  std::vector<std::int64_t> node_counts;
  for (std::int32_t t = 0; t < types.num_node_types(); ++t)
    node_counts.push_back(types.num_nodes(NodeType(t)));
  g.types = TypeMap(types.node_type_names(), std::move(node_counts), types.edge_types(),
                    std::move(counts));
  return g;
}

/// Builds a homogeneous graph (one node type "_N", one edge type "_E"); see the typed
/// overload for edge IDs, errors and blocking.
inline Graph build_graph(const Coo& coo, BuildOptions opts = {}) {
  return build_graph(coo, TypeMap::homogeneous(coo.num_nodes, coo.num_edges()), opts);
}

}  // namespace distgraph

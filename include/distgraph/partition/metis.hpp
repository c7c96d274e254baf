// The one boundary to METIS (min-edge-cut k-way partitioning), plus random assignment.
#pragma once

#include <metis.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/parallel.hpp"
#include "distgraph/partition/detail/checks.hpp"

namespace distgraph {

/// Options for metis_partition. Designated initialisers: `{.num_parts = 4, .seed = 7}`.
struct MetisOptions {
  /// Number of parts, in [1, num_nodes].
  std::int64_t num_parts = 2;
  /// Empty (every node weighs 1) or num_nodes * ncon non-negative weights, row-major:
  /// weight c of node v is vertex_weights[v * ncon + c]. Each constraint is balanced
  /// separately (e.g. one 0/1 column per node type, or train/val/test, plus degree).
  std::span<const std::int64_t> vertex_weights = {};
  /// Balance constraints per node; 0 derives it as vertex_weights.size() / num_nodes.
  int ncon = 0;
  /// METIS's random seed (folded into 31 bits). Same seed and input, same result.
  std::uint64_t seed = 0;
  /// Allowed load imbalance per constraint, max part weight / average: 1.03 is METIS's
  /// ufactor 30. At least 1.001.
  double imbalance = 1.03;
  /// Ask METIS for connected parts (fails with PartitionError on a disconnected graph).
  bool contiguous = false;
};

/// What metis_partition returns.
struct MetisResult {
  /// parts[v] in [0, num_parts) for every node v.
  std::vector<std::int32_t> parts;
  /// Undirected edges whose endpoints lie in different parts, as METIS reports it on the
  /// simplified graph (self loops and duplicate entries dropped).
  std::int64_t edge_cut = 0;
};

namespace detail {

// METIS 5.1's idx_t is 32-bit on Debian; every narrowing goes through this check.
inline constexpr std::int64_t metis_idx_max = std::numeric_limits<idx_t>::max();

inline const char* metis_status_name(int status) {
  switch (status) {
    case METIS_OK:
      return "METIS_OK";
    case METIS_ERROR_INPUT:
      return "METIS_ERROR_INPUT";
    case METIS_ERROR_MEMORY:
      return "METIS_ERROR_MEMORY";
    case METIS_ERROR:
      return "METIS_ERROR";
    default:
      return "an unknown METIS status";
  }
}

// Checks a CSR adjacency: indptr has num_nodes + 1 entries, starts at 0, never decreases
// and ends at indices.size(); every index is a node ID.
inline void check_csr(const char* call, std::int64_t num_nodes,
                      std::span<const std::int64_t> indptr, std::span<const std::int64_t> indices) {
  if (indptr.size() != static_cast<std::size_t>(num_nodes) + 1)
    throw ShapeError(std::string(call) + " indptr",
                     std::to_string(indptr.size()) +
                         " entries; expected num_nodes + 1 = " + std::to_string(num_nodes + 1));
  if (indptr[0] != 0)
    throw InvalidArgument(std::string(call) + " indptr[0]: " + std::to_string(indptr[0]) +
                          "; expected 0");
  for (std::size_t v = 0; v < static_cast<std::size_t>(num_nodes); ++v)
    if (indptr[v + 1] < indptr[v])
      throw InvalidArgument(std::string(call) + " indptr[" + std::to_string(v + 1) + "]: " +
                            std::to_string(indptr[v + 1]) + " < indptr[" + std::to_string(v) +
                            "] = " + std::to_string(indptr[v]) + "; expected non-decreasing");
  if (indptr.back() != static_cast<std::int64_t>(indices.size()))
    throw ShapeError(std::string(call) + " indices",
                     std::to_string(indices.size()) +
                         " entries; expected indptr[num_nodes] = " + std::to_string(indptr.back()));
  check_ids([&] { return std::string(call) + " indices (node id)"; }, indices, 0, num_nodes);
}

// Serialises METIS calls: METIS installs process-wide signal handlers around each call
// (GKlib's gk_sigtrap), which concurrent calls would restore out of order.
inline std::mutex& metis_mutex() {
  static std::mutex m;
  return m;
}

// Checks num_parts, num_nodes, imbalance and the vertex weights as metis_partition
// documents; returns the number of constraints.
inline std::int64_t check_metis_options(const char* call, std::int64_t num_nodes,
                                        const MetisOptions& options) {
  const std::int64_t nparts = options.num_parts;
  if (nparts < 1)
    throw InvalidArgument(std::string(call) + ": num_parts " + std::to_string(nparts) +
                          "; expected at least 1");
  if (num_nodes < 0)
    throw InvalidArgument(std::string(call) + ": num_nodes " + std::to_string(num_nodes) +
                          "; expected non-negative");
  if (nparts > num_nodes)
    throw InvalidArgument(std::string(call) + ": num_parts " + std::to_string(nparts) +
                          " exceeds num_nodes " + std::to_string(num_nodes) +
                          "; expected 1 <= num_parts <= num_nodes");
  if (nparts > 1 && num_nodes > metis_idx_max)
    throw PartitionError(std::string(call) + ": " + std::to_string(num_nodes) +
                         " nodes; METIS's 32-bit idx_t allows at most " +
                         std::to_string(metis_idx_max));
  if (!(options.imbalance >= 1.001 && options.imbalance <= 1000.0))
    throw InvalidArgument(std::string(call) + ": imbalance " + std::to_string(options.imbalance) +
                          "; expected a ratio in [1.001, 1000]");

  std::int64_t ncon = options.ncon;
  const auto& w = options.vertex_weights;
  if (ncon < 0)
    throw InvalidArgument(std::string(call) + ": ncon " + std::to_string(ncon) +
                          "; expected 0 (derive) or a positive count");
  if (ncon == 0) ncon = w.empty() ? 1 : static_cast<std::int64_t>(w.size()) / num_nodes;
  if (!w.empty() && (ncon < 1 || static_cast<std::int64_t>(w.size()) != num_nodes * ncon))
    throw ShapeError(std::string(call) + " vertex_weights",
                     std::to_string(w.size()) + " entries; expected num_nodes * ncon = " +
                         std::to_string(num_nodes) + " * " + std::to_string(ncon));
  if (w.empty() && ncon != 1)
    throw InvalidArgument(std::string(call) + ": ncon " + std::to_string(ncon) +
                          " without vertex_weights; expected ncon = 1 or num_nodes * ncon weights");
  std::vector<std::int64_t> weight_sums(static_cast<std::size_t>(ncon), 0);
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (w[i] < 0)
      throw InvalidArgument(std::string(call) + " vertex_weights[" + std::to_string(i) +
                            "]: " + std::to_string(w[i]) + "; expected non-negative");
    auto& sum = weight_sums[i % static_cast<std::size_t>(ncon)];
    sum += std::min(w[i], metis_idx_max + 1);  // saturates: no int64 overflow
    if (sum > metis_idx_max)
      throw PartitionError(std::string(call) + ": constraint " + std::to_string(i % ncon) +
                           " weighs more than METIS's 32-bit idx_t allows (" +
                           std::to_string(metis_idx_max) + ")");
  }
  return ncon;
}

// Throws PartitionError unless `directed_edges` adjacency entries fit METIS's idx_t.
inline void check_metis_edges(const char* call, std::int64_t directed_edges) {
  if (directed_edges > metis_idx_max)
    throw PartitionError(std::string(call) + ": " + std::to_string(directed_edges) +
                         " directed edges (self loops dropped); METIS's 32-bit idx_t allows at "
                         "most " +
                         std::to_string(metis_idx_max));
}

// METIS_PartGraphKway on a checked 32-bit adjacency: symmetric, sorted rows, no self loops
// or duplicates; options checked by check_metis_options (which returned `ncon`).
inline MetisResult metis_kway(const char* call, std::int64_t num_nodes, std::vector<idx_t>& xadj,
                              std::vector<idx_t>& adjncy, std::int64_t ncon,
                              const MetisOptions& options) {
  const auto n = static_cast<std::size_t>(num_nodes);
  const std::int64_t nparts = options.num_parts;
  if (nparts == 1) return {std::vector<std::int32_t>(n, 0), 0};  // METIS dies of SIGFPE on it
  const auto& w = options.vertex_weights;
  std::vector<idx_t> vwgt(w.size());
  std::transform(w.begin(), w.end(), vwgt.begin(),
                 [](std::int64_t x) { return static_cast<idx_t>(x); });

  idx_t opts[METIS_NOPTIONS];
  METIS_SetDefaultOptions(opts);
  opts[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
  opts[METIS_OPTION_NUMBERING] = 0;
  opts[METIS_OPTION_SEED] = static_cast<idx_t>((options.seed ^ (options.seed >> 31)) &
                                               static_cast<std::uint64_t>(metis_idx_max));
  opts[METIS_OPTION_UFACTOR] = static_cast<idx_t>(std::lround((options.imbalance - 1.0) * 1000.0));
  opts[METIS_OPTION_CONTIG] = options.contiguous ? 1 : 0;

  idx_t nvtxs = static_cast<idx_t>(num_nodes), ncon32 = static_cast<idx_t>(ncon),
        np = static_cast<idx_t>(nparts), cut = 0;
  std::vector<idx_t> part(n, 0);
  int status = 0;
  {
    std::lock_guard<std::mutex> lock(metis_mutex());
    status = METIS_PartGraphKway(&nvtxs, &ncon32, xadj.data(), adjncy.data(),
                                 vwgt.empty() ? nullptr : vwgt.data(), nullptr, nullptr, &np,
                                 nullptr, nullptr, opts, &cut, part.data());
  }
  if (status != METIS_OK)
    throw PartitionError(
        std::string(call) + ": METIS_PartGraphKway returned " + metis_status_name(status) + " (" +
        std::to_string(status) + ") for " + std::to_string(num_nodes) + " nodes, " +
        std::to_string(adjncy.size() / 2) + " edges, " + std::to_string(nparts) + " parts" +
        (options.contiguous ? ", contiguous" : "") + "; expected METIS_OK");
  MetisResult result;
  result.parts.assign(part.begin(), part.end());
  result.edge_cut = cut;
  return result;
}

}  // namespace detail

/// Partitions an undirected graph into `options.num_parts` parts with METIS's k-way
/// min-edge-cut (METIS_PartGraphKway, OBJTYPE_CUT). `indptr`/`indices` is a CSR adjacency
/// that stores every undirected edge in both directions; self loops and duplicate entries
/// are dropped (METIS would reject them). Builds a 32-bit copy, so peak extra memory is
/// about 4 * (num_nodes + num_edges) bytes plus METIS's own (several times that).
///
/// Throws InvalidArgument for num_parts outside [1, num_nodes], bad options or weights, a
/// non-monotone indptr, or an asymmetric adjacency (naming an edge without its reverse);
/// ShapeError for mismatched lengths; IdOutOfRange for an index outside [0, num_nodes);
/// PartitionError when the graph exceeds METIS's 32-bit idx_t (more than 2^31 - 1 nodes,
/// directed edges or total weight) or METIS returns an error status. One part is answered
/// without METIS (which dies of SIGFPE on it). METIS may leave a part empty when
/// num_nodes is close to num_parts. Blocking, single-threaded; thread-safe (METIS calls
/// are serialised).
inline MetisResult metis_partition(std::int64_t num_nodes, std::span<const std::int64_t> indptr,
                                   std::span<const std::int64_t> indices,
                                   const MetisOptions& options) {
  const char* call = "metis_partition";
  const std::int64_t ncon = detail::check_metis_options(call, num_nodes, options);
  detail::check_csr(call, num_nodes, indptr, indices);
  if (options.num_parts == 1)
    return {std::vector<std::int32_t>(static_cast<std::size_t>(num_nodes), 0), 0};

  // 32-bit copy without self loops and duplicates; rows sorted so the symmetry check
  // below is a binary search.
  const auto n = static_cast<std::size_t>(num_nodes);
  std::int64_t kept = 0;
  for (std::size_t v = 0; v < n; ++v)
    for (auto e = indptr[v]; e < indptr[v + 1]; ++e)
      kept += indices[static_cast<std::size_t>(e)] != static_cast<std::int64_t>(v);
  detail::check_metis_edges(call, kept);
  std::vector<idx_t> xadj(n + 1, 0);
  std::vector<idx_t> adjncy;
  adjncy.reserve(static_cast<std::size_t>(kept));
  for (std::size_t v = 0; v < n; ++v) {
    const auto row_begin = adjncy.end() - adjncy.begin();
    for (auto e = indptr[v]; e < indptr[v + 1]; ++e) {
      const std::int64_t u = indices[static_cast<std::size_t>(e)];
      if (u != static_cast<std::int64_t>(v)) adjncy.push_back(static_cast<idx_t>(u));
    }
    const auto first = adjncy.begin() + row_begin;
    std::sort(first, adjncy.end());
    adjncy.erase(std::unique(first, adjncy.end()), adjncy.end());
    xadj[v + 1] = static_cast<idx_t>(adjncy.size());
  }
  // METIS assumes symmetry and misbehaves silently (or crashes) without it.
  for (std::size_t v = 0; v < n; ++v)
    for (auto e = xadj[v]; e < xadj[v + 1]; ++e) {
      const auto u = static_cast<std::size_t>(adjncy[static_cast<std::size_t>(e)]);
      const auto b = adjncy.begin() + xadj[u], end = adjncy.begin() + xadj[u + 1];
      if (!std::binary_search(b, end, static_cast<idx_t>(v)))
        throw InvalidArgument(std::string(call) + ": edge " + std::to_string(v) + " -> " +
                              std::to_string(u) + " has no reverse " + std::to_string(u) + " -> " +
                              std::to_string(v) +
                              "; expected a symmetric adjacency (add reverse edges first)");
    }
  return detail::metis_kway(call, num_nodes, xadj, adjncy, ncon, options);
}

namespace detail {

/// metis_partition for an adjacency that is symmetric, without self loops and without
/// duplicates by construction, given row by row: `row(v, emit)` calls `emit(u)` for each
/// neighbour u of v in increasing order. The 32-bit arrays METIS reads are built straight
/// from the rows in two parallel passes (count, fill) on `num_threads` threads, skipping
/// metis_partition's 64-bit input, copy, sort and symmetry check (on R-MAT scale 20 they
/// cost several seconds and 250 MB). Throws as metis_partition does for options and sizes.
template <class RowFn>
MetisResult metis_partition_rows(std::int64_t num_nodes, RowFn&& row, const MetisOptions& options,
                                 unsigned num_threads) {
  const char* call = "metis_partition";
  const std::int64_t ncon = check_metis_options(call, num_nodes, options);
  const auto n = static_cast<std::size_t>(num_nodes);
  if (options.num_parts == 1) return {std::vector<std::int32_t>(n, 0), 0};
  std::vector<std::int64_t> offsets(n + 1, 0);
  parallel_chunks(0, num_nodes, num_threads, [&](unsigned, std::int64_t b, std::int64_t e) {
    for (std::int64_t v = b; v < e; ++v) {
      std::int64_t c = 0;
      row(v, [&c](std::int64_t) { ++c; });
      offsets[static_cast<std::size_t>(v) + 1] = c;
    }
  });
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  check_metis_edges(call, offsets.back());
  std::vector<idx_t> xadj(n + 1);
  std::vector<idx_t> adjncy(static_cast<std::size_t>(offsets.back()));
  parallel_chunks(0, num_nodes, num_threads, [&](unsigned, std::int64_t b, std::int64_t e) {
    for (std::int64_t v = b; v < e; ++v) {
      auto pos = static_cast<std::size_t>(offsets[static_cast<std::size_t>(v)]);
      xadj[static_cast<std::size_t>(v)] = static_cast<idx_t>(pos);
      row(v, [&](std::int64_t u) { adjncy[pos++] = static_cast<idx_t>(u); });
    }
  });
  xadj[n] = static_cast<idx_t>(offsets.back());
  offsets = {};
  return metis_kway(call, num_nodes, xadj, adjncy, ncon, options);
}

}  // namespace detail

/// Undirected edges cut by `parts`: the adjacency entries (v, u) with parts[v] != parts[u],
/// halved. For a symmetric adjacency (each undirected edge stored both ways, as
/// metis_partition takes it) that counts each cut edge once; for an adjacency storing each
/// edge once, double the result. Parallel over `num_threads` (0 = all) with a
/// deterministic result. Throws ShapeError, InvalidArgument or IdOutOfRange for bad input.
inline std::int64_t edge_cut(std::span<const std::int64_t> indptr,
                             std::span<const std::int64_t> indices,
                             std::span<const std::int32_t> parts, unsigned num_threads = 0) {
  const auto num_nodes = static_cast<std::int64_t>(parts.size());
  if (indptr.empty())
    throw ShapeError("edge_cut indptr",
                     "0 entries; expected num_nodes + 1 = " + std::to_string(num_nodes + 1));
  detail::check_csr("edge_cut", num_nodes, indptr, indices);
  const unsigned chunks = plan_chunks(0, num_nodes, num_threads, 1 << 12);
  std::vector<std::int64_t> sums(chunks, 0);
  parallel_chunks(
      0, num_nodes, num_threads,
      [&](unsigned c, std::int64_t b, std::int64_t e) {
        std::int64_t s = 0;
        for (auto v = b; v < e; ++v) {
          const std::int32_t pv = parts[static_cast<std::size_t>(v)];
          for (auto k = indptr[static_cast<std::size_t>(v)];
               k < indptr[static_cast<std::size_t>(v) + 1]; ++k)
            s += parts[static_cast<std::size_t>(indices[static_cast<std::size_t>(k)])] != pv;
        }
        sums[c] = s;
      },
      1 << 12);
  return std::accumulate(sums.begin(), sums.end(), std::int64_t{0}) / 2;
}

/// A balanced random assignment of `num_nodes` nodes to `num_parts` parts: the first
/// num_nodes % num_parts parts get ceil(num_nodes / num_parts) nodes, the others floor,
/// in an order shuffled by `seed`. Reproducible: the same arguments give the same result on
/// every run, platform and thread count (a fixed SplitMix64 stream drives a Fisher-Yates
/// shuffle, independent of the standard library's distributions). Throws InvalidArgument
/// for num_parts outside [1, num_nodes] (as metis_partition does).
inline std::vector<std::int32_t> random_partition(std::int64_t num_nodes, std::int64_t num_parts,
                                                  std::uint64_t seed) {
  if (num_parts < 1 || num_nodes < 0 || num_parts > num_nodes ||
      num_parts > std::numeric_limits<std::int32_t>::max())
    throw InvalidArgument("random_partition: num_parts " + std::to_string(num_parts) +
                          " for num_nodes " + std::to_string(num_nodes) +
                          "; expected 1 <= num_parts <= num_nodes and num_parts < 2^31");
  const auto n = static_cast<std::size_t>(num_nodes);
  std::vector<std::int32_t> parts(n);
  for (std::size_t i = 0; i < n; ++i)
    parts[i] = static_cast<std::int32_t>(i % static_cast<std::size_t>(num_parts));
  std::uint64_t state = seed;
  auto next = [&state] {  // SplitMix64 (Steele, Lea, Flood 2014)
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  for (std::size_t i = n; i > 1; --i) {
    // Modulo bias is below i / 2^64: immaterial for any array that fits in memory.
    const auto j = static_cast<std::size_t>(next() % i);
    std::swap(parts[i - 1], parts[j]);
  }
  return parts;
}

}  // namespace distgraph

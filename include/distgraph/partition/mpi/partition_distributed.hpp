// partition_distributed: partition a graph that no single process holds, as MPI ranks
// that each read (or generate) a share of it, partition it with PT-Scotch or Zoltan between them
// and write the partitions they own in partition_graph's format (docs/FORMATS.md).
//
// The steps (each rank; "owner" of an input node ID = the rank whose contiguous block of
// input IDs holds it, "writer" of a partition = the rank that writes it):
//   1. read its edge chunks (or generate its R-MAT streams) and send each edge to the
//      owner of its destination: every rank then holds the in-edges of its block (CSC);
//   2. build PT-Scotch's distributed graph (symmetrised, no loops or repeats) and
//      partition it into K parts (or deal nodes at random);
//   3. relabel: partition-major new IDs, input-ID order inside a partition (as
//      partition_graph); the new ID of every edge's source is asked of its owner;
//   4. send each node's in-edges and data rows to its partition's writer, which sorts
//      them into the partition's CSC, gathers halo nodes (and, for more hops, their
//      in-edges) from the other writers, and writes the files into a staging folder;
//   5. once every rank has written, each writer moves its partitions into place and the
//      first rank of every host writes the config: last, as the "complete" marker.
// Exchanges go through MPI_Alltoallv in bounded pieces (mpi/comm.hpp). Bad input found
// while reading fails every rank before anything is written (mpi::all_or_none).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/half.hpp"
#include "distgraph/core/progress.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/io/chunked.hpp"
#include "distgraph/io/npy_row_file.hpp"
#include "distgraph/partition/mpi/comm.hpp"
#include "distgraph/partition/mpi/ptscotch.hpp"
#if DISTGRAPH_HAVE_ZOLTAN
#include "distgraph/partition/mpi/zoltan.hpp"
#endif
#include "distgraph/partition/partition_config.hpp"
#include "distgraph/partition/partition_graph.hpp"

namespace distgraph {

/// The graph partition_distributed partitions: a chunked graph folder, or R-MAT generated
/// by the ranks between them (symmetrised, without self loops or repeated edges: the graph
/// `distgraph partition --input rmat:S` builds in one process).
struct DistPartitionInput {
  std::filesystem::path chunked;
  std::optional<RmatOptions> rmat;
};

/// The distributed partitioners behind --method metis: PT-Scotch's k-way, or Zoltan's
/// parallel hypergraph partitioner (PHG) on the graph; zoltan needs a build with
/// DISTGRAPH_HAVE_ZOLTAN (CMake's distgraph::zoltan, from libtrilinos-zoltan-dev).
enum class DistPartitioner { ptscotch, zoltan };

/// The partitioner named `name` ("ptscotch", "zoltan"), or nullopt.
inline std::optional<DistPartitioner> dist_partitioner_from_name(std::string_view name) {
  if (name == "ptscotch") return DistPartitioner::ptscotch;
  if (name == "zoltan") return DistPartitioner::zoltan;
  return std::nullopt;
}

/// Options of partition_distributed; those partition_graph has mean the same.
struct DistPartitionOptions {
  /// metis: a minimum edge cut by `partitioner` (PT-Scotch's k-way or Zoltan's PHG)
  PartMethod method = PartMethod::metis;
  int halo_hops = 1;
  /// Balance train/val/test/other nodes (from the masks) across partitions: random deals
  /// each class on its own; PT-Scotch, which balances one vertex weight, is followed by a
  /// pass that moves the lowest-degree nodes of over-full classes to the partitions short
  /// of them.
  bool balance_train = false;
  /// Balance in-degree sums: PT-Scotch's vertex weight becomes 1 + in-degree.
  bool balance_edges = false;
  DType feat_dtype = DType::float32;
  std::uint64_t seed = 0;
  /// The partitioner's allowed imbalance, and the hubs' and node counts' after it.
  double imbalance = 0.03;
  /// PT-Scotch's preset (`--scotch-strategy`): see PERFORMANCE.md, "Partitioning over MPI",
  /// for what each costs and cuts on R-MAT.
  mpi::ScotchStrategy scotch_strategy = mpi::ScotchStrategy::speed;
  /// Which library computes --method metis's minimum-cut partition (`--partitioner`).
  DistPartitioner partitioner = DistPartitioner::ptscotch;
  /// Nodes of more neighbours than this (0: 16 x the mean degree, at least 64) are left out
  /// of the partitioner's graph and join the partition most of their neighbours are in.
  /// Every rank holds every hub's votes (hubs x parts), so a low value costs memory.
  std::int64_t hub_degree = 0;
  Progress* progress = nullptr;  ///< stage reporting (give it on one rank); null = silent
};

/// What partition_distributed did: the summary partition_graph gives (every rank has it),
/// and each rank's peak memory.
struct DistPartitionResult {
  PartitionResult summary;
  std::vector<std::int64_t> peak_rss_per_rank;
  /// The input nodes and in-edges each rank's block held (the blocks balance nodes +
  /// in-edges; a rank's memory follows them).
  std::vector<std::int64_t> block_nodes_per_rank, block_edges_per_rank;
  std::vector<std::int32_t> writer_of_part;  ///< the rank that wrote each partition
  std::int64_t num_ranks = 1;
};

namespace detail::dist {

/// An edge on its way to its partition's writer: new destination and source IDs and the
/// input edge ID (later replaced by nothing: the new edge ID is its position).
struct EdgeRecord {
  std::int64_t dst, src, eid;
};

/// A generated edge on its way to its destination's owner (R-MAT: no input edge ID yet).
struct Arc {
  std::int64_t dst, src;
};

/// A node on its way to its partition's writer.
struct NodeRecord {
  std::int64_t nid, orig;
};

/// A contiguous block distribution of [0, n) over `size` ranks.
struct Blocks {
  std::vector<std::int64_t> start;  ///< size + 1 offsets
  Blocks(std::int64_t n, int size) : start(even_bounds(n, size)) {}
  explicit Blocks(std::vector<std::int64_t> offsets) : start(std::move(offsets)) {}
  int owner(std::int64_t v) const {
    return static_cast<int>(std::upper_bound(start.begin(), start.end(), v) - start.begin()) - 1;
  }
  std::int64_t first(int r) const { return start[static_cast<std::size_t>(r)]; }
  std::int64_t count(int r) const {
    return start[static_cast<std::size_t>(r) + 1] - start[static_cast<std::size_t>(r)];
  }
};

/// Counts of in-edges per bucket of node IDs: the input to balanced_blocks. Bucket b holds
/// IDs [b * width, (b + 1) * width); at most 2^16 buckets.
struct InEdgeHistogram {
  std::int64_t n = 0, width = 1;
  std::vector<std::int64_t> count;
  explicit InEdgeHistogram(std::int64_t nodes)
      : n(nodes), width(std::max<std::int64_t>(1, (nodes + 65535) / 65536)) {
    count.assign(static_cast<std::size_t>((n + width - 1) / width), 0);
  }
  void add(std::int64_t dst) { ++count[static_cast<std::size_t>(dst / width)]; }
};

/// Blocks whose ranks hold about the same nodes + in-edges (a rank's memory is mostly its
/// block's in-edges: on R-MAT, even blocks left the rank holding the hubs 1.7x the mean),
/// cut at bucket edges from every rank's histogram `h`. Every rank gets at least one
/// bucket where there are as many buckets as ranks: PT-Scotch fails on a rank without
/// vertices, and one heavy bucket would otherwise leave the ranks after it empty.
/// Collective.
inline Blocks balanced_blocks(const mpi::Comm& c, const InEdgeHistogram& h) {
  std::vector<std::int64_t> all(h.count);
  c.sum(all);
  const auto B = static_cast<std::int64_t>(all.size());
  const auto P = static_cast<std::size_t>(c.size);
  auto nodes_in = [&](std::int64_t b) { return std::min(h.n, (b + 1) * h.width) - b * h.width; };
  std::int64_t total = 0;
  for (std::int64_t b = 0; b < B; ++b) total += all[static_cast<std::size_t>(b)] + nodes_in(b);
  // first[r]: the first bucket of rank r; rank r starts once the ranks before it hold their
  // share (total * r / size, compared exactly).
  std::vector<std::int64_t> first(P + 1, B);
  first[0] = 0;
  std::int64_t acc = 0;
  std::size_t r = 1;
  for (std::int64_t b = 0; b < B && r < P; ++b) {
    acc += all[static_cast<std::size_t>(b)] + nodes_in(b);
    while (r < P && static_cast<__int128>(acc) * c.size >= static_cast<__int128>(total) * r)
      first[r++] = b + 1;
  }
  if (B >= c.size) {
    for (std::size_t i = 1; i < P; ++i) first[i] = std::max(first[i], first[i - 1] + 1);
    for (std::size_t i = P - 1; i >= 1; --i) first[i] = std::min(first[i], first[i + 1] - 1);
  }
  std::vector<std::int64_t> start(P + 1);
  for (std::size_t i = 0; i <= P; ++i) start[i] = std::min(h.n, first[i] * h.width);
  return Blocks(std::move(start));
}

/// The in-edges of a rank's block of input node IDs, as a CSC.
struct InEdges {
  std::int64_t first = 0, count = 0;
  std::vector<std::int64_t> indptr;  ///< count + 1
  std::vector<std::int64_t> src;     ///< input IDs of the sources, sorted per row
  std::vector<std::int64_t> eid;     ///< input edge IDs; empty: eid_base + position
  std::int64_t eid_base = 0;
  bool simple_symmetric = false;  ///< the CSC is symmetric, loop- and repeat-free (R-MAT)
  std::int64_t edge_id(std::size_t k) const {
    return eid.empty() ? eid_base + static_cast<std::int64_t>(k) : eid[k];
  }
  /// In-degree of row v.
  std::int64_t degree(std::int64_t v) const {
    return indptr[static_cast<std::size_t>(v) + 1] - indptr[static_cast<std::size_t>(v)];
  }
};

/// Groups positions [0, n) by `dest(i)` in [0, size): the positions in order per rank, and
/// size + 1 offsets.
template <class Dest>
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> group_by_rank(std::int64_t n,
                                                                              int size,
                                                                              Dest&& dest) {
  std::vector<std::int64_t> off(static_cast<std::size_t>(size) + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) ++off[static_cast<std::size_t>(dest(i)) + 1];
  for (std::size_t r = 0; r < static_cast<std::size_t>(size); ++r) off[r + 1] += off[r];
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::vector<std::int64_t> at(off.begin(), off.end() - 1);
  for (std::int64_t i = 0; i < n; ++i)
    order[static_cast<std::size_t>(at[static_cast<std::size_t>(dest(i))]++)] = i;
  return {std::move(order), std::move(off)};
}

/// Per-rank counts from group_by_rank's offsets.
inline std::vector<std::int64_t> counts_of(const std::vector<std::int64_t>& off) {
  std::vector<std::int64_t> c(off.size() - 1);
  for (std::size_t r = 0; r + 1 < off.size(); ++r) c[r] = off[r + 1] - off[r];
  return c;
}

/// Sends, for each rank d, the records `make(order[i])` for i in d's run of `order`.
template <class T, class Make>
std::vector<T> send_grouped(const mpi::Comm& c, const std::vector<std::int64_t>& order,
                            const std::vector<std::int64_t>& off, Make&& make,
                            std::vector<std::int64_t>* from = nullptr) {
  std::vector<std::int64_t> at(off.begin(), off.end() - 1);
  return mpi::exchange_records<T>(
      c, counts_of(off), 1,
      [&](int d, T* out, std::int64_t k) {
        auto& i = at[static_cast<std::size_t>(d)];
        for (std::int64_t j = 0; j < k; ++j) out[j] = make(order[static_cast<std::size_t>(i++)]);
      },
      from);
}

/// Builds an InEdges from the rank block's (destination, source[, edge ID]) records, sorted.
template <class Record>
InEdges in_edges_from(const std::vector<Record>& records, std::int64_t first, std::int64_t count) {
  constexpr bool with_eid = std::is_same_v<Record, EdgeRecord>;
  InEdges g;
  g.first = first;
  g.count = count;
  g.indptr.assign(static_cast<std::size_t>(count) + 1, 0);
  g.src.resize(records.size());
  if constexpr (with_eid) g.eid.resize(records.size());
  for (std::size_t k = 0; k < records.size(); ++k) {
    ++g.indptr[static_cast<std::size_t>(records[k].dst - first) + 1];
    g.src[k] = records[k].src;
    if constexpr (with_eid) g.eid[k] = records[k].eid;
  }
  for (std::size_t v = 0; v < static_cast<std::size_t>(count); ++v) g.indptr[v + 1] += g.indptr[v];
  return g;
}

/// Step 1 from a chunked folder: this rank's edge chunks, sent to the destinations' owners,
/// whose blocks (`nodes`, set here) balance nodes + in-edges. Collective.
inline InEdges read_in_edges(const mpi::Comm& c, const ChunkedGraph& g, Blocks& nodes) {
  const auto chunks = even_bounds(g.num_edge_chunks(), c.size);
  std::vector<std::int64_t> src, dst, eid;
  mpi::all_or_none(c, [&] {
    for (auto k = chunks[static_cast<std::size_t>(c.rank)];
         k < chunks[static_cast<std::size_t>(c.rank) + 1]; ++k) {
      const auto [s, d] = read_edge_chunk(g, k);  // IdOutOfRange names the file
      src.insert(src.end(), s.begin(), s.end());
      dst.insert(dst.end(), d.begin(), d.end());
      for (std::int64_t i = g.edge_bounds[static_cast<std::size_t>(k)];
           i < g.edge_bounds[static_cast<std::size_t>(k) + 1]; ++i)
        eid.push_back(i);
    }
  });
  InEdgeHistogram hist(g.num_nodes);
  for (const auto v : dst) hist.add(v);
  nodes = balanced_blocks(c, hist);
  const auto [order, off] =
      group_by_rank(static_cast<std::int64_t>(dst.size()), c.size,
                    [&](std::int64_t i) { return nodes.owner(dst[static_cast<std::size_t>(i)]); });
  auto records = send_grouped<EdgeRecord>(c, order, off, [&](std::int64_t i) {
    const auto k = static_cast<std::size_t>(i);
    return EdgeRecord{dst[k], src[k], eid[k]};
  });
  src = {};
  dst = {};
  eid = {};
  std::sort(records.begin(), records.end(), [](const EdgeRecord& a, const EdgeRecord& b) {
    return a.dst != b.dst ? a.dst < b.dst : a.src != b.src ? a.src < b.src : a.eid < b.eid;
  });
  return in_edges_from(records, nodes.first(c.rank), nodes.count(c.rank));
}

/// Step 1 for R-MAT: this rank's random streams, each edge (u, v) without loops sent both
/// ways to the owners of blocks (`nodes`, set here) that balance nodes + in-edges; repeats
/// dropped at the owner. Streams are generated again for each destination
/// rather than held: memory stays at what the owner receives.
inline InEdges generate_in_edges(const mpi::Comm& c, const RmatOptions& r, Blocks& nodes) {
  const auto streams = even_bounds(rmat_num_streams(r), c.size);
  const auto k0 = streams[static_cast<std::size_t>(c.rank)];
  const auto k1 = streams[static_cast<std::size_t>(c.rank) + 1];
  const auto p = static_cast<std::size_t>(c.size);
  // One pass counts what every bucket of IDs receives; the blocks (set here) balance that,
  // and this rank's count for each owner is its buckets' sum (blocks end on bucket edges).
  InEdgeHistogram hist(std::int64_t{1} << r.scale);
  for (auto k = k0; k < k1; ++k)
    rmat_stream(r, k, [&](std::int64_t u, std::int64_t v) {
      if (u == v) return;
      hist.add(v);
      hist.add(u);
    });
  nodes = balanced_blocks(c, hist);
  std::vector<std::int64_t> count(p, 0);
  for (std::size_t b = 0; b < hist.count.size(); ++b)
    count[static_cast<std::size_t>(nodes.owner(static_cast<std::int64_t>(b) * hist.width))] +=
        hist.count[b];
  // Per destination: the stream it is in and how many of that stream's records for it
  // were already sent.
  std::vector<std::int64_t> stream(p, k0), skip(p, 0);
  auto records = mpi::exchange_records<Arc>(c, count, 1, [&](int d, Arc* out, std::int64_t want) {
    const auto i = static_cast<std::size_t>(d);
    std::int64_t made = 0;
    while (made < want) {
      const std::int64_t before = made;
      std::int64_t seen = 0;
      rmat_stream(r, stream[i], [&](std::int64_t u, std::int64_t v) {
        if (u == v) return;
        for (const auto& [to, from] : {std::pair{v, u}, std::pair{u, v}}) {
          if (nodes.owner(to) != d) continue;
          if (seen++ < skip[i] || made == want) continue;
          out[made++] = Arc{to, from};
        }
      });
      const std::int64_t consumed = skip[i] + (made - before);
      if (consumed < seen) {
        skip[i] = consumed;  // this stream has more for d: resume inside it next time
        return;
      }
      skip[i] = 0;
      ++stream[i];
    }
  });
  std::sort(records.begin(), records.end(), [](const Arc& a, const Arc& b) {
    return a.dst != b.dst ? a.dst < b.dst : a.src < b.src;
  });
  records.erase(
      std::unique(records.begin(), records.end(),
                  [](const Arc& a, const Arc& b) { return a.dst == b.dst && a.src == b.src; }),
      records.end());
  InEdges g = in_edges_from(records, nodes.first(c.rank), nodes.count(c.rank));
  records = {};
  g.simple_symmetric = true;
  g.eid_base = c.exclusive_sum(static_cast<std::int64_t>(g.src.size()));
  return g;
}

/// The row of edge position `k` of `g`.
inline std::int64_t row_of(const InEdges& g, std::int64_t k) {
  return static_cast<std::int64_t>(std::upper_bound(g.indptr.begin(), g.indptr.end(), k) -
                                   g.indptr.begin()) -
         1;
}

/// Step 2's graph for a general input: each row's in-neighbours merged with its
/// out-neighbours (asked of the owners of the in-edges' sources), without loops or
/// repeats: the symmetric graph PT-Scotch partitions.
inline std::pair<std::vector<SCOTCH_Num>, std::vector<SCOTCH_Num>> symmetric_rows(
    const mpi::Comm& c, const InEdges& g, const Blocks& nodes) {
  const auto m = static_cast<std::int64_t>(g.src.size());
  const auto [order, off] = group_by_rank(
      m, c.size, [&](std::int64_t k) { return nodes.owner(g.src[static_cast<std::size_t>(k)]); });
  auto out = send_grouped<Arc>(c, order, off, [&](std::int64_t k) {
    return Arc{g.src[static_cast<std::size_t>(k)], g.first + row_of(g, k)};
  });
  std::sort(out.begin(), out.end(), [](const Arc& a, const Arc& b) {
    return a.dst != b.dst ? a.dst < b.dst : a.src < b.src;
  });
  std::vector<SCOTCH_Num> rows(static_cast<std::size_t>(g.count) + 1, 0), neighbors;
  neighbors.reserve(g.src.size() + out.size());
  std::size_t o = 0;
  for (std::int64_t v = 0; v < g.count; ++v) {
    const std::int64_t self = g.first + v;
    auto in = g.src.begin() + g.indptr[static_cast<std::size_t>(v)];
    const auto in_end = g.src.begin() + g.indptr[static_cast<std::size_t>(v) + 1];
    std::int64_t last = -1;
    auto emit = [&](std::int64_t u) {
      if (u == self || u == last) return;
      neighbors.push_back(u);
      last = u;
    };
    while (in != in_end || (o < out.size() && out[o].dst == self)) {
      if (in != in_end && (o == out.size() || out[o].dst != self || *in <= out[o].src))
        emit(*in++);
      else
        emit(out[o++].src);
    }
    rows[static_cast<std::size_t>(v) + 1] = static_cast<SCOTCH_Num>(neighbors.size());
  }
  return {std::move(rows), std::move(neighbors)};
}

/// Train/val/test/other class of each node of the rank's block (0, 1, 2, 3: the first
/// mask that holds it, as split_classes), or empty when the input has no masks. In a typed
/// graph (as hetero_split_classes): the target type's nodes by their masks ("<target>/
/// train_mask", ...), every other type t's nodes class 4 + t.
inline std::vector<std::int64_t> block_classes(const ChunkedGraph* g, std::int64_t first,
                                               std::int64_t count) {
  if (g == nullptr) return {};
  std::vector<std::int64_t> cls;
  const IdRange block{first, first + count};
  if (g->typed) {
    cls.resize(static_cast<std::size_t>(count));
    for (std::int64_t v = first; v < first + count; ++v)
      cls[static_cast<std::size_t>(v - first)] = 4 + range_of(g->types.node_offsets(), v);
  }
  // Typed: the target type's masks (dataset_meta's target_ntype, else the first type with
  // a train mask), whose nodes are the split; untyped: the masks over every node.
  std::string prefix;
  if (g->typed) {
    const auto& meta = g->dataset_meta;
    if (meta.contains("target_ntype") && meta["target_ntype"].is_string())
      prefix = meta["target_ntype"].get<std::string>() + "/";
    else
      for (const auto& a : g->node_data)
        if (a.ntype >= 0 && a.name.substr(a.name.find('/') + 1) == "train_mask") {
          prefix = a.name.substr(0, a.name.find('/') + 1);
          break;
        }
  }
  const char* names[] = {"train_mask", "val_mask", "test_mask"};
  for (std::int64_t k = 2; k >= 0; --k) {
    const auto it =
        std::find_if(g->node_data.begin(), g->node_data.end(),
                     [&](const ChunkedArray& a) { return a.name == prefix + names[k]; });
    if (it == g->node_data.end() || it->row_bytes() != 1) continue;
    const IdRange rows{std::max(block.begin, it->ids().begin), std::min(block.end, it->ids().end)};
    if (rows.end <= rows.begin) continue;
    if (cls.empty()) cls.assign(static_cast<std::size_t>(count), 3);
    std::vector<std::byte> flags(static_cast<std::size_t>(rows.size()));
    read_node_rows(*g, *it, rows.begin, rows.end, flags.data());
    for (std::size_t i = 0; i < flags.size(); ++i) {
      auto& c = cls[static_cast<std::size_t>(rows.begin - first) + i];
      if (c >= 4) c = 3;  // a node of the masks' (target) type: "other" unless one holds it
      if (flags[i] != std::byte{0}) c = k;
    }
  }
  return cls;
}

/// The number of classes block_classes deals in: 4, plus one per node type when typed.
inline std::int64_t num_block_classes(const ChunkedGraph* g) {
  return g != nullptr && g->typed ? 4 + g->types.num_node_types() : 4;
}

/// Balanced random assignment: each rank shuffles its block (per class, when given) and
/// deals it round-robin, each rank and class starting at a different partition.
inline std::vector<std::int64_t> random_parts(const mpi::Comm& c, std::int64_t count,
                                              std::int64_t num_parts,
                                              const std::vector<std::int64_t>& cls,
                                              std::int64_t num_classes, std::uint64_t seed) {
  std::vector<std::int64_t> parts(static_cast<std::size_t>(count));
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(c.rank));
  const std::int64_t classes = cls.empty() ? 1 : num_classes;
  for (std::int64_t k = 0; k < classes; ++k) {
    std::vector<std::int64_t> members;
    for (std::int64_t v = 0; v < count; ++v)
      if (cls.empty() || cls[static_cast<std::size_t>(v)] == k) members.push_back(v);
    std::shuffle(members.begin(), members.end(), rng);
    std::int64_t next = (c.rank + k) % num_parts;
    for (const auto v : members) {
      parts[static_cast<std::size_t>(v)] = next;
      next = (next + 1) % num_parts;
    }
  }
  return parts;
}

/// After PT-Scotch (which balances one weight): moves nodes of each class from partitions
/// holding more than their share (the ceiling of class size x (1 + `slack`) / K) to those
/// holding less, lowest in-degree first, so the cut grows by as little as the moves allow.
/// Every rank computes the same plan from the gathered counts, then moves its own nodes.
inline void balance_classes(const mpi::Comm& c, std::vector<std::int64_t>& parts,
                            const std::vector<std::int64_t>& cls, const InEdges& g,
                            std::int64_t num_parts, std::int64_t classes, double slack = 0) {
  const auto K = static_cast<std::size_t>(num_parts);
  std::vector<std::int64_t> mine(K * classes, 0);
  for (std::size_t v = 0; v < parts.size(); ++v)
    ++mine[static_cast<std::size_t>(parts[v]) * classes + static_cast<std::size_t>(cls[v])];
  const auto all = c.all_gather(mine);  // [rank][part][class]
  for (std::int64_t k = 0; k < classes; ++k) {
    std::vector<std::int64_t> total(K, 0);
    std::vector<std::vector<std::int64_t>> avail(static_cast<std::size_t>(c.size),
                                                 std::vector<std::int64_t>(K));
    std::int64_t sum = 0;
    for (std::size_t r = 0; r < static_cast<std::size_t>(c.size); ++r)
      for (std::size_t p = 0; p < K; ++p) {
        const auto n = all[(r * K + p) * classes + static_cast<std::size_t>(k)];
        avail[r][p] = n;
        total[p] += n;
        sum += n;
      }
    const auto cap = static_cast<std::int64_t>(
        std::ceil((1.0 + slack) * static_cast<double>(sum) / static_cast<double>(num_parts)));
    // Moves for this rank: how many of its class-k nodes go from partition p to q.
    std::vector<std::tuple<std::size_t, std::size_t, std::int64_t>> moves;
    for (;;) {
      const auto from = std::max_element(total.begin(), total.end()) - total.begin();
      const auto to = std::min_element(total.begin(), total.end()) - total.begin();
      if (total[static_cast<std::size_t>(from)] <= cap) break;
      std::int64_t amount = std::min(total[static_cast<std::size_t>(from)] - cap,
                                     cap - total[static_cast<std::size_t>(to)]);
      if (amount <= 0) break;  // nothing can move (a slack below 0 is refused earlier)
      total[static_cast<std::size_t>(from)] -= amount;
      total[static_cast<std::size_t>(to)] += amount;
      for (std::size_t r = 0; r < avail.size() && amount > 0; ++r) {
        const auto take = std::min(amount, avail[r][static_cast<std::size_t>(from)]);
        avail[r][static_cast<std::size_t>(from)] -= take;
        amount -= take;
        if (r == static_cast<std::size_t>(c.rank) && take > 0)
          moves.emplace_back(static_cast<std::size_t>(from), static_cast<std::size_t>(to), take);
      }
    }
    for (const auto& [from, to, take] : moves) {
      std::vector<std::int64_t> candidates;
      for (std::size_t v = 0; v < parts.size(); ++v)
        if (parts[v] == static_cast<std::int64_t>(from) && cls[v] == k)
          candidates.push_back(static_cast<std::int64_t>(v));
      std::stable_sort(candidates.begin(), candidates.end(), [&](std::int64_t a, std::int64_t b) {
        const auto da =
            g.indptr[static_cast<std::size_t>(a) + 1] - g.indptr[static_cast<std::size_t>(a)];
        const auto db =
            g.indptr[static_cast<std::size_t>(b) + 1] - g.indptr[static_cast<std::size_t>(b)];
        return da < db;
      });
      for (std::int64_t i = 0; i < take; ++i)
        parts[static_cast<std::size_t>(candidates[static_cast<std::size_t>(i)])] =
            static_cast<std::int64_t>(to);
    }
  }
}

/// Asks, for each rank d, `ask[d]` of it; each rank answers every ID it is asked with
/// `answer(id)`. Returns the answers per rank, in the order asked.
template <class Answer>
std::vector<std::vector<std::int64_t>> ask_ranks(const mpi::Comm& c,
                                                 const std::vector<std::vector<std::int64_t>>& ask,
                                                 Answer&& answer) {
  std::vector<std::int64_t> from;
  const auto asked = mpi::exchange(c, ask, &from);
  std::vector<std::vector<std::int64_t>> reply(static_cast<std::size_t>(c.size));
  for (std::size_t s = 0; s < reply.size(); ++s)
    for (auto i = from[s]; i < from[s + 1]; ++i)
      reply[s].push_back(answer(asked[static_cast<std::size_t>(i)]));
  std::vector<std::int64_t> back;
  const auto answers = mpi::exchange(c, reply, &back);
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(c.size));
  for (std::size_t d = 0; d < out.size(); ++d)
    out[d].assign(answers.begin() + back[d], answers.begin() + back[d + 1]);
  return out;
}

/// What the owners of a set of node IDs answered about each: built by ask_owners, read by
/// `at(id)` for any ID of the set. A bit per input node marks the set; an ID's answer is at
/// its word's prefix count plus the bits below it, so no search is needed (n / 4 bytes).
class OwnerAnswers {
 public:
  std::int64_t at(std::int64_t id) const {
    const auto w = static_cast<std::size_t>(id) >> 6;
    const std::uint64_t below = bits_[w] & ((std::uint64_t{1} << (id & 63)) - 1);
    return values_[static_cast<std::size_t>(before_[w] + std::popcount(below))];
  }

  /// Asks the owner of each distinct ID in `ids` (input IDs in [0, n)) for `answer(id)`,
  /// which the owner computes. Collective.
  template <class Answer>
  static OwnerAnswers ask(const mpi::Comm& c, const Blocks& nodes, std::int64_t n,
                          std::span<const std::int64_t> ids, Answer&& answer) {
    OwnerAnswers a;
    const auto words = static_cast<std::size_t>((n + 63) / 64);
    a.bits_.assign(words, 0);
    for (const auto id : ids)
      a.bits_[static_cast<std::size_t>(id) >> 6] |= std::uint64_t{1} << (id & 63);
    a.before_.assign(words + 1, 0);
    for (std::size_t w = 0; w < words; ++w)
      a.before_[w + 1] = a.before_[w] + std::popcount(a.bits_[w]);
    std::vector<std::vector<std::int64_t>> asked(static_cast<std::size_t>(c.size));
    for (std::size_t w = 0; w < words; ++w)
      for (std::uint64_t x = a.bits_[w]; x != 0; x &= x - 1) {
        const auto id = static_cast<std::int64_t>(w * 64) + std::countr_zero(x);
        asked[static_cast<std::size_t>(nodes.owner(id))].push_back(id);
      }
    // Owners answer in the order asked, and ranks are in ID order: the answers come back
    // in ID order, which is the order of the set bits.
    const auto answers = ask_ranks(c, asked, answer);
    asked = {};
    a.values_.reserve(static_cast<std::size_t>(a.before_[words]));
    for (const auto& r : answers) a.values_.insert(a.values_.end(), r.begin(), r.end());
    return a;
  }

 private:
  std::vector<std::uint64_t> bits_;
  std::vector<std::int64_t> before_, values_;
};

/// The in-edges of halo nodes a writer holds for another: new source and edge IDs, input
/// edge ID.
struct HaloEdge {
  std::int64_t src, eid, orig_eid;
};

/// One partition as its writer builds it: local nodes (owned first, then halo levels) and
/// the in-edges of its edge rows: the owned rows' edges viewed in the writer's received
/// records (not copied: they are the largest array of the run), the halo rows' after them.
struct PartBuild {
  std::int64_t part = 0, first = 0, inner = 0, edge_first = 0;
  std::vector<std::int64_t> nid, orig_nid;                    ///< by local ID
  std::unordered_map<std::int64_t, std::int64_t> halo_local;  ///< new ID -> local ID
  std::vector<std::int64_t> indptr{0};                        ///< edge rows + 1
  std::span<const EdgeRecord> owned;  ///< (new dst, new src, input edge ID), CSC order
  /// The new ID of each owned edge where edge types number them (else edge_first + its
  /// position): partition, then edge type, then CSC order.
  std::vector<std::int64_t> new_eid;
  std::vector<HaloEdge> halo;  ///< edges of halo rows, after the owned ones
  std::size_t level_begin = 0;
  bool done = false;

  std::int64_t inner_edges() const { return static_cast<std::int64_t>(owned.size()); }
  std::int64_t num_edges() const { return static_cast<std::int64_t>(owned.size() + halo.size()); }
  /// Edge e of the local CSC: new source, new edge ID, input edge ID.
  HaloEdge edge(std::int64_t e) const {
    if (e < inner_edges()) {
      const EdgeRecord& r = owned[static_cast<std::size_t>(e)];
      return {r.src, new_eid.empty() ? edge_first + e : new_eid[static_cast<std::size_t>(e)],
              r.eid};
    }
    return halo[static_cast<std::size_t>(e - inner_edges())];
  }
  std::int64_t local_of(std::int64_t id) const {
    if (id >= first && id < first + inner) return id - first;
    const auto it = halo_local.find(id);
    return it == halo_local.end() ? -1 : it->second;
  }
};

/// For each build not done, the in-edges of its rows [level_begin, end) from the writers
/// of those nodes, appended to its CSC in row order. Collective.
inline void fetch_halo_rows(const mpi::Comm& c, std::vector<PartBuild>& builds,
                            const std::vector<std::int64_t>& node_off,
                            const std::function<int(std::int64_t)>& writer_of_part,
                            const std::function<const PartBuild*(std::int64_t)>& build_of_part) {
  const auto P = static_cast<std::size_t>(c.size);
  auto part_of = [&](std::int64_t id) { return range_of(node_off, id); };
  std::vector<std::vector<std::int64_t>> ask(P);
  struct Asked {
    std::size_t writer, index;
  };
  std::vector<std::vector<Asked>> row_request(builds.size());
  for (std::size_t b = 0; b < builds.size(); ++b) {
    if (builds[b].done) continue;
    for (std::size_t r = builds[b].level_begin; r < builds[b].nid.size(); ++r) {
      const auto id = builds[b].nid[r];
      const auto w = static_cast<std::size_t>(writer_of_part(part_of(id)));
      row_request[b].push_back({w, ask[w].size()});
      ask[w].push_back(id);
    }
  }
  std::vector<std::int64_t> from;
  const auto asked = mpi::exchange(c, ask, &from);
  // Each asked node is an owned node of a partition this rank writes.
  auto row_range = [&](std::int64_t id) {
    const PartBuild* b = build_of_part(part_of(id));
    const auto r = static_cast<std::size_t>(id - b->first);
    return std::pair{b, std::pair{b->indptr[r], b->indptr[r + 1]}};
  };
  std::vector<std::vector<std::int64_t>> degree(P);
  std::vector<std::int64_t> edge_count(P, 0);
  for (std::size_t s = 0; s < P; ++s)
    for (auto i = from[s]; i < from[s + 1]; ++i) {
      const auto [b, range] = row_range(asked[static_cast<std::size_t>(i)]);
      degree[s].push_back(range.second - range.first);
      edge_count[s] += range.second - range.first;
    }
  std::vector<std::int64_t> back;
  const auto degrees = mpi::exchange(c, degree, &back);
  std::vector<std::int64_t> at(from.begin(), from.end() - 1), in_row(P, 0);
  std::vector<std::int64_t> edge_from;
  const auto edges = mpi::exchange_records<HaloEdge>(
      c, edge_count, 1,
      [&](int d, HaloEdge* out, std::int64_t k) {
        const auto s = static_cast<std::size_t>(d);
        while (k > 0) {
          const auto [b, range] = row_range(asked[static_cast<std::size_t>(at[s])]);
          const auto e = range.first + in_row[s];
          const auto take = std::min(k, range.second - e);
          for (std::int64_t j = 0; j < take; ++j) *out++ = b->edge(e + j);
          k -= take;
          in_row[s] += take;
          if (in_row[s] == range.second - range.first) {
            ++at[s];
            in_row[s] = 0;
          }
        }
      },
      &edge_from);
  // Where each request's edges start in `edges`: the writer's run, then the requests
  // before it in that run.
  std::vector<std::vector<std::int64_t>> start(P);
  for (std::size_t w = 0; w < P; ++w) {
    std::int64_t pos = edge_from[w];
    for (auto i = back[w]; i < back[w + 1]; ++i) {
      start[w].push_back(pos);
      pos += degrees[static_cast<std::size_t>(i)];
    }
  }
  for (std::size_t b = 0; b < builds.size(); ++b) {
    if (builds[b].done) continue;
    for (const auto& [w, index] : row_request[b]) {
      const auto first = start[w][index];
      const auto d = degrees[static_cast<std::size_t>(back[w] + static_cast<std::int64_t>(index))];
      for (auto e = first; e < first + d; ++e)
        builds[b].halo.push_back(edges[static_cast<std::size_t>(e)]);
      builds[b].indptr.push_back(builds[b].num_edges());
    }
  }
}

// The stages of partition_distributed, in the order it runs them (the steps above).

/// Partition p's writer: rank p * ranks / num_parts (p < 2^40, ranks < 2^20: no overflow).
inline int writer_of_part(std::int64_t p, int ranks, std::int64_t num_parts) {
  return static_cast<int>(p * ranks / num_parts);
}

/// Step 1's result on one rank: its share of the graph, the in-edges of its block of input
/// node IDs, and what every rank knows of the whole.
struct DistInput {
  std::optional<ChunkedGraph> chunked;  ///< empty for R-MAT
  std::string name;
  std::int64_t n = 0, m = 0;
  Blocks nodes{0, 1};
  InEdges g;
  std::vector<std::int64_t> classes;  ///< train/val/test/other of the block's nodes, or empty
  bool have_classes = false;          ///< the input has masks (some rank found classes)
  std::int64_t num_classes = 4;       ///< see num_block_classes
  TypeMap types;                      ///< node and edge types (R-MAT: one of each)
};

/// Reads the input's metadata (or checks the R-MAT options) and checks the options, on
/// every rank; fails every rank together.
inline void open_input(const mpi::Comm& c, const DistPartitionInput& input, std::int64_t num_parts,
                       const DistPartitionOptions& opts, DistInput& in) {
  mpi::all_or_none(c, [&] {
    if (input.rmat)
      check_rmat_options(*input.rmat);
    else
      in.chunked = read_chunked_graph(input.chunked);
    if (in.name.empty())
      in.name = in.chunked ? in.chunked->name : "rmat" + std::to_string(input.rmat->scale);
    check_graph_name(in.name);
    check_halo_hops(opts.halo_hops);
    check_feat_dtype(opts.feat_dtype);
    in.n = in.chunked ? in.chunked->num_nodes : std::int64_t{1} << input.rmat->scale;
    check_num_parts(num_parts, in.n);
    if (in.chunked)
      for (const auto& a : in.chunked->node_data)
        if (a.shape.size() > 2)
          throw InvalidArgument("node data '" + a.name + "' has " + std::to_string(a.shape.size()) +
                                " dimensions; the distributed partitioner stores 1-D and 2-D");
  });
}

/// Every rank read its own metadata (hosts may hold copies): they must describe one graph.
/// Throws FormatError naming this rank's copy, on every rank together.
inline void check_same_metadata(const mpi::Comm& c, const DistPartitionInput& input,
                                const DistInput& in) {
  const std::int64_t shape[3] = {
      in.n, in.chunked ? in.chunked->num_edges : 0,
      in.chunked ? static_cast<std::int64_t>(in.chunked->node_data.size()) : 0};
  const std::int64_t rank0[3] = {c.broadcast(shape[0]), c.broadcast(shape[1]),
                                 c.broadcast(shape[2])};
  // The types, as one hash of their names and counts (FNV-1a).
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&](std::string_view bytes) {
    for (const char ch : bytes) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
    h = (h ^ 0xffU) * 1099511628211ULL;  // a separator
  };
  if (in.chunked && in.chunked->typed) {
    const TypeMap& t = in.chunked->types;
    for (std::int32_t i = 0; i < t.num_node_types(); ++i)
      mix(t.node_type_name(NodeType(i))), mix(std::to_string(t.num_nodes(NodeType(i))));
    for (const auto& name : canonical_edge_type_names(t)) mix(name);
    for (const auto off : t.edge_offsets()) mix(std::to_string(off));
  }
  const auto types = static_cast<std::int64_t>(h >> 1);
  const bool same_types = c.broadcast(types) == types;
  mpi::all_or_none(c, [&] {
    const std::string where = (input.chunked / chunked_metadata_name).string();
    if (!std::equal(shape, shape + 3, rank0))
      throw FormatError(where, "this rank's copy describes " + std::to_string(shape[0]) +
                                   " nodes, " + std::to_string(shape[1]) + " edges and " +
                                   std::to_string(shape[2]) + " node arrays; rank 0's " +
                                   std::to_string(rank0[0]) + ", " + std::to_string(rank0[1]) +
                                   " and " + std::to_string(rank0[2]));
    if (!same_types)
      throw FormatError(where, "this rank's copy declares other node or edge types than rank 0's");
  });
}

/// Step 1, read: the metadata and options checked on every rank before anything is
/// written, then this rank's in-edges (read or generated) and its nodes' classes.
inline DistInput read_input(const mpi::Comm& c, const DistPartitionInput& input,
                            const std::string& graph_name, std::int64_t num_parts,
                            const DistPartitionOptions& opts) {
  DistInput in;
  in.name = graph_name;
  open_input(c, input, num_parts, opts, in);
  check_same_metadata(c, input, in);
  in.nodes = Blocks(in.n, c.size);
  in.g = input.rmat ? generate_in_edges(c, *input.rmat, in.nodes)
                    : read_in_edges(c, *in.chunked, in.nodes);
  in.m = c.sum(static_cast<std::int64_t>(in.g.src.size()));
  mpi::all_or_none(c, [&] {
    in.classes = block_classes(in.chunked ? &*in.chunked : nullptr, in.g.first, in.g.count);
  });
  in.have_classes = c.max(in.classes.empty() ? 0 : 1) == 1;
  in.num_classes = num_block_classes(in.chunked ? &*in.chunked : nullptr);
  in.types = in.chunked ? in.chunked->types : TypeMap::homogeneous(in.n, in.m);
  mpi::all_or_none(c, [&] {
    if (opts.balance_train && !in.have_classes)
      throw InvalidArgument(
          "balancing train/val/test needs train/val/test masks; the input has "
          "none");
  });
  return in;
}

/// Which partition each node of the rank's block went to, and how.
struct DistAssignment {
  std::vector<std::int64_t> parts;
  std::string method;  ///< the config's part_method: random, ptscotch or zoltan
  std::int64_t hubs = 0,
               hub_degree =
                   0;  ///< nodes left out of the partitioner's graph, and above what degree
};

/// Position of `id` in the sorted `hubs`, or -1.
inline std::ptrdiff_t hub_index(const std::vector<std::int64_t>& hubs, std::int64_t id) {
  const auto it = std::lower_bound(hubs.begin(), hubs.end(), id);
  return it != hubs.end() && *it == id ? it - hubs.begin() : std::ptrdiff_t{-1};
}

/// The rank's rows of the symmetric graph without `hubs`: the partitioner's graph.
inline std::pair<std::vector<SCOTCH_Num>, std::vector<SCOTCH_Num>> without_hubs(
    const InEdges& g, std::span<const SCOTCH_Num> rows, std::span<const SCOTCH_Num> nbrs,
    const std::vector<std::int64_t>& hubs) {
  std::vector<SCOTCH_Num> out_rows(static_cast<std::size_t>(g.count) + 1, 0), out_nbrs;
  out_nbrs.reserve(nbrs.size());
  for (std::int64_t v = 0; v < g.count; ++v) {
    if (hub_index(hubs, g.first + v) < 0)
      for (auto k = rows[static_cast<std::size_t>(v)]; k < rows[static_cast<std::size_t>(v) + 1];
           ++k)
        if (hub_index(hubs, nbrs[static_cast<std::size_t>(k)]) < 0)
          out_nbrs.push_back(nbrs[static_cast<std::size_t>(k)]);
    out_rows[static_cast<std::size_t>(v) + 1] = static_cast<SCOTCH_Num>(out_nbrs.size());
  }
  return {std::move(out_rows), std::move(out_nbrs)};
}

/// Each hub's neighbours vote with their partitions, and the hub takes the majority's.
/// With vertex `weights` (the partitioner balanced them; the hubs were in its graph
/// without edges, so the loads start from its result), hubs go heaviest first and take
/// the partition with the most votes that stays within the allowed imbalance, else the
/// lightest: a hub can outweigh a partition's slack. Without, a few hubs are a few nodes
/// and the node balance is restored after (balance_classes). Every rank makes the same
/// choices from the summed votes and loads; each applies them to its own hubs
/// (`local_hubs`). Collective.
inline void place_hubs(const mpi::Comm& c, const InEdges& g, std::span<const SCOTCH_Num> rows,
                       std::span<const SCOTCH_Num> nbrs, const std::vector<std::int64_t>& hubs,
                       const std::vector<std::int64_t>& local_hubs, std::int64_t num_parts,
                       std::span<const SCOTCH_Num> weights, double imbalance,
                       std::vector<std::int64_t>& parts) {
  const auto K = static_cast<std::size_t>(num_parts);
  std::vector<std::int64_t> votes(hubs.size() * K, 0), load(K, 0), hub_weight(hubs.size(), 0);
  for (std::int64_t v = 0; v < g.count; ++v) {
    const auto w = weights.empty() ? 1 : weights[static_cast<std::size_t>(v)];
    if (const auto h = hub_index(hubs, g.first + v); h >= 0) {
      hub_weight[static_cast<std::size_t>(h)] = w;
      continue;
    }
    const auto p = static_cast<std::size_t>(parts[static_cast<std::size_t>(v)]);
    load[p] += w;
    for (auto k = rows[static_cast<std::size_t>(v)]; k < rows[static_cast<std::size_t>(v) + 1]; ++k)
      if (const auto h = hub_index(hubs, nbrs[static_cast<std::size_t>(k)]); h >= 0)
        ++votes[static_cast<std::size_t>(h) * K + p];
  }
  c.sum(votes);
  c.sum(load);
  c.sum(hub_weight);
  const auto total = std::accumulate(load.begin(), load.end(), std::int64_t{0}) +
                     std::accumulate(hub_weight.begin(), hub_weight.end(), std::int64_t{0});
  const auto cap = static_cast<std::int64_t>(
      std::ceil((1.0 + imbalance) * static_cast<double>(total) / static_cast<double>(K)));
  std::vector<std::size_t> order(hubs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return hub_weight[x] > hub_weight[y]; });
  std::vector<std::int64_t> choice(hubs.size(), 0);
  for (const auto h : order) {
    const auto* v = &votes[h * K];
    std::size_t best = K;
    for (std::size_t p = 0; p < K; ++p)
      if ((weights.empty() || load[p] + hub_weight[h] <= cap) &&
          (best == K || v[p] > v[best] || (v[p] == v[best] && load[p] < load[best])))
        best = p;
    if (best == K)
      best = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[best] += hub_weight[h];
    choice[h] = static_cast<std::int64_t>(best);
  }
  for (const auto h : local_hubs)
    parts[static_cast<std::size_t>(h - g.first)] =
        choice[static_cast<std::size_t>(hub_index(hubs, h))];
}

/// The minimum-cut partition of the symmetric graph by PT-Scotch or Zoltan. Hubs leave the
/// partitioner's graph (PT-Scotch's FM refinement slows down with the largest degree, and
/// both partitioners run faster without them: PERFORMANCE.md, "Partitioning over MPI") and
/// join the partition most of their neighbours are in (place_hubs). Collective.
inline DistAssignment min_cut_assignment(const mpi::Comm& c, const DistInput& in,
                                         std::int64_t num_parts, const DistPartitionOptions& opts) {
  const InEdges& g = in.g;
  std::vector<SCOTCH_Num> rows, neighbors;
  if (!g.simple_symmetric) std::tie(rows, neighbors) = symmetric_rows(c, g, in.nodes);
  const std::span<const SCOTCH_Num> all_rows =
      g.simple_symmetric ? std::span<const SCOTCH_Num>(g.indptr) : std::span(rows);
  const std::span<const SCOTCH_Num> all_nbrs =
      g.simple_symmetric ? std::span<const SCOTCH_Num>(g.src) : std::span(neighbors);
  DistAssignment a;
  a.hub_degree =
      opts.hub_degree > 0
          ? opts.hub_degree
          : std::max<std::int64_t>(64, 16 * c.sum(static_cast<std::int64_t>(all_nbrs.size())) /
                                           std::max<std::int64_t>(in.n, 1));
  // PT-Scotch fails on a rank without vertices (blocks give every rank one when there
  // are at least as many nodes as ranks).
  const bool empty_rank =
      opts.partitioner == DistPartitioner::ptscotch && c.max(g.count == 0 ? 1 : 0) == 1;
  mpi::all_or_none(c, [&] {
    if (empty_rank)
      throw InvalidArgument(std::to_string(in.n) + " nodes on " + std::to_string(c.size) +
                            " ranks leave a rank without nodes, which PT-Scotch cannot "
                            "partition; use fewer ranks or --method random");
  });
  std::vector<std::int64_t> local_hubs;
  for (std::int64_t v = 0; v < g.count; ++v)
    if (all_rows[static_cast<std::size_t>(v) + 1] - all_rows[static_cast<std::size_t>(v)] >
        a.hub_degree)
      local_hubs.push_back(g.first + v);
  const std::vector<std::int64_t> hubs = c.all_gather_v(local_hubs);  // sorted: ranks in order
  std::vector<SCOTCH_Num> weights;
  weights.reserve(static_cast<std::size_t>(g.count) + 1);  // data() is never null
  if (opts.balance_edges)
    for (std::int64_t v = 0; v < g.count; ++v) weights.push_back(1 + g.degree(v));
  {
    auto [scotch_rows, scotch_nbrs] = without_hubs(g, all_rows, all_nbrs, hubs);
    const mpi::MinCutOptions mc{.num_parts = num_parts,
                                .weighted = opts.balance_edges,
                                .imbalance = opts.imbalance,
                                .seed = opts.seed,
                                .check = in.n <= (std::int64_t{1} << 20)};
    if (opts.partitioner == DistPartitioner::zoltan) {
#if DISTGRAPH_HAVE_ZOLTAN
      a.parts = mpi::zoltan_partition(c, scotch_rows, scotch_nbrs, weights, mc);
#else
      mpi::all_or_none(c, [] {
        throw InvalidArgument(
            "this build has no Zoltan (install libtrilinos-zoltan-dev and rebuild)");
      });
#endif
    } else {
      a.parts =
          mpi::ptscotch_partition(c, scotch_rows, scotch_nbrs, weights, {mc, opts.scotch_strategy});
    }
  }
  place_hubs(c, g, all_rows, all_nbrs, hubs, local_hubs, num_parts, weights, opts.imbalance,
             a.parts);
  a.hubs = static_cast<std::int64_t>(hubs.size());
  a.method = opts.partitioner == DistPartitioner::zoltan ? "zoltan" : "ptscotch";
  return a;
}

/// Step 2, assign: nodes dealt at random, or a minimum cut (PT-Scotch or Zoltan), after
/// which balance_train evens out the classes, and otherwise, without balance_edges, the
/// node counts the hubs upset. Collective.
inline DistAssignment assign_distributed(const mpi::Comm& c, const DistInput& in,
                                         std::int64_t num_parts, const DistPartitionOptions& opts) {
  if (opts.method == PartMethod::random)
    return {random_parts(c, in.g.count, num_parts,
                         opts.balance_train ? in.classes : std::vector<std::int64_t>{},
                         in.num_classes, opts.seed),
            "random"};
  DistAssignment a = min_cut_assignment(c, in, num_parts, opts);
  if (opts.balance_train)
    balance_classes(c, a.parts, in.classes, in.g, num_parts, in.num_classes);
  else if (!opts.balance_edges)  // the hubs joined their neighbours' partitions
    balance_classes(c, a.parts, std::vector<std::int64_t>(a.parts.size(), 0), in.g, num_parts, 1,
                    opts.imbalance);
  return a;
}

/// Step 3's result: each partition's global node and edge IDs, and the new ID of each node
/// of the rank's block.
struct DistRelabeling {
  std::vector<std::int64_t> node_off, edge_off;  ///< num_parts + 1 offsets each
  /// Partition-major, then type: num_parts * types + 1 offsets each (partition_graph's
  /// node_off / edge_off). Node IDs of a type are input-ID ordered in each partition.
  std::vector<std::int64_t> node_type_off, edge_type_off;
  std::vector<std::int64_t> new_nid;
  std::int64_t part_of(std::int64_t id) const { return range_of(node_off, id); }
  /// The new IDs partition p gives node type t.
  IdRange type_range(std::int64_t p, std::int32_t t, std::int32_t types) const {
    const auto i = static_cast<std::size_t>(p * types + t);
    return {node_type_off[i], node_type_off[i + 1]};
  }
};

/// Offsets of counts [part][type] summed over the ranks (`all`: [rank][part][type]),
/// partition-major then type.
inline std::vector<std::int64_t> type_offsets(const std::vector<std::int64_t>& all, int ranks,
                                              std::size_t cells) {
  std::vector<std::int64_t> off(cells + 1, 0);
  for (std::size_t i = 0; i < cells; ++i) {
    std::int64_t total = 0;
    for (std::size_t r = 0; r < static_cast<std::size_t>(ranks); ++r) total += all[r * cells + i];
    off[i + 1] = off[i] + total;
  }
  return off;
}

/// Step 3, relabel: partition-major new IDs, input-ID order inside each partition (ranks
/// hold consecutive input IDs, so each rank's nodes of p follow the lower ranks'). Then
/// the new ID of every source, asked of its owner (each distinct source once), replaces
/// the input ID in `in.g`. Collective.
inline DistRelabeling relabel_distributed(const mpi::Comm& c, DistInput& in,
                                          const std::vector<std::int64_t>& parts,
                                          std::int64_t num_parts) {
  const auto K = static_cast<std::size_t>(num_parts);
  const auto T = static_cast<std::size_t>(in.types.num_node_types());
  const auto R = static_cast<std::size_t>(in.types.num_edge_types());
  InEdges& g = in.g;
  std::vector<std::int64_t> count(K, 0), edge_count(K, 0), type_count(K * T, 0),
      edge_type_count(K * R, 0);
  for (std::int64_t v = 0; v < g.count; ++v) {
    const auto p = static_cast<std::size_t>(parts[static_cast<std::size_t>(v)]);
    ++count[p];
    edge_count[p] += g.degree(v);
    ++type_count[p * T + static_cast<std::size_t>(range_of(in.types.node_offsets(), g.first + v))];
    if (R == 1)
      edge_type_count[p] += g.degree(v);
    else
      for (auto k = g.indptr[static_cast<std::size_t>(v)];
           k < g.indptr[static_cast<std::size_t>(v) + 1]; ++k)
        ++edge_type_count[p * R +
                          static_cast<std::size_t>(range_of(
                              in.types.edge_offsets(), g.edge_id(static_cast<std::size_t>(k))))];
  }
  const auto all_count = c.all_gather(count);  // [rank][part]
  DistRelabeling r;
  r.node_type_off = type_offsets(c.all_gather(type_count), c.size, K * T);
  r.edge_type_off = type_offsets(c.all_gather(edge_type_count), c.size, K * R);
  r.node_off.assign(K + 1, 0);
  std::vector<std::int64_t> my_next(K, 0);
  for (std::size_t p = 0; p < K; ++p) {
    std::int64_t before_me = 0, total = 0;
    for (std::size_t rank = 0; rank < static_cast<std::size_t>(c.size); ++rank) {
      if (rank < static_cast<std::size_t>(c.rank)) before_me += all_count[rank * K + p];
      total += all_count[rank * K + p];
    }
    r.node_off[p + 1] = r.node_off[p] + total;
    my_next[p] = r.node_off[p] + before_me;
  }
  r.new_nid.resize(static_cast<std::size_t>(g.count));
  for (std::size_t v = 0; v < r.new_nid.size(); ++v)
    r.new_nid[v] = my_next[static_cast<std::size_t>(parts[v])]++;
  c.sum(edge_count);
  r.edge_off.assign(K + 1, 0);
  for (std::size_t p = 0; p < K; ++p) r.edge_off[p + 1] = r.edge_off[p] + edge_count[p];
  const auto new_of = OwnerAnswers::ask(c, in.nodes, in.n, g.src, [&](std::int64_t id) {
    return r.new_nid[static_cast<std::size_t>(id - g.first)];
  });
  for (auto& s : g.src) s = new_of.at(s);
  return r;
}

/// The quality figures every rank gets: edges across partitions and, with classes, the
/// nodes of each class per partition ([part][class]). Collective.
struct DistCounts {
  std::int64_t cross = 0;
  std::vector<std::int64_t> class_counts;
};

inline DistCounts count_distributed(const mpi::Comm& c, const DistInput& in,
                                    const std::vector<std::int64_t>& parts, const DistRelabeling& r,
                                    std::int64_t num_parts) {
  const InEdges& g = in.g;
  DistCounts counts;
  for (std::int64_t v = 0; v < g.count; ++v)
    for (auto k = g.indptr[static_cast<std::size_t>(v)];
         k < g.indptr[static_cast<std::size_t>(v) + 1]; ++k)
      counts.cross +=
          r.part_of(g.src[static_cast<std::size_t>(k)]) != parts[static_cast<std::size_t>(v)];
  counts.cross = c.sum(counts.cross);
  const auto C = static_cast<std::size_t>(in.num_classes);
  counts.class_counts.assign(static_cast<std::size_t>(num_parts) * C, 0);
  if (in.have_classes) {
    for (std::size_t v = 0; v < in.classes.size(); ++v)
      ++counts.class_counts[static_cast<std::size_t>(parts[v]) * C +
                            static_cast<std::size_t>(in.classes[v])];
    c.sum(counts.class_counts);
  }
  return counts;
}

/// The partitions a rank writes, each with its own nodes' new IDs (input IDs to come).
struct Writer {
  const mpi::Comm& c;
  std::int64_t num_parts;
  const DistRelabeling& r;
  std::vector<PartBuild> builds;

  Writer(const mpi::Comm& comm, std::int64_t parts, const DistRelabeling& relabeling)
      : c(comm), num_parts(parts), r(relabeling) {
    for (std::int64_t p = 0; p < num_parts; ++p)
      if (writer_of(p) == c.rank) {
        PartBuild b;
        b.part = p;
        b.first = r.node_off[static_cast<std::size_t>(p)];
        b.inner = r.node_off[static_cast<std::size_t>(p) + 1] - b.first;
        b.nid.resize(static_cast<std::size_t>(b.inner));
        std::iota(b.nid.begin(), b.nid.end(), b.first);
        b.orig_nid.assign(static_cast<std::size_t>(b.inner), -1);
        builds.push_back(std::move(b));
      }
  }
  int writer_of(std::int64_t p) const { return writer_of_part(p, c.size, num_parts); }
  /// The index in `builds` of partition p. Throws PartitionError unless this rank writes p.
  std::size_t build_index(std::int64_t p) const {
    for (std::size_t i = 0; i < builds.size(); ++i)
      if (builds[i].part == p) return i;
    throw PartitionError("partition " + std::to_string(p) + " is not written by rank " +
                         std::to_string(c.rank));
  }
  /// The build of the partition that owns node `id` (new ID).
  PartBuild& build_of(std::int64_t id) { return builds[build_index(r.part_of(id))]; }
  const PartBuild& build_of(std::int64_t id) const { return builds[build_index(r.part_of(id))]; }
};

/// The staging folder of a job (one name for the whole job: rank 0's process ID, on every
/// host) and the ranks of this host: the first of them clears the output folder, removes
/// the staging folder at the end and writes the config. Collective to construct.
class HostStaging {
 public:
  HostStaging(const mpi::Comm& c, const std::filesystem::path& out_dir, const std::string& name)
      : tag_(c.broadcast(::getpid())) {
    mpi::check(
        MPI_Comm_split_type(c.comm, MPI_COMM_TYPE_SHARED, c.rank, MPI_INFO_NULL, &host_comm_),
        "Comm_split_type");
    leader_ = mpi::Comm(host_comm_).rank == 0;
    dir_ = out_dir / (staging_folder_prefix(name) + std::to_string(tag_));
  }
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;
  ~HostStaging() {
    std::error_code ignored;
    if (leader_) std::filesystem::remove_all(dir_, ignored);
    MPI_Comm_free(&host_comm_);
  }
  const std::filesystem::path& path() const { return dir_; }
  bool host_leader() const { return leader_; }

 private:
  std::int64_t tag_;
  MPI_Comm host_comm_;
  bool leader_ = false;
  std::filesystem::path dir_;
};

/// Readies the output: the host's first rank clears `out_dir` for a new partition, then
/// every writer creates its partitions' staging folders. Fails every rank together.
inline void prepare_staging(const mpi::Comm& c, const HostStaging& staging, const Writer& w,
                            const std::filesystem::path& out_dir, const std::string& name) {
  mpi::all_or_none(c, [&] {
    if (staging.host_leader()) clear_for_new_partition(out_dir, name);
  });
  mpi::all_or_none(c, [&] {
    for (const auto& b : w.builds)
      for (const char* sub : {"graph", "node_feat", "edge_feat"}) {
        const auto dir = staging.path() / ("part" + std::to_string(b.part));
        std::error_code ec;
        std::filesystem::create_directories(dir / sub, ec);
        if (ec) throw IoError(dir.string(), "cannot create staging folder: " + ec.message());
      }
  });
}

/// The rank's nodes grouped by the writer of their partition: positions per writer and
/// size + 1 offsets.
struct ByWriter {
  std::vector<std::int64_t> order, off;
};

/// Step 4a: each node's input ID to its writer. Collective.
inline void send_node_ids(const mpi::Comm& c, const DistInput& in, const DistRelabeling& r,
                          const ByWriter& by, Writer& w) {
  const auto records = send_grouped<NodeRecord>(c, by.order, by.off, [&](std::int64_t v) {
    return NodeRecord{r.new_nid[static_cast<std::size_t>(v)], in.g.first + v};
  });
  for (const auto& rec : records) {
    auto& b = w.build_of(rec.nid);
    b.orig_nid[static_cast<std::size_t>(rec.nid - b.first)] = rec.orig;
  }
}

/// Step 4b: node array `a`, each row to its writer, written straight into the partition's
/// file (as `stored`). A typed array ("<ntype>/<name>") has rows for its type's nodes only:
/// each partition's file holds its own nodes of that type. Collective; fails every rank
/// together.
inline void send_node_array(const mpi::Comm& c, const DistInput& in, const DistRelabeling& r,
                            const ByWriter& by, const Writer& w, const ChunkedArray& a,
                            DType stored, const std::filesystem::path& staging) {
  const std::size_t rb = a.row_bytes(), width = sizeof(std::int64_t) + rb;
  const std::int64_t cols = a.shape.size() == 2 ? a.shape[1] : 0;
  const std::int32_t T = in.types.num_node_types();
  // The rows a build's file holds: its owned nodes, or its owned nodes of a's type.
  auto rows_of = [&](const PartBuild& b) {
    return a.ntype < 0 ? IdRange{b.first, b.first + b.inner} : r.type_range(b.part, a.ntype, T);
  };
  std::vector<std::optional<NpyRowFile>> files(w.builds.size());
  mpi::all_or_none(c, [&] {
    for (std::size_t i = 0; i < w.builds.size(); ++i) {
      const auto path =
          staging / ("part" + std::to_string(w.builds[i].part)) / "node_feat" / (a.name + ".npy");
      std::error_code ec;
      if (std::filesystem::create_directories(path.parent_path(), ec); ec)
        throw IoError(path.parent_path().string(), "cannot create folder: " + ec.message());
      files[i].emplace(path, stored, rows_of(w.builds[i]).size(), cols);
    }
  });
  // The block's nodes that have rows: [lo, hi) of the block's positions.
  const std::int64_t lo = std::clamp(a.ids().begin - in.g.first, std::int64_t{0}, in.g.count),
                     hi = std::clamp(a.ids().end - in.g.first, lo, in.g.count);
  auto has_row = [&](std::int64_t v) { return v >= lo && v < hi; };
  std::vector<std::byte> block(static_cast<std::size_t>(hi - lo) * rb);
  mpi::all_or_none(
      c, [&] { read_node_rows(*in.chunked, a, in.g.first + lo, in.g.first + hi, block.data()); });
  std::vector<std::int64_t> counts(static_cast<std::size_t>(c.size), 0);
  for (std::size_t d = 0; d < counts.size(); ++d)
    for (auto i = by.off[d]; i < by.off[d + 1]; ++i)
      counts[d] += has_row(by.order[static_cast<std::size_t>(i)]);
  std::vector<std::int64_t> at(by.off.begin(), by.off.end() - 1);
  const auto rows = mpi::exchange_records<std::byte>(
      c, counts, width, [&](int d, std::byte* out, std::int64_t k) {
        auto& i = at[static_cast<std::size_t>(d)];
        for (std::int64_t j = 0; j < k; ++i) {
          const auto v = by.order[static_cast<std::size_t>(i)];
          if (!has_row(v)) continue;
          std::memcpy(out, &r.new_nid[static_cast<std::size_t>(v)], sizeof(std::int64_t));
          std::memcpy(out + sizeof(std::int64_t),
                      block.data() + static_cast<std::size_t>(v - lo) * rb, rb);
          out += width;
          ++j;
        }
      });
  block = {};
  std::vector<std::byte> converted(static_cast<std::size_t>(std::max<std::int64_t>(cols, 1)) *
                                   dtype_size(stored));
  mpi::all_or_none(c, [&] {
    for (std::size_t off = 0; off < rows.size(); off += width) {
      std::int64_t id;
      std::memcpy(&id, rows.data() + off, sizeof id);
      const auto i = w.build_index(r.part_of(id));
      const std::byte* row = rows.data() + off + sizeof id;
      if (stored != a.dtype) {
        convert_from_float32(stored,
                             {reinterpret_cast<const float*>(row),
                              static_cast<std::size_t>(std::max<std::int64_t>(cols, 1))},
                             converted);
        row = converted.data();
      }
      files[i]->put_row(id - rows_of(w.builds[i]).begin, row);
    }
    for (auto& f : files) f->publish();
  });
}

/// Step 4c: every node's in-edges, row by row, to its writer. Returns the records this
/// rank received, sorted into CSC order. Collective.
inline std::vector<EdgeRecord> send_in_edges(const mpi::Comm& c, const InEdges& g,
                                             const DistRelabeling& r, const ByWriter& by) {
  std::vector<std::int64_t> per_writer(static_cast<std::size_t>(c.size), 0);
  for (std::size_t d = 0; d < per_writer.size(); ++d)
    for (auto i = by.off[d]; i < by.off[d + 1]; ++i)
      per_writer[d] += g.degree(by.order[static_cast<std::size_t>(i)]);
  std::vector<std::int64_t> at(by.off.begin(), by.off.end() - 1),
      in_row(static_cast<std::size_t>(c.size), 0);
  return mpi::exchange_records<EdgeRecord>(
      c, per_writer, 1, [&](int d, EdgeRecord* out, std::int64_t k) {
        const auto w = static_cast<std::size_t>(d);
        while (k > 0) {
          const auto v = by.order[static_cast<std::size_t>(at[w])];
          const auto e = g.indptr[static_cast<std::size_t>(v)] + in_row[w];
          const auto take = std::min(k, g.indptr[static_cast<std::size_t>(v) + 1] - e);
          for (std::int64_t j = 0; j < take; ++j)
            *out++ = EdgeRecord{r.new_nid[static_cast<std::size_t>(v)],
                                g.src[static_cast<std::size_t>(e + j)],
                                g.edge_id(static_cast<std::size_t>(e + j))};
          k -= take;
          in_row[w] += take;
          if (g.indptr[static_cast<std::size_t>(v)] + in_row[w] ==
              g.indptr[static_cast<std::size_t>(v) + 1]) {
            ++at[w];
            in_row[w] = 0;
          }
        }
      });
}

/// Sorts the received edge records into CSC order and gives each build its owned rows, as
/// a view of `records`, and with several edge types their new IDs.
inline void attach_owned_edges(std::vector<EdgeRecord>& records, const DistRelabeling& r,
                               const TypeMap& types, Writer& w) {
  // Typed partitions hold each row's edges grouped by edge type (what samplers expect).
  auto type_of = [&](const EdgeRecord& e) { return range_of(types.edge_offsets(), e.eid); };
  if (types.num_edge_types() == 1)
    std::sort(records.begin(), records.end(), [](const EdgeRecord& a, const EdgeRecord& b) {
      return a.dst != b.dst ? a.dst < b.dst : a.src != b.src ? a.src < b.src : a.eid < b.eid;
    });
  else
    std::sort(records.begin(), records.end(), [&](const EdgeRecord& a, const EdgeRecord& b) {
      return std::tuple(a.dst, type_of(a), a.src, a.eid) <
             std::tuple(b.dst, type_of(b), b.src, b.eid);
    });
  std::size_t k = 0;
  for (auto& b : w.builds) {
    b.indptr.assign(static_cast<std::size_t>(b.inner) + 1, 0);
    const std::size_t begin = k;
    while (k < records.size() && records[k].dst < b.first + b.inner) {
      ++b.indptr[static_cast<std::size_t>(records[k].dst - b.first) + 1];
      ++k;
    }
    for (std::size_t row = 0; row < static_cast<std::size_t>(b.inner); ++row)
      b.indptr[row + 1] += b.indptr[row];
    b.owned = std::span<const EdgeRecord>(records.data() + begin, k - begin);
    b.edge_first = r.edge_off[static_cast<std::size_t>(b.part)];
    const auto R = static_cast<std::size_t>(types.num_edge_types());
    if (R == 1) continue;
    std::vector<std::int64_t> next(
        r.edge_type_off.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(b.part) * R),
        r.edge_type_off.begin() +
            static_cast<std::ptrdiff_t>((static_cast<std::size_t>(b.part) + 1) * R));
    b.new_eid.reserve(b.owned.size());
    for (const EdgeRecord& e : b.owned)
      b.new_eid.push_back(next[static_cast<std::size_t>(type_of(e))]++);
  }
}

/// One halo level for each build not done: the sources of its last level's rows that are
/// not local yet, sorted by ID, appended as local nodes. Returns, per writer, the new
/// nodes to ask it the input IDs of; `first_new[i]` is where build i's new nodes start.
inline std::vector<std::vector<std::int64_t>> add_halo_level(Writer& w,
                                                             std::vector<std::size_t>& first_new) {
  std::vector<std::vector<std::int64_t>> ask(static_cast<std::size_t>(w.c.size));
  first_new.assign(w.builds.size(), 0);
  for (std::size_t i = 0; i < w.builds.size(); ++i) {
    auto& b = w.builds[i];
    first_new[i] = b.nid.size();
    if (b.done) continue;
    const std::size_t level_end = b.nid.size();
    std::vector<std::int64_t> fresh;
    for (std::size_t row = b.level_begin; row < level_end; ++row)
      for (auto e = b.indptr[row]; e < b.indptr[row + 1]; ++e)
        if (const auto src = b.edge(e).src; b.local_of(src) < 0) fresh.push_back(src);
    std::sort(fresh.begin(), fresh.end());
    fresh.erase(std::unique(fresh.begin(), fresh.end()), fresh.end());
    if (fresh.empty()) {
      b.done = true;
      continue;
    }
    for (const auto id : fresh) {
      b.halo_local.emplace(id, static_cast<std::int64_t>(b.nid.size()));
      b.nid.push_back(id);
      ask[static_cast<std::size_t>(w.writer_of(w.r.part_of(id)))].push_back(id);
    }
    b.level_begin = level_end;
  }
  return ask;
}

/// Step 4d, halo: level by level, the sources of each level's rows that are not local yet,
/// sorted by ID, with their input IDs from their writers; rows of every level below
/// halo_hops hold their in-edges (fetched from their writers). Collective.
inline void gather_halos(const mpi::Comm& c, Writer& w, int halo_hops) {
  const std::function<int(std::int64_t)> writer_fn = [&](std::int64_t p) { return w.writer_of(p); };
  const std::function<const PartBuild*(std::int64_t)> build_fn = [&](std::int64_t p) {
    return &w.builds[w.build_index(p)];
  };
  for (int hop = 1; hop <= halo_hops; ++hop) {
    if (hop > 1) fetch_halo_rows(c, w.builds, w.r.node_off, writer_fn, build_fn);
    std::vector<std::size_t> first_new;
    const auto ask = add_halo_level(w, first_new);
    const auto orig = ask_ranks(c, ask, [&](std::int64_t id) {
      const auto& b = w.build_of(id);
      return b.orig_nid[static_cast<std::size_t>(id - b.first)];
    });
    std::vector<std::size_t> used(static_cast<std::size_t>(c.size), 0);
    for (std::size_t i = 0; i < w.builds.size(); ++i) {
      auto& b = w.builds[i];
      b.orig_nid.resize(b.nid.size());
      for (std::size_t row = first_new[i]; row < b.nid.size(); ++row) {
        const auto d = static_cast<std::size_t>(w.writer_of(w.r.part_of(b.nid[row])));
        b.orig_nid[row] = orig[d][used[d]++];
      }
    }
  }
}

/// Step 4e: each build's graph files into its staging folder (partition_graph's files,
/// through the same writer). Returns [part][inner nodes, halo nodes, inner edges, local
/// edges], summed over ranks. Collective; fails every rank together.
inline std::vector<std::int64_t> write_builds(const mpi::Comm& c, const Writer& w,
                                              const std::filesystem::path& staging) {
  std::vector<std::int64_t> stats(static_cast<std::size_t>(w.num_parts) * 4, 0);
  mpi::all_or_none(c, [&] {
    for (const auto& b : w.builds) {
      const GraphFileShape shape{static_cast<std::int64_t>(b.nid.size()), b.inner, b.num_edges()};
      const auto edge_rows = static_cast<std::int64_t>(b.indptr.size()) - 1;
      write_partition_graph(
          staging / ("part" + std::to_string(b.part)) / "graph", shape,
          [&](std::int64_t row) {
            return row < edge_rows ? b.indptr[static_cast<std::size_t>(row) + 1] -
                                         b.indptr[static_cast<std::size_t>(row)]
                                   : std::int64_t{0};
          },
          [&](auto&& push) {
            for (std::int64_t e = 0; e < shape.local_edges; ++e) {
              const HaloEdge x = b.edge(e);
              push(b.local_of(x.src), x.eid, x.orig_eid, e < b.inner_edges());
            }
          },
          [&](std::int64_t i) { return b.nid[static_cast<std::size_t>(i)]; }, b.orig_nid);
      auto* st = &stats[static_cast<std::size_t>(b.part) * 4];
      st[0] = b.inner;
      st[1] = shape.num_local - b.inner;
      st[2] = b.inner_edges();
      st[3] = shape.local_edges;
    }
  });
  c.sum(stats);
  return stats;
}

/// Step 5's summary and config (every rank computes them alike), as partition_graph
/// describes its partitions, plus the distributed run's own figures.
inline DistPartitionResult describe_distributed(
    const mpi::Comm& c, const DistInput& in, const DistAssignment& a, const DistRelabeling& r,
    const DistCounts& counts, const std::vector<std::int64_t>& stats, std::int64_t num_parts,
    const DistPartitionOptions& opts, const std::vector<FeatureSpec>& feature_specs,
    const std::filesystem::path& config_path) {
  const auto K = static_cast<std::size_t>(num_parts);
  DistPartitionResult result;
  result.num_ranks = c.size;
  PartitionResult& s = result.summary;
  s.parts.resize(K);
  for (std::size_t p = 0; p < K; ++p) {
    s.parts[p] = {stats[p * 4], stats[p * 4 + 1], stats[p * 4 + 2], stats[p * 4 + 3], {}};
    const auto C = static_cast<std::size_t>(in.num_classes);
    if (in.have_classes)
      s.parts[p].class_counts.assign(
          counts.class_counts.begin() + static_cast<std::ptrdiff_t>(p * C),
          counts.class_counts.begin() + static_cast<std::ptrdiff_t>((p + 1) * C));
    result.writer_of_part.push_back(
        writer_of_part(static_cast<std::int64_t>(p), c.size, num_parts));
  }
  s.cross_edges = counts.cross;
  set_balance(s);
  std::vector<std::int64_t> node_counts, edge_counts;
  for (std::int32_t t = 0; t < in.types.num_node_types(); ++t)
    node_counts.push_back(in.types.num_nodes(NodeType(t)));
  for (std::int32_t t = 0; t < in.types.num_edge_types(); ++t)
    edge_counts.push_back(in.types.num_edges(EdgeType(t)));
  describe_partitions(s, in.name, a.method, opts.halo_hops, in.n, in.m, true, opts.seed,
                      node_counts, edge_counts);
  PartitionConfig& cfg = s.config;
  cfg.path = config_path;
  cfg.ntypes = in.types.node_type_names();
  cfg.etypes = canonical_edge_type_names(in.types);
  cfg.node_ranges = type_ranges(r.node_type_off, num_parts, in.types.num_node_types());
  cfg.edge_ranges = type_ranges(r.edge_type_off, num_parts, in.types.num_edge_types());
  cfg.node_feats = feature_specs;
  cfg.extra["distributed"] = {{"ranks", c.size},
                              {"writer_of_part", result.writer_of_part},
                              {"hub_degree", a.hub_degree},
                              {"hubs", a.hubs}};
  return result;
}

}  // namespace detail::dist

/// Partitions `input` into `num_parts` parts under `out_dir` as the ranks of `comm`
/// (collective: every rank calls it with the same arguments), as graph `graph_name` (empty:
/// the chunked graph's name, or rmat<scale>), writing what
/// partition_graph writes (`<name>.json`, `part<i>/`): load_partition, the servers and
/// `distgraph train --part-config` take the result unchanged. Partition p is written by
/// rank p * ranks / num_parts, into `out_dir` as that rank sees it (a folder of its own
/// host), and the config is written last by the first rank on each host. Throws on every
/// rank together: IoError, FormatError, DTypeError, ShapeError, IdOutOfRange naming the
/// input file (before anything is written), InvalidArgument for bad options,
/// PartitionError for Scotch or MPI failures, mpi::PeerFailed on the ranks that did not
/// fail themselves.
inline DistPartitionResult partition_distributed(const mpi::Comm& c,
                                                 const DistPartitionInput& input,
                                                 const std::string& graph_name,
                                                 std::int64_t num_parts,
                                                 const std::filesystem::path& out_dir,
                                                 const DistPartitionOptions& opts = {}) {
  using namespace detail::dist;
  Progress silent(true);
  Progress& progress = opts.progress ? *opts.progress : silent;
  // A stage ends when its slowest rank is done.
  auto stage = [&](const char* s) {
    c.barrier();
    progress.begin(s);
  };
  const std::size_t first_stage = progress.stages().size();
  mpi::all_or_none(c, [&] {
    if (!(opts.imbalance >= 0 && opts.imbalance <= 1))  // NaN too
      throw InvalidArgument("imbalance " + std::to_string(opts.imbalance) + ": expected [0, 1]");
  });
  stage("read input");
  DistInput in = read_input(c, input, graph_name, num_parts, opts);
  const auto block_nodes = c.all_gather(std::vector<std::int64_t>{in.g.count});
  const auto block_edges =
      c.all_gather(std::vector<std::int64_t>{static_cast<std::int64_t>(in.g.src.size())});

  stage("assign partitions");
  DistAssignment a = assign_distributed(c, in, num_parts, opts);

  stage("relabel");
  DistRelabeling r = relabel_distributed(c, in, a.parts, num_parts);
  const DistCounts counts = count_distributed(c, in, a.parts, r, num_parts);

  stage("send to writers");
  Writer w(c, num_parts, r);
  const HostStaging staging(c, out_dir, in.name);
  prepare_staging(c, staging, w, out_dir, in.name);
  ByWriter by;
  std::tie(by.order, by.off) = group_by_rank(in.g.count, c.size, [&](std::int64_t v) {
    return w.writer_of(a.parts[static_cast<std::size_t>(v)]);
  });
  send_node_ids(c, in, r, by, w);
  std::vector<FeatureSpec> feature_specs;
  if (in.chunked)
    for (const auto& array : in.chunked->node_data) {
      const DType stored = array.dtype == DType::float32 ? opts.feat_dtype : array.dtype;
      feature_specs.push_back({array.name, std::string(dtype_name(stored)), array.shape});
      send_node_array(c, in, r, by, w, array, stored, staging.path());
    }
  std::vector<EdgeRecord> records = send_in_edges(c, in.g, r, by);
  // The writers hold the nodes and edges now: the rank's share goes.
  in.g = InEdges{};
  r.new_nid = {};
  a.parts = {};
  attach_owned_edges(records, r, in.types, w);

  stage("halo");
  gather_halos(c, w, opts.halo_hops);

  // The partitions' graph files, then the move into place once every rank has written.
  stage("write partitions");
  const std::vector<std::int64_t> stats = write_builds(c, w, staging.path());
  std::vector<std::string> mine;
  for (const auto& b : w.builds) mine.push_back("part" + std::to_string(b.part));
  w.builds.clear();
  records = {};
  mpi::all_or_none(c, [&] { detail::publish_staged(staging.path(), out_dir, mine); });

  // The summary and the config, written last by each host's first rank.
  stage("publish");
  DistPartitionResult result = describe_distributed(c, in, a, r, counts, stats, num_parts, opts,
                                                    feature_specs, out_dir / (in.name + ".json"));
  mpi::all_or_none(c, [&] {
    if (staging.host_leader()) write_partition_config(result.summary.config);
  });
  result.peak_rss_per_rank = c.all_gather(std::vector<std::int64_t>{peak_rss_bytes()});
  result.block_nodes_per_rank = block_nodes;
  result.block_edges_per_rank = block_edges;
  result.summary.peak_rss_bytes =
      *std::max_element(result.peak_rss_per_rank.begin(), result.peak_rss_per_rank.end());
  c.barrier();
  progress.end();
  result.summary.stages.assign(progress.stages().begin() + static_cast<std::ptrdiff_t>(first_stage),
                               progress.stages().end());
  return result;
}

}  // namespace distgraph

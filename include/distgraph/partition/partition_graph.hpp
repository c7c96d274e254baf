// partition_graph: split a graph into N partitions (METIS, random or given), relabel IDs,
// add halo nodes, and write the partition folder that servers and trainers load.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/core/parallel.hpp"
#include "distgraph/core/progress.hpp"
#include "distgraph/core/tensor.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/graph/graph.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/partition/metis.hpp"
#include "distgraph/partition/partition_config.hpp"

namespace distgraph {

/// How nodes are assigned to partitions.
enum class PartMethod {
  metis,   ///< METIS k-way, minimum edge cut on the symmetrised graph
  random,  ///< balanced random assignment, reproducible from `seed`
};

/// Options of partition_graph (designated initialisers: `{.method = PartMethod::random}`).
struct PartitionOptions {
  PartMethod method = PartMethod::metis;
  /// New IDs so each partition owns one contiguous range per node type (and edge type).
  /// Off: global IDs stay the input IDs and node_map.npy / edge_map.npy are written.
  bool relabel = true;
  /// Halo depth k >= 1: partition p holds the nodes within k in-hops of its own nodes and
  /// the in-edges of every node closer than k hops, so k = 1 holds exactly the in-edges of
  /// its own nodes and their sources (DGL's default).
  int halo_hops = 1;
  /// An integer class per node (e.g. 0 train, 1 val, 2 test, 3 other) to balance across
  /// partitions: METIS multi-constraint weights; per-class dealing for random. Empty: none.
  std::span<const std::int64_t> balance_ntypes{};
  /// Classes to count per partition without balancing them (ignored when balance_ntypes
  /// is set, which is counted itself): lets a summary show train nodes per partition.
  std::span<const std::int64_t> count_ntypes{};
  /// Balance the sum of in-degrees (edges owned) across partitions (METIS only).
  bool balance_edges = false;
  /// A partition ID per node: skips METIS/random ("custom" in the config).
  std::span<const std::int32_t> assignment{};
  std::uint64_t seed = 0;
  unsigned num_threads = 0;      ///< 0 = hardware threads
  Progress* progress = nullptr;  ///< stage reporting; null = silent
};

/// Per-partition sizes after partitioning.
struct PartitionStats {
  std::int64_t inner_nodes = 0, halo_nodes = 0, inner_edges = 0, local_edges = 0;
  std::vector<std::int64_t> class_counts;  ///< per balance/count_ntypes class (empty without)
};

/// What partition_graph did: the config it wrote and the quality of the split.
struct PartitionResult {
  PartitionConfig config;
  std::vector<PartitionStats> parts;
  /// Directed edges whose endpoints lie in different partitions (each is a halo reference).
  std::int64_t cross_edges = 0;
  /// METIS's own objective (undirected cut of the symmetrised graph); -1 for other methods.
  std::int64_t metis_edge_cut = -1;
  double node_balance = 1, edge_balance = 1;  ///< max / mean over partitions
  std::vector<double> class_balance;          ///< max / mean per balance class
  std::vector<Progress::Stage> stages;
  std::int64_t peak_rss_bytes = 0;
};

namespace detail {

/// The symmetrised adjacency without self loops or duplicates that METIS needs, built
/// from the out- and in-CSR by a per-row merge (rows of both are sorted by neighbour).
inline std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> symmetric_adjacency(
    const Graph& g, unsigned threads) {
  const std::int64_t n = g.num_nodes();
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(n) + 1, 0);
  auto merge_row = [&](std::int64_t v, auto&& emit) {
    auto a = g.out.neighbors(v), b = g.in.neighbors(v);
    std::size_t i = 0, j = 0;
    std::int64_t last = -1;
    while (i < a.size() || j < b.size()) {
      std::int64_t x;
      if (j == b.size() || (i < a.size() && a[i] <= b[j]))
        x = a[i++];
      else
        x = b[j++];
      if (x == v || x == last) continue;
      last = x;
      emit(x);
    }
  };
  parallel_for(0, n, threads, [&](std::int64_t v) {
    std::int64_t c = 0;
    merge_row(v, [&](std::int64_t) { ++c; });
    indptr[static_cast<std::size_t>(v) + 1] = c;
  });
  std::partial_sum(indptr.begin(), indptr.end(), indptr.begin());
  std::vector<std::int64_t> indices(static_cast<std::size_t>(indptr.back()));
  parallel_for(0, n, threads, [&](std::int64_t v) {
    auto pos = indptr[static_cast<std::size_t>(v)];
    merge_row(v, [&](std::int64_t x) { indices[static_cast<std::size_t>(pos++)] = x; });
  });
  return {std::move(indptr), std::move(indices)};
}

/// Random assignment balanced per class: nodes of each class are shuffled and dealt
/// round-robin, starting each class at a different partition so totals stay balanced.
inline std::vector<std::int32_t> random_by_class(std::span<const std::int64_t> cls,
                                                 std::int64_t num_parts, std::uint64_t seed) {
  std::map<std::int64_t, std::vector<std::int64_t>> members;
  for (std::size_t v = 0; v < cls.size(); ++v)
    members[cls[v]].push_back(static_cast<std::int64_t>(v));
  std::vector<std::int32_t> parts(cls.size(), 0);
  std::mt19937_64 rng(seed);
  std::int64_t next = 0;
  for (auto& [c, vs] : members) {
    std::shuffle(vs.begin(), vs.end(), rng);
    for (std::int64_t v : vs) {
      parts[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(next);
      next = (next + 1) % num_parts;
    }
  }
  return parts;
}

/// Stable bucket sort of [0, n) by key[i] in [0, k): returns (offsets[k+1], order).
inline std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> bucket_by(
    std::span<const std::int32_t> key, std::int64_t k) {
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(k) + 1, 0);
  for (auto p : key) offsets[static_cast<std::size_t>(p) + 1]++;
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  std::vector<std::int64_t> order(key.size());
  std::vector<std::int64_t> pos(offsets.begin(), offsets.end() - 1);
  for (std::size_t i = 0; i < key.size(); ++i)
    order[static_cast<std::size_t>(pos[static_cast<std::size_t>(key[i])]++)] =
        static_cast<std::int64_t>(i);
  return {std::move(offsets), std::move(order)};
}

/// The local graph of one partition, in memory, before it is written.
struct LocalPartition {
  std::vector<std::int64_t> indptr, indices, eid, orig_eid, nid, orig_nid;
  std::vector<std::uint8_t> inner_node, inner_edge;
  std::vector<std::int64_t> inner_orig_nodes;  ///< original IDs of owned nodes, local order
  std::vector<std::int64_t> inner_orig_edges;  ///< original IDs of owned edges, new-ID order
  std::int64_t num_inner_nodes = 0, num_inner_edges = 0;
};

}  // namespace detail

/// Partitions `g` into `num_parts` parts and writes `<out_dir>/<name>.json` plus one
/// `part<i>/` folder each (see docs/FORMATS.md). `node_data` rows are nodes and
/// `edge_data` rows are edges (input IDs); each partition stores the rows it owns.
/// Every edge belongs to the partition of its destination. The config is written last, and
/// a stale config of the same name is removed first, so an interrupted run never leaves a
/// folder that looks complete. Blocks; uses `opts.num_threads` threads. Throws
/// InvalidArgument (bad num_parts, lengths), IdOutOfRange (assignment values),
/// PartitionError (METIS), IoError (writing).
inline PartitionResult partition_graph(const Graph& g, const std::string& name,
                                       std::int64_t num_parts, const std::filesystem::path& out_dir,
                                       const PartitionOptions& opts = {},
                                       const TensorList& node_data = {},
                                       const TensorList& edge_data = {}) {
  namespace fs = std::filesystem;
  const std::int64_t n = g.num_nodes(), m = g.num_edges();
  const unsigned threads = opts.num_threads == 0 ? default_num_threads() : opts.num_threads;
  Progress silent(true);
  Progress& progress = opts.progress ? *opts.progress : silent;
  const std::size_t first_stage = progress.stages().size();

  // Validate everything before touching the output folder.
  if (name.empty() || name.find('/') != std::string::npos)
    throw InvalidArgument("graph name '" + name + "': expected a non-empty file name");
  if (num_parts < 1 || num_parts > std::max<std::int64_t>(n, 1))
    throw InvalidArgument("num_parts " + std::to_string(num_parts) + ": expected [1, " +
                          std::to_string(std::max<std::int64_t>(n, 1)) + "] (the node count)");
  if (opts.halo_hops < 1 || opts.halo_hops > 16)
    throw InvalidArgument("halo_hops " + std::to_string(opts.halo_hops) + ": expected [1, 16]");
  const std::span<const std::int64_t> classes =
      opts.balance_ntypes.empty() ? opts.count_ntypes : opts.balance_ntypes;
  const char* classes_name = opts.balance_ntypes.empty() ? "count_ntypes" : "balance_ntypes";
  if (!classes.empty() && static_cast<std::int64_t>(classes.size()) != n)
    throw InvalidArgument(std::string(classes_name) + " has " + std::to_string(classes.size()) +
                          " entries; expected one per node (" + std::to_string(n) + ")");
  if (!opts.assignment.empty() && static_cast<std::int64_t>(opts.assignment.size()) != n)
    throw InvalidArgument("assignment has " + std::to_string(opts.assignment.size()) +
                          " entries; expected one per node (" + std::to_string(n) + ")");
  for (std::int32_t p : opts.assignment)
    if (p < 0 || p >= num_parts) throw IdOutOfRange("assignment partition id", p, 0, num_parts);
  for (const auto* list : {&node_data, &edge_data}) {
    const std::int64_t rows = list == &node_data ? n : m;
    for (const auto& [tname, t] : *list) {
      if (tname.empty() || tname.find('/') != std::string::npos)
        throw InvalidArgument("tensor name '" + tname + "': expected a non-empty file name");
      if (t.rows() != rows || t.shape.empty())
        throw ShapeError("tensor '" + tname + "'",
                         std::to_string(t.rows()) + " rows; expected " + std::to_string(rows) +
                             (list == &node_data ? " (one per node)" : " (one per edge)"));
    }
  }
  std::int64_t num_classes = 0;
  for (auto c : classes) {
    if (c < 0 || c > 1'000'000)
      throw IdOutOfRange(std::string(classes_name) + " class", c, 0, 1'000'001);
    num_classes = std::max(num_classes, c + 1);
  }

  PartitionResult result;
  // 1. Assign nodes to partitions.
  progress.begin("assign partitions");
  std::vector<std::int32_t> part;
  std::string method;
  if (!opts.assignment.empty()) {
    part.assign(opts.assignment.begin(), opts.assignment.end());
    method = "custom";
  } else if (opts.method == PartMethod::random) {
    part = opts.balance_ntypes.empty()
               ? random_partition(n, num_parts, opts.seed)
               : detail::random_by_class(opts.balance_ntypes, num_parts, opts.seed);
    method = "random";
  } else {
    auto [indptr, indices] = detail::symmetric_adjacency(g, threads);
    // Constraint columns, as DGL builds them: one-hot per balance class, plus in-degree
    // for balance_edges; with no class column the node count is the first constraint.
    const bool cls = !opts.balance_ntypes.empty();
    const std::int64_t ncon = (cls ? num_classes : 1) + (opts.balance_edges ? 1 : 0);
    std::vector<std::int64_t> weights;
    if (ncon > 1) {
      weights.assign(static_cast<std::size_t>(n * ncon), 0);
      for (std::int64_t v = 0; v < n; ++v) {
        auto* w = &weights[static_cast<std::size_t>(v * ncon)];
        if (cls)
          w[opts.balance_ntypes[static_cast<std::size_t>(v)]] = 1;
        else
          w[0] = 1;
        if (opts.balance_edges) w[ncon - 1] = g.in_degree(v);
      }
    }
    MetisOptions mo;
    mo.num_parts = num_parts;
    mo.vertex_weights = weights;
    mo.ncon = static_cast<int>(ncon);
    mo.seed = opts.seed;
    MetisResult r = metis_partition(n, indptr, indices, mo);
    part = std::move(r.parts);
    result.metis_edge_cut = r.edge_cut;
    method = "metis";
  }
  progress.end();

  // 2. Relabel: new node IDs partition-major, then node type, then input ID; edges
  //    partition-major (owner = partition of the destination), then edge type, then input ID.
  progress.begin("relabel");
  const auto& types = g.types;
  const std::int32_t ntypes = types.num_node_types(), etypes = types.num_edge_types();
  auto node_type_of = [&](std::int64_t v) {
    const auto& off = types.node_offsets();
    return static_cast<std::int32_t>(std::upper_bound(off.begin() + 1, off.end(), v) -
                                     (off.begin() + 1));
  };
  auto edge_type_of = [&](std::int64_t e) {
    const auto& off = types.edge_offsets();
    return static_cast<std::int32_t>(std::upper_bound(off.begin() + 1, off.end(), e) -
                                     (off.begin() + 1));
  };
  // Edge owner: partition of the destination, read from the CSC.
  std::vector<std::int32_t> edge_part(static_cast<std::size_t>(m));
  parallel_for(0, n, threads, [&](std::int64_t v) {
    for (std::int64_t e : g.in.edges(v))
      edge_part[static_cast<std::size_t>(e)] = part[static_cast<std::size_t>(v)];
  });
  // Bucket key = partition * types + type; types own contiguous input ranges, so a stable
  // bucket sort by key keeps (type, input ID) order inside each partition.
  std::vector<std::int32_t> node_key(static_cast<std::size_t>(n)),
      edge_key(static_cast<std::size_t>(m));
  parallel_for(0, n, threads, [&](std::int64_t v) {
    node_key[static_cast<std::size_t>(v)] =
        part[static_cast<std::size_t>(v)] * ntypes + node_type_of(v);
  });
  parallel_for(0, m, threads, [&](std::int64_t e) {
    edge_key[static_cast<std::size_t>(e)] =
        edge_part[static_cast<std::size_t>(e)] * etypes + edge_type_of(e);
  });
  auto [node_off, node_order] = detail::bucket_by(node_key, num_parts * ntypes);
  auto [edge_off, edge_order] = detail::bucket_by(edge_key, num_parts * etypes);
  node_key = {};
  edge_key = {};
  std::vector<std::int64_t> new_nid(static_cast<std::size_t>(n)),
      new_eid(static_cast<std::size_t>(m));
  if (opts.relabel) {
    for (std::int64_t i = 0; i < n; ++i)
      new_nid[static_cast<std::size_t>(node_order[static_cast<std::size_t>(i)])] = i;
    for (std::int64_t i = 0; i < m; ++i)
      new_eid[static_cast<std::size_t>(edge_order[static_cast<std::size_t>(i)])] = i;
  } else {
    std::iota(new_nid.begin(), new_nid.end(), 0);
    std::iota(new_eid.begin(), new_eid.end(), 0);
    // Without relabeling, local order is input-ID order within each partition.
    auto by_part = [](std::vector<std::int64_t>& order, const std::vector<std::int64_t>& off,
                      std::int64_t per, std::int64_t parts) {
      for (std::int64_t p = 0; p < parts; ++p)
        std::sort(order.begin() + off[static_cast<std::size_t>(p * per)],
                  order.begin() + off[static_cast<std::size_t>((p + 1) * per)]);
    };
    by_part(node_order, node_off, ntypes, num_parts);
    by_part(edge_order, edge_off, etypes, num_parts);
  }
  progress.end();

  // 3. Build each partition's local graph: owned nodes first (global-ID order), then halo
  //    nodes hop by hop (each hop sorted by global ID). Rows are local destinations.
  progress.begin("build partitions");
  auto build_local = [&](std::int64_t p, std::vector<std::int64_t>& local_of) {
    detail::LocalPartition lp;
    const auto nb = node_off[static_cast<std::size_t>(p * ntypes)];
    const auto ne = node_off[static_cast<std::size_t>((p + 1) * ntypes)];
    lp.num_inner_nodes = ne - nb;
    lp.inner_orig_nodes.assign(node_order.begin() + nb, node_order.begin() + ne);
    const auto eb = edge_off[static_cast<std::size_t>(p * etypes)];
    const auto ee = edge_off[static_cast<std::size_t>((p + 1) * etypes)];
    lp.num_inner_edges = ee - eb;
    lp.inner_orig_edges.assign(edge_order.begin() + eb, edge_order.begin() + ee);
    std::vector<std::int64_t> local_nodes = lp.inner_orig_nodes;  // input IDs by local ID
    for (std::size_t i = 0; i < local_nodes.size(); ++i)
      local_of[static_cast<std::size_t>(local_nodes[i])] = static_cast<std::int64_t>(i);
    lp.indptr.push_back(0);
    std::size_t frontier_begin = 0;
    for (int hop = 0; hop <= opts.halo_hops; ++hop) {
      const std::size_t frontier_end = local_nodes.size();
      if (hop == opts.halo_hops) {  // the outermost halo nodes hold no edges
        lp.indptr.resize(frontier_end + 1, lp.indptr.back());
        break;
      }
      // Sources not yet local become the next hop's halo nodes, sorted by global ID.
      const std::size_t hop_begin = local_nodes.size();
      for (std::size_t r = frontier_begin; r < frontier_end; ++r)
        for (std::int64_t u : g.in.neighbors(local_nodes[r]))
          if (local_of[static_cast<std::size_t>(u)] < 0) {
            local_of[static_cast<std::size_t>(u)] = 0;  // numbered below
            local_nodes.push_back(u);
          }
      std::sort(local_nodes.begin() + static_cast<std::ptrdiff_t>(hop_begin), local_nodes.end(),
                [&](std::int64_t a, std::int64_t b) {
                  return new_nid[static_cast<std::size_t>(a)] <
                         new_nid[static_cast<std::size_t>(b)];
                });
      for (std::size_t i = hop_begin; i < local_nodes.size(); ++i)
        local_of[static_cast<std::size_t>(local_nodes[i])] = static_cast<std::int64_t>(i);
      for (std::size_t r = frontier_begin; r < frontier_end; ++r) {
        const std::int64_t v = local_nodes[r];
        for (std::int64_t u : g.in.neighbors(v))
          lp.indices.push_back(local_of[static_cast<std::size_t>(u)]);
        for (std::int64_t e : g.in.edges(v)) lp.orig_eid.push_back(e);
        lp.indptr.push_back(static_cast<std::int64_t>(lp.indices.size()));
      }
      frontier_begin = frontier_end;
      if (frontier_begin == local_nodes.size()) {  // nothing new: no further hops
        lp.indptr.resize(local_nodes.size() + 1, lp.indptr.back());
        break;
      }
    }
    lp.nid.resize(local_nodes.size());
    lp.orig_nid = local_nodes;
    lp.inner_node.assign(local_nodes.size(), 0);
    for (std::size_t i = 0; i < local_nodes.size(); ++i) {
      lp.nid[i] = new_nid[static_cast<std::size_t>(local_nodes[i])];
      lp.inner_node[i] = i < static_cast<std::size_t>(lp.num_inner_nodes);
    }
    lp.eid.resize(lp.orig_eid.size());
    lp.inner_edge.resize(lp.orig_eid.size());
    for (std::size_t k = 0; k < lp.orig_eid.size(); ++k) {
      const auto e = static_cast<std::size_t>(lp.orig_eid[k]);
      lp.eid[k] = new_eid[e];
      lp.inner_edge[k] = edge_part[e] == p;
    }
    for (auto v : local_nodes) local_of[static_cast<std::size_t>(v)] = -1;
    return lp;
  };
  // Partitions are built and written in parallel, one worker per partition at a time; each
  // worker keeps one input-ID -> local-ID table (reset after use) for all its partitions.
  const fs::path config_path = out_dir / (name + ".json");
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw IoError(out_dir.string(), "cannot create output folder: " + ec.message());
  fs::remove(config_path, ec);  // a stale config must not describe the new, partial files
  const fs::path staging = out_dir / (".staging-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  if (ec) throw IoError(staging.string(), "cannot create staging folder: " + ec.message());
  // Whatever fails below, the staging folder goes; only finished output is ever moved out.
  struct StagingGuard {
    fs::path dir;
    ~StagingGuard() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } staging_guard{staging};
  result.parts.resize(static_cast<std::size_t>(num_parts));
  const unsigned workers = static_cast<unsigned>(std::min<std::int64_t>(threads, num_parts));
  auto write_part = [&](std::int64_t p, const detail::LocalPartition& lp) {
    const fs::path dir = staging / ("part" + std::to_string(p));
    fs::create_directories(dir / "graph");
    fs::create_directories(dir / "node_feat");
    fs::create_directories(dir / "edge_feat");
    auto w = [&](const char* file, const auto& v) {
      using T = typename std::decay_t<decltype(v)>::value_type;
      write_npy<T>(dir / "graph" / file, std::span<const T>(v.data(), v.size()));
    };
    w("indptr.npy", lp.indptr);
    w("indices.npy", lp.indices);
    w("eid.npy", lp.eid);
    w("orig_eid.npy", lp.orig_eid);
    w("nid.npy", lp.nid);
    w("orig_nid.npy", lp.orig_nid);
    auto wb = [&](const char* file, const std::vector<std::uint8_t>& v) {
      const std::int64_t shape[] = {static_cast<std::int64_t>(v.size())};
      write_npy(dir / "graph" / file, DType::bool_, shape, v.data());
    };
    wb("inner_node.npy", lp.inner_node);
    wb("inner_edge.npy", lp.inner_edge);
    for (const auto& [tname, t] : node_data) {
      const HostTensor rows = t.gather_rows(lp.inner_orig_nodes);
      write_npy(dir / "node_feat" / (tname + ".npy"), rows.dtype, rows.shape, rows.bytes.data());
    }
    for (const auto& [tname, t] : edge_data) {
      const HostTensor rows = t.gather_rows(lp.inner_orig_edges);
      write_npy(dir / "edge_feat" / (tname + ".npy"), rows.dtype, rows.shape, rows.bytes.data());
    }
  };
  parallel_chunks(
      0, num_parts, workers,
      [&](unsigned, std::int64_t pb, std::int64_t pe) {
        std::vector<std::int64_t> local_of(static_cast<std::size_t>(n), -1);
        for (std::int64_t p = pb; p < pe; ++p) {
          const detail::LocalPartition lp = build_local(p, local_of);
          write_part(p, lp);
          auto& st = result.parts[static_cast<std::size_t>(p)];
          st.inner_nodes = lp.num_inner_nodes;
          st.halo_nodes = static_cast<std::int64_t>(lp.nid.size()) - lp.num_inner_nodes;
          st.inner_edges = lp.num_inner_edges;
          st.local_edges = static_cast<std::int64_t>(lp.eid.size());
        }
      },
      1);
  if (!opts.relabel) {
    write_npy<std::int32_t>(staging / "node_map.npy", part);
    write_npy<std::int32_t>(staging / "edge_map.npy", edge_part);
  }
  progress.end();

  // 4. Quality: cut and balance.
  progress.begin("statistics");
  std::int64_t cross = 0;
  for (std::int64_t v = 0; v < n; ++v)
    for (std::int64_t u : g.in.neighbors(v))
      cross += part[static_cast<std::size_t>(u)] != part[static_cast<std::size_t>(v)];
  result.cross_edges = cross;
  auto max_over_mean = [&](auto get) {
    double mx = 0, sum = 0;
    for (const auto& st : result.parts) {
      const double x = static_cast<double>(get(st));
      mx = std::max(mx, x);
      sum += x;
    }
    return sum > 0 ? mx / (sum / static_cast<double>(num_parts)) : 1.0;
  };
  if (num_classes > 0) {
    for (auto& st : result.parts) st.class_counts.assign(static_cast<std::size_t>(num_classes), 0);
    for (std::int64_t v = 0; v < n; ++v)
      result.parts[static_cast<std::size_t>(part[static_cast<std::size_t>(v)])]
          .class_counts[static_cast<std::size_t>(classes[static_cast<std::size_t>(v)])]++;
    for (std::int64_t c = 0; c < num_classes; ++c)
      result.class_balance.push_back(max_over_mean(
          [c](const PartitionStats& st) { return st.class_counts[static_cast<std::size_t>(c)]; }));
  }
  result.node_balance = max_over_mean([](const PartitionStats& st) { return st.inner_nodes; });
  result.edge_balance = max_over_mean([](const PartitionStats& st) { return st.inner_edges; });
  progress.end();

  // 5. Publish: move the staged files into place, then write the config last.
  progress.begin("publish");
  PartitionConfig& c = result.config;
  c.path = config_path;
  c.graph_name = name;
  c.part_method = method;
  c.num_parts = num_parts;
  c.halo_hops = opts.halo_hops;
  c.num_nodes = n;
  c.num_edges = m;
  c.ntypes = types.node_type_names();
  c.etypes.clear();
  for (const auto& et : types.edge_types())
    c.etypes.push_back(et.src_type + ":" + et.edge_type + ":" + et.dst_type);
  c.relabeled = opts.relabel;
  if (opts.relabel) {
    auto ranges = [&](const std::vector<std::int64_t>& off, std::int32_t per) {
      std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> r(
          static_cast<std::size_t>(per));
      for (std::int32_t t = 0; t < per; ++t)
        for (std::int64_t p = 0; p < num_parts; ++p)
          r[static_cast<std::size_t>(t)].emplace_back(
              off[static_cast<std::size_t>(p * per + t)],
              off[static_cast<std::size_t>(p * per + t + 1)]);
      return r;
    };
    c.node_ranges = ranges(node_off, ntypes);
    c.edge_ranges = ranges(edge_off, etypes);
  } else {
    c.node_map_file = "node_map.npy";
    c.edge_map_file = "edge_map.npy";
  }
  for (std::int64_t p = 0; p < num_parts; ++p) {
    const std::string dir = "part" + std::to_string(p);
    c.parts.push_back({dir + "/graph", dir + "/node_feat", dir + "/edge_feat"});
    const auto& st = result.parts[static_cast<std::size_t>(p)];
    c.counts.push_back({st.inner_nodes, st.halo_nodes, st.inner_edges, st.local_edges});
  }
  for (const auto& [tname, t] : node_data)
    c.node_feats.push_back({tname, std::string(dtype_name(t.dtype)), t.shape});
  for (const auto& [tname, t] : edge_data)
    c.edge_feats.push_back({tname, std::string(dtype_name(t.dtype)), t.shape});
  c.extra = {{"seed", opts.seed},
             {"relabel", opts.relabel},
             {"cross_edges", result.cross_edges},
             {"metis_edge_cut", result.metis_edge_cut},
             {"node_balance", result.node_balance},
             {"edge_balance", result.edge_balance},
             {"class_balance", result.class_balance}};
  auto publish = [&](const std::string& item) {
    const fs::path from = staging / item, to = out_dir / item;
    std::error_code e2;
    fs::remove_all(to, e2);
    fs::rename(from, to, e2);
    if (e2) throw IoError(to.string(), "cannot move partition output into place: " + e2.message());
  };
  for (std::int64_t p = 0; p < num_parts; ++p) publish("part" + std::to_string(p));
  if (!opts.relabel) {
    publish("node_map.npy");
    publish("edge_map.npy");
  }
  write_partition_config(c);
  progress.end();
  result.stages.assign(progress.stages().begin() + static_cast<std::ptrdiff_t>(first_stage),
                       progress.stages().end());
  result.peak_rss_bytes = peak_rss_bytes();
  return result;
}

}  // namespace distgraph

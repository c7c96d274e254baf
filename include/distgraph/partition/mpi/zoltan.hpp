// Zoltan's parallel hypergraph partitioner (PHG) on a distributed graph: the second
// partitioner of `partition --distributed` (`--partitioner zoltan`), from Debian's
// libtrilinos-zoltan-dev. On R-MAT, where PT-Scotch's band refinement does not finish
// scale 20 on 2 cores, PHG's does (PERFORMANCE.md, "Partitioning over MPI").
//
// Debian builds Zoltan with 32-bit IDs (ZOLTAN_ID_TYPE unsigned int), so a global ID is
// given as two words (NUM_GID_ENTRIES 2): 64-bit IDs hold. Zoltan counts a rank's objects
// and neighbours in int: a rank's share must stay under 2^31 neighbours.
//
// partition_distributed.hpp calls it where DISTGRAPH_HAVE_ZOLTAN is set (distgraph::zoltan
// sets it): give every translation unit of a program that includes that header the same
// setting, or the inline function exists in two versions and the linker keeps either.
#pragma once

#include <mpi.h>
#include <zoltan.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/partition/mpi/comm.hpp"
#include "distgraph/partition/mpi/min_cut_options.hpp"

// Zoltan's random generator (zz_rand.h, not installed): PHG's matchings draw from it.
extern "C" void Zoltan_Srand(unsigned int seed, unsigned int* myval);

namespace distgraph::mpi {

/// What zoltan_partition is told: the common options alone (`check` sets CHECK_GRAPH 2,
/// symmetry and IDs).
using ZoltanOptions = MinCutOptions;

namespace detail::zoltan {

/// The rank's graph as Zoltan's query functions read it.
struct Graph {
  std::int64_t first = 0;                     ///< global ID of local vertex 0
  std::span<const std::int64_t> row_offsets;  ///< local vertices + 1
  std::span<const std::int64_t> neighbors;    ///< global IDs
  std::span<const std::int64_t> weights;      ///< one per local vertex, or empty
  std::vector<std::int64_t> vtxdist;          ///< ranks + 1: the first ID of each rank
  int failed = 0;                             ///< a query was handed IDs it does not hold
};

inline void put_gid(ZOLTAN_ID_PTR out, std::int64_t id) {
  const auto u = static_cast<std::uint64_t>(id);
  out[0] = static_cast<ZOLTAN_ID_TYPE>(u & 0xffffffffu);
  out[1] = static_cast<ZOLTAN_ID_TYPE>(u >> 32);
}

inline int num_obj(void* data, int* ierr) {
  const auto& g = *static_cast<Graph*>(data);
  *ierr = ZOLTAN_OK;
  return static_cast<int>(g.row_offsets.size() - 1);
}

inline void obj_list(void* data, int, int, ZOLTAN_ID_PTR gids, ZOLTAN_ID_PTR lids, int wdim,
                     float* wgts, int* ierr) {
  const auto& g = *static_cast<Graph*>(data);
  const auto n = static_cast<std::int64_t>(g.row_offsets.size()) - 1;
  for (std::int64_t v = 0; v < n; ++v) {
    put_gid(gids + 2 * v, g.first + v);
    lids[v] = static_cast<ZOLTAN_ID_TYPE>(v);
    if (wdim > 0) wgts[v] = static_cast<float>(g.weights[static_cast<std::size_t>(v)]);
  }
  *ierr = ZOLTAN_OK;
}

inline void num_edges(void* data, int, int, int num, ZOLTAN_ID_PTR, ZOLTAN_ID_PTR lids, int* counts,
                      int* ierr) {
  auto& g = *static_cast<Graph*>(data);
  const auto n = g.row_offsets.size() - 1;
  *ierr = ZOLTAN_OK;
  for (int i = 0; i < num; ++i) {
    const auto v = static_cast<std::size_t>(lids[i]);
    if (v >= n) {
      g.failed = 1;
      *ierr = ZOLTAN_FATAL;
      return;
    }
    counts[i] = static_cast<int>(g.row_offsets[v + 1] - g.row_offsets[v]);
  }
}

inline void edge_list(void* data, int, int, int num, ZOLTAN_ID_PTR, ZOLTAN_ID_PTR lids, int*,
                      ZOLTAN_ID_PTR nbr_gids, int* nbr_procs, int, float*, int* ierr) {
  auto& g = *static_cast<Graph*>(data);
  const auto n = g.row_offsets.size() - 1;
  std::size_t out = 0;
  *ierr = ZOLTAN_OK;
  for (int i = 0; i < num; ++i) {
    const auto v = static_cast<std::size_t>(lids[i]);
    if (v >= n) {
      g.failed = 1;
      *ierr = ZOLTAN_FATAL;
      return;
    }
    for (auto k = g.row_offsets[v]; k < g.row_offsets[v + 1]; ++k, ++out) {
      const auto u = g.neighbors[static_cast<std::size_t>(k)];
      put_gid(nbr_gids + 2 * out, u);
      nbr_procs[out] = static_cast<int>(std::upper_bound(g.vtxdist.begin(), g.vtxdist.end(), u) -
                                        g.vtxdist.begin() - 1);
    }
  }
}

}  // namespace detail::zoltan

/// Partitions the distributed graph whose local part is the compact CSR `row_offsets`
/// (local vertices + 1 entries, starting at 0) / `neighbors` (global vertex IDs; each
/// rank's vertices are a contiguous ID range, ranks in order) with Zoltan's PHG (graph
/// partitioning, LB_METHOD GRAPH: it minimises the edge cut). The graph
/// must be symmetric, without self loops or repeated neighbours. `weights` (one per local
/// vertex) are vertex weights where `opts.weighted`. Collective. Returns the part of each
/// local vertex. Throws PartitionError naming the Zoltan call that failed.
inline std::vector<std::int64_t> zoltan_partition(const Comm& c,
                                                  std::span<const std::int64_t> row_offsets,
                                                  std::span<const std::int64_t> neighbors,
                                                  std::span<const std::int64_t> weights,
                                                  const ZoltanOptions& opts) {
  const auto local = static_cast<std::int64_t>(row_offsets.size()) - 1;
  std::vector<std::int64_t> parts(static_cast<std::size_t>(local), 0);
  if (opts.num_parts == 1) return parts;
  mpi::all_or_none(c, [&] {
    if (local >= INT_MAX || static_cast<std::int64_t>(neighbors.size()) >= INT_MAX)
      throw PartitionError(
          "Zoltan counts a rank's vertices and neighbours in int: this rank "
          "holds " +
          std::to_string(local) + " vertices and " + std::to_string(neighbors.size()) +
          " neighbours; use more ranks or --partitioner ptscotch");
  });
  float version = 0;
  if (Zoltan_Initialize(0, nullptr, &version) != ZOLTAN_OK) {
    failure_agreed() = true;
    throw PartitionError("Zoltan_Initialize failed");
  }
  detail::zoltan::Graph g;
  g.row_offsets = row_offsets;
  g.neighbors = neighbors;
  if (opts.weighted) g.weights = weights;
  const std::int64_t counts[1] = {local};
  const auto all = c.all_gather(std::span<const std::int64_t>(counts, 1));
  g.vtxdist.assign(all.size() + 1, 0);
  for (std::size_t r = 0; r < all.size(); ++r) g.vtxdist[r + 1] = g.vtxdist[r] + all[r];
  g.first = g.vtxdist[static_cast<std::size_t>(c.rank)];

  std::unique_ptr<Zoltan_Struct, void (*)(Zoltan_Struct*)> zz(
      Zoltan_Create(c.comm), [](Zoltan_Struct* z) { Zoltan_Destroy(&z); });
  if (!zz) {
    failure_agreed() = true;
    throw PartitionError("Zoltan_Create failed");
  }
  const auto set = [&](const char* name, const std::string& value) {
    if (Zoltan_Set_Param(zz.get(), name, value.c_str()) != ZOLTAN_OK) {
      failure_agreed() = true;
      throw PartitionError(std::string("Zoltan_Set_Param ") + name + " = " + value + " failed");
    }
  };
  set("DEBUG_LEVEL", "0");
  set("LB_METHOD", "GRAPH");
  set("GRAPH_PACKAGE", "PHG");
  set("LB_APPROACH", "PARTITION");
  set("NUM_GID_ENTRIES", "2");
  set("NUM_LID_ENTRIES", "1");
  set("NUM_GLOBAL_PARTS", std::to_string(opts.num_parts));
  set("RETURN_LISTS", "PARTITION ASSIGNMENTS");
  set("OBJ_WEIGHT_DIM", opts.weighted ? "1" : "0");
  set("EDGE_WEIGHT_DIM", "0");
  set("IMBALANCE_TOL", std::to_string(1.0 + opts.imbalance));
  set("CHECK_GRAPH", opts.check ? "2" : "0");
  Zoltan_Srand(static_cast<unsigned int>(opts.seed * 2654435761u + 1), nullptr);
  Zoltan_Set_Num_Obj_Fn(zz.get(), detail::zoltan::num_obj, &g);
  Zoltan_Set_Obj_List_Fn(zz.get(), detail::zoltan::obj_list, &g);
  Zoltan_Set_Num_Edges_Multi_Fn(zz.get(), detail::zoltan::num_edges, &g);
  Zoltan_Set_Edge_List_Multi_Fn(zz.get(), detail::zoltan::edge_list, &g);

  int changes = 0, num_gid = 0, num_lid = 0, num_import = 0, num_export = 0;
  ZOLTAN_ID_PTR import_gids = nullptr, import_lids = nullptr, export_gids = nullptr,
                export_lids = nullptr;
  int *import_procs = nullptr, *import_parts = nullptr, *export_procs = nullptr,
      *export_parts = nullptr;
  const int rc =
      Zoltan_LB_Partition(zz.get(), &changes, &num_gid, &num_lid, &num_import, &import_gids,
                          &import_lids, &import_procs, &import_parts, &num_export, &export_gids,
                          &export_lids, &export_procs, &export_parts);
  struct Lists {
    ZOLTAN_ID_PTR *ig, *il, *eg, *el;
    int **ip, **ipp, **ep, **epp;
    ~Lists() {
      Zoltan_LB_Free_Part(ig, il, ip, ipp);
      Zoltan_LB_Free_Part(eg, el, ep, epp);
    }
  } lists{&import_gids,  &import_lids,  &export_gids,  &export_lids,
          &import_procs, &import_parts, &export_procs, &export_parts};
  // ZOLTAN_WARN is a success with a notice (printed by Zoltan).
  failure_agreed() = c.max((rc != ZOLTAN_OK && rc != ZOLTAN_WARN) || g.failed != 0 ? 1 : 0) != 0;
  if (failure_agreed())
    throw PartitionError("Zoltan_LB_Partition failed (see Zoltan's message above)");
  // PARTITION ASSIGNMENTS: the export list holds every local vertex with its part.
  mpi::all_or_none(c, [&] {
    if (num_export != local)
      throw PartitionError("Zoltan_LB_Partition assigned " + std::to_string(num_export) + " of " +
                           std::to_string(local) + " vertices");
    for (int i = 0; i < num_export; ++i) {
      const auto v = static_cast<std::int64_t>(export_lids[i]);
      if (v >= local || export_parts[i] < 0 || export_parts[i] >= opts.num_parts)
        throw PartitionError("Zoltan_LB_Partition returned vertex " + std::to_string(v) +
                             " in part " + std::to_string(export_parts[i]));
      parts[static_cast<std::size_t>(v)] = export_parts[i];
    }
  });
  return parts;
}

}  // namespace distgraph::mpi

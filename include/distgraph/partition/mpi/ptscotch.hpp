// PT-Scotch's distributed graph partitioning (SCOTCH_dgraphPart), 64-bit indices.
//
// Built against /usr/include/scotch-int64 and linked to the libraries in
// /usr/lib/x86_64-linux-gnu/scotch-int64 (CMake's distgraph::mpi): Debian's default
// libptscotch is 32-bit, and a 64-bit header over it fails in SCOTCH_dgraphCheck. The
// archives are linked statically (CMakeLists.txt says why).
#pragma once

// ptscotch.h uses FILE, int64_t and MPI_Comm without including their headers.
// clang-format off
#include <cstdint>
#include <cstdio>
#include <mpi.h>
#include <ptscotch.h>
// clang-format on

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/partition/mpi/comm.hpp"
#include "distgraph/partition/mpi/min_cut_options.hpp"

namespace distgraph::mpi {

static_assert(sizeof(SCOTCH_Num) == 8,
              "distgraph needs PT-Scotch's 64-bit variant (headers in /usr/include/scotch-int64)");

/// PT-Scotch's strategy presets (SCOTCH_STRAT*): quality refines longest, speed least.
/// scalability: speed with SCOTCH_STRATSCALABILITY.
enum class ScotchStrategy { quality, balance, speed, scalability };

/// The preset named `name` ("quality", "balance", "speed"), or nullopt.
inline std::optional<ScotchStrategy> scotch_strategy_from_name(std::string_view name) {
  if (name == "quality") return ScotchStrategy::quality;
  if (name == "balance") return ScotchStrategy::balance;
  if (name == "speed") return ScotchStrategy::speed;
  if (name == "scalability") return ScotchStrategy::scalability;
  return std::nullopt;
}

/// What ptscotch_partition is told: the common options (`check` runs SCOTCH_dgraphCheck)
/// and PT-Scotch's preset.
struct ScotchOptions : MinCutOptions {
  ScotchStrategy strategy = ScotchStrategy::speed;
};

/// Partitions the distributed graph whose local part is the compact CSR `row_offsets`
/// (local vertices + 1 entries, starting at 0) / `neighbors` (global vertex IDs; each
/// rank's vertices are a contiguous ID range, ranks in order). The graph must be
/// symmetric, without self loops or repeated neighbours. `weights` (one per local vertex)
/// are vertex weights where `opts.weighted`. Collective. Returns the part of each local vertex.
/// Throws PartitionError naming the Scotch call that failed.
inline std::vector<SCOTCH_Num> ptscotch_partition(const Comm& c, std::span<SCOTCH_Num> row_offsets,
                                                  std::span<SCOTCH_Num> neighbors,
                                                  std::span<SCOTCH_Num> weights,
                                                  const ScotchOptions& opts) {
  const auto local = static_cast<SCOTCH_Num>(row_offsets.size()) - 1;
  std::vector<SCOTCH_Num> parts(static_cast<std::size_t>(local), 0);
  if (opts.num_parts == 1) return parts;
  // Debian's PT-Scotch bipartitions the two halves of a folded graph in two threads that
  // both call MPI: under less than MPI_THREAD_MULTIPLE about one run in ten of R-MAT scale
  // 12 with vertex weights aborted in free() under MPI_Allreduce, or deadlocked.
  int level = MPI_THREAD_SINGLE;
  check(MPI_Query_thread(&level), "Query_thread");
  if (level < MPI_THREAD_MULTIPLE) {
    failure_agreed() = true;  // every rank sees the same level
    throw PartitionError(
        "PT-Scotch needs MPI initialised with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...); "
        "this MPI provides less");
  }
  SCOTCH_randomSeed(static_cast<SCOTCH_Num>(opts.seed));
  SCOTCH_randomReset();
  SCOTCH_Dgraph graph;
  if (SCOTCH_dgraphInit(&graph, c.comm) != 0) throw PartitionError("SCOTCH_dgraphInit failed");
  struct GraphGuard {
    SCOTCH_Dgraph* g;
    ~GraphGuard() { SCOTCH_dgraphExit(g); }
  } graph_guard{&graph};
  // The arrays are used in place (Scotch copies nothing it is given).
  const auto edges = static_cast<SCOTCH_Num>(neighbors.size());
  int failed = SCOTCH_dgraphBuild(&graph, 0, local, local, row_offsets.data(), nullptr,
                                  opts.weighted ? weights.data() : nullptr, nullptr, edges, edges,
                                  neighbors.data(), nullptr, nullptr);
  failed = static_cast<int>(c.max(failed != 0));
  failure_agreed() = failed != 0;
  if (failed != 0) throw PartitionError("SCOTCH_dgraphBuild failed (see Scotch's message above)");
  if (opts.check) {
    failed = static_cast<int>(c.max(SCOTCH_dgraphCheck(&graph) != 0));
    failure_agreed() = failed != 0;
    if (failed != 0)
      throw PartitionError("SCOTCH_dgraphCheck: the distributed graph is inconsistent");
  }
  SCOTCH_Strat strategy;
  SCOTCH_stratInit(&strategy);
  struct StratGuard {
    SCOTCH_Strat* s;
    ~StratGuard() { SCOTCH_stratExit(s); }
  } strat_guard{&strategy};
  // The same call with the same arguments on every rank: it fails everywhere or nowhere.
  const SCOTCH_Num flags = opts.strategy == ScotchStrategy::quality   ? SCOTCH_STRATQUALITY
                           : opts.strategy == ScotchStrategy::balance ? SCOTCH_STRATBALANCE
                           : opts.strategy == ScotchStrategy::scalability
                               ? SCOTCH_STRATSPEED | SCOTCH_STRATSCALABILITY
                               : SCOTCH_STRATSPEED;
  if (SCOTCH_stratDgraphMapBuild(&strategy, flags, c.size, static_cast<SCOTCH_Num>(opts.num_parts),
                                 opts.imbalance) != 0) {
    failure_agreed() = true;
    throw PartitionError("SCOTCH_stratDgraphMapBuild failed");
  }
  failed =
      SCOTCH_dgraphPart(&graph, static_cast<SCOTCH_Num>(opts.num_parts), &strategy, parts.data());
  failure_agreed() = c.max(failed != 0) != 0;
  if (failure_agreed())
    throw PartitionError("SCOTCH_dgraphPart failed (see Scotch's message above)");
  return parts;
}

}  // namespace distgraph::mpi

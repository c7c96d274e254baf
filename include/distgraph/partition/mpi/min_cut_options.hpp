// What every distributed minimum-cut partitioner is told (PT-Scotch, Zoltan): one struct,
// so partition_distributed fills it once whichever library runs.
#pragma once

#include <cstdint>

namespace distgraph::mpi {

/// The parts, balance, seed and checking asked of a distributed partitioner.
struct MinCutOptions {
  std::int64_t num_parts = 2;
  /// Use the vertex weights: every rank must say the same, also one without vertices.
  bool weighted = false;
  /// Largest allowed part weight over the mean, minus one (METIS's default ufactor 30 is
  /// 0.03).
  double imbalance = 0.03;
  std::uint64_t seed = 0;
  /// The library's consistency check of the distributed graph first (one pass over the
  /// edges with communication).
  bool check = false;
};

}  // namespace distgraph::mpi

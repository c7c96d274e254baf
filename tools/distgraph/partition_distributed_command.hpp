// `distgraph partition --distributed`: the request cmd_partition.cpp parses and
// cmd_partition_distributed.cpp runs as one rank of an MPI job.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "distgraph/partition/partition_graph.hpp"

namespace distgraph::cli {

/// What `distgraph partition --distributed` was asked.
struct DistributedPartitionRequest {
  std::string input;                ///< a chunked graph folder or rmat:S[:K]
  std::optional<std::string> name;  ///< default: the chunked graph's name, or rmat<S>
  std::int64_t parts = 2;
  std::string out = "partitions";
  PartitionOptions opts;  ///< method, halo_hops, feat_dtype, seed, balance_edges
  bool balance_train = false;
  std::string scotch_strategy = "speed";  ///< quality, balance or speed
  std::string partitioner = "ptscotch";   ///< ptscotch or zoltan
  std::int64_t hub_degree = 0;            ///< 0: the default (16 x the mean degree)
  bool json = false;
};

/// Runs the request as this process's rank (MPI_Init to MPI_Finalize); rank 0 prints the
/// summary. Throws UsageError outside an MPI launcher or without MPI support in this build.
int run_partition_distributed(const DistributedPartitionRequest& req);

}  // namespace distgraph::cli

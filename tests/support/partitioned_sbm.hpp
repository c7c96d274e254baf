// Test helper: a small SBM dataset partitioned into a temporary folder, with its node ID map.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "support/temp_dir.hpp"

namespace distgraph::test {

/// `sbm_dataset(options)` partitioned by METIS into `parts` under a TempDir as `name`;
/// `orig_of[v]` is the input ID of global node v (partitioning relabels nodes).
struct PartitionedSbm {
  TempDir tmp;
  Dataset data;
  std::filesystem::path config;
  std::vector<std::int64_t> orig_of;

  PartitionedSbm(const SbmOptions& options, std::int64_t parts, const std::string& name = "g") {
    data = sbm_dataset(options);
    partition_dataset(data, name, parts, tmp.path(), {.method = PartMethod::metis, .seed = 2});
    config = tmp / (name + ".json");
    orig_of.assign(static_cast<std::size_t>(data.num_nodes), -1);
    for (std::int64_t p = 0; p < parts; ++p) {
      const Partition part = load_partition(config, p);
      for (std::int64_t v = 0; v < part.num_inner_nodes; ++v)
        orig_of[static_cast<std::size_t>(part.nid[static_cast<std::size_t>(v)])] =
            part.orig_nid[static_cast<std::size_t>(v)];
    }
  }
};

}  // namespace distgraph::test

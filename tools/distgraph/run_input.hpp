// A run's input: the partition of a dataset that a `distgraph train` or `distgraph infer`
// run works on (given, kept in a run folder, or made afresh), and the checks that a
// partition holds the graph the run expects.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/hetero_dataset.hpp"
#include "distgraph/partition/partition_config.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "distgraph/train/checkpoint.hpp"

namespace distgraph::cli {

/// The partition a run works on: its config, its number of parts (= loopback machines)
/// and, for a typed graph, the node type the run classifies.
struct RunPartition {
  std::filesystem::path config;
  std::int64_t num_parts = 0;
  std::optional<std::string> target;  // set for typed graphs
};

/// Where a training run's partition comes from (--part-config, --out, --parts, --resume,
/// --seed).
struct PartitionRequest {
  std::optional<std::string> part_config;  // a partition of the user's (--part-config)
  std::filesystem::path out;               // the run folder: its partition/ reused or made
  std::int64_t parts = 2;                  // parts of a partition made here
  bool resume = false;                     // only the run's own partition will do
  std::uint64_t seed = 0;                  // METIS's seed
};

/// `folder/partition/<dataset>.json`: the config of the partition a run made of `dataset`.
inline std::filesystem::path partition_config_in(const std::filesystem::path& folder,
                                                 const std::string& dataset) {
  return folder / "partition" / (dataset + ".json");
}

/// The partition config of run folder `run`: the one `partition/*.json` it holds.
inline std::filesystem::path run_folder_partition(const std::filesystem::path& run) {
  const std::filesystem::path dir = run / "partition";
  std::vector<std::filesystem::path> configs;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") configs.push_back(e.path());
  if (configs.size() != 1)
    throw PartitionError(dir.string() + ": " +
                         (configs.empty() ? "no partition config" : "several partition configs") +
                         "; expected the run's one partition (or give --part-config or a "
                         "dataset folder)");
  return configs.front();
}

/// Columns of node data "feat" in partition config `c` (-1 when it has none).
inline std::int64_t feat_columns(const PartitionConfig& c) {
  for (const auto& f : c.node_feats)
    if (f.name == "feat" && f.shape.size() == 2) return f.shape[1];
  return -1;
}

/// Partition config `config`, read; PartitionError unless it holds `d` (its node count and
/// feature width; edges may differ by the duplicates and self-loops the builder drops).
inline PartitionConfig matching_partition(const std::filesystem::path& config, const Dataset& d) {
  PartitionConfig c = read_partition_config(config);
  const auto mismatch = [&](const std::string& what, std::int64_t have, std::int64_t want) {
    throw PartitionError(config.string() + " does not match the dataset '" + d.name + "': " + what +
                         " " + std::to_string(have) + " in the partition, " + std::to_string(want) +
                         " in the dataset");
  };
  if (c.num_nodes != d.num_nodes) mismatch("nodes", c.num_nodes, d.num_nodes);
  const std::int64_t feat_cols = feat_columns(c);
  if (feat_cols != d.feat_dim) mismatch("feature columns", feat_cols, d.feat_dim);
  return c;
}

/// Partition config `config`, read; PartitionError unless it holds typed dataset `d` (its
/// node count and node types).
inline PartitionConfig matching_typed_partition(const std::filesystem::path& config,
                                                const HeteroDataset& d) {
  PartitionConfig c = read_partition_config(config);
  if (c.num_nodes != d.num_nodes() || c.ntypes != d.types.node_type_names())
    throw PartitionError(config.string() + " does not match the typed dataset '" + d.name +
                         "' (node count or node types differ)");
  return c;
}

/// Partitions `data` into `folder`/partition and returns the new partition's config.
inline std::filesystem::path fresh_partition(const Dataset& data,
                                             const std::filesystem::path& folder,
                                             std::int64_t parts, const PartitionOptions& opts) {
  partition_dataset(data, data.name, parts, folder / "partition", opts);
  return partition_config_in(folder, data.name);
}

/// The partition of homogeneous dataset `data` for a training run: the request's
/// --part-config (checked to match), a reusable one under out/partition, or a fresh METIS
/// partition there. Creates the run folder. A resumed run must find its own partition
/// (CheckpointError otherwise).
inline RunPartition dataset_partition(const Dataset& data, const PartitionRequest& r) {
  namespace fs = std::filesystem;
  if (r.part_config) {
    const fs::path config = fs::absolute(*r.part_config);
    const std::int64_t num_parts = matching_partition(config, data).num_parts;
    fs::create_directories(r.out);
    return {config, num_parts, std::nullopt};
  }
  const fs::path config = partition_config_in(r.out, data.name);
  bool reuse = false;
  if (fs::exists(config)) {
    try {
      reuse = matching_partition(config, data).num_parts == r.parts;
    } catch (const Error&) {
    }
  }
  if (!reuse) {
    if (r.resume)
      throw CheckpointError((r.out / "checkpoint.pt").string(),
                            "its run's partition " + config.string() +
                                " is missing or does not match this dataset and --parts");
    fs::create_directories(r.out);
    fresh_partition(data, r.out, r.parts, {.method = PartMethod::metis, .seed = r.seed});
  }
  return {config, r.parts, std::nullopt};
}

/// The partition of typed dataset `d` for a training run that classifies `target`: the
/// request's --part-config (checked to match) or a fresh METIS partition under
/// out/partition, balanced over the target's classes. Creates the run folder.
inline RunPartition typed_dataset_partition(const HeteroDataset& d, const std::string& target,
                                            const PartitionRequest& r) {
  namespace fs = std::filesystem;
  if (r.part_config) {
    const fs::path config = fs::absolute(*r.part_config);
    const std::int64_t num_parts = matching_typed_partition(config, d).num_parts;
    fs::create_directories(r.out);  // the loopback cluster's ip config is written there
    return {config, num_parts, target};
  }
  fs::create_directories(r.out);
  const auto classes = hetero_split_classes(d);
  partition_hetero_dataset(
      d, d.name, r.parts, r.out / "partition",
      {.method = PartMethod::metis, .balance_ntypes = classes, .seed = r.seed});
  return {partition_config_in(r.out, d.name), r.parts, target};
}

}  // namespace distgraph::cli

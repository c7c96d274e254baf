// partition_dataset: partition a Dataset (graph, features, labels, masks) in one call.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "distgraph/graph/builder.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/partition/partition_graph.hpp"

namespace distgraph {

/// The node classes `--balance-ntypes train` balances: 0 train, 1 val, 2 test, 3 other
/// (a node in several masks takes the first). Empty masks count as absent.
inline std::vector<std::int64_t> split_classes(const Dataset& d) {
  std::vector<std::int64_t> cls(static_cast<std::size_t>(d.num_nodes), 3);
  const Buffer<bool>* masks[] = {&d.train_mask, &d.val_mask, &d.test_mask};
  for (std::size_t v = 0; v < cls.size(); ++v)
    for (std::int64_t k = 2; k >= 0; --k)
      if (!masks[k]->empty() && (*masks[k])[v]) cls[v] = k;
  return cls;
}

/// The node data a Dataset carries, as partition_graph stores it: "feat", "label",
/// "train_mask", "val_mask", "test_mask" (those present).
inline TensorList dataset_node_data(const Dataset& d) {
  TensorList t;
  if (d.feat_dim > 0) t.emplace_back("feat", HostTensor::from(d.feat, {d.num_nodes, d.feat_dim}));
  if (!d.label.empty()) t.emplace_back("label", HostTensor::from(d.label));
  if (!d.train_mask.empty()) t.emplace_back("train_mask", HostTensor::from(d.train_mask));
  if (!d.val_mask.empty()) t.emplace_back("val_mask", HostTensor::from(d.val_mask));
  if (!d.test_mask.empty()) t.emplace_back("test_mask", HostTensor::from(d.test_mask));
  return t;
}

/// The graph of a Dataset, edges as stored (edge ID = position in src.npy/dst.npy).
inline Graph dataset_graph(const Dataset& d, unsigned num_threads = 0) {
  Coo coo{d.num_nodes, d.src, d.dst};
  BuildOptions b;
  b.num_threads = num_threads;
  return build_graph(coo, b);
}

/// Partitions `d` into `num_parts` under `out_dir` (see partition_graph), carrying its
/// features, labels and masks as node data.
inline PartitionResult partition_dataset(const Dataset& d, const std::string& name,
                                         std::int64_t num_parts,
                                         const std::filesystem::path& out_dir,
                                         const PartitionOptions& opts = {}) {
  const Graph g = dataset_graph(d, opts.num_threads);
  return partition_graph(g, name, num_parts, out_dir, opts, dataset_node_data(d));
}

}  // namespace distgraph

// partition_hetero_dataset: partition a typed dataset (typed graph, per-type features,
// the target's labels and masks) in one call.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "distgraph/graph/builder.hpp"
#include "distgraph/io/hetero_dataset.hpp"
#include "distgraph/partition/partition_graph.hpp"
#include "distgraph/partition/typed_data.hpp"

namespace distgraph {

/// The homogeneous view of `d` (DGL's `to_homogeneous`): node type t's type-wise ID i is
/// global ID `d.types.node_range(t).begin + i`, and edge type r's i-th edge (as stored) is
/// edge ID `d.types.edge_range(r).begin + i`. Blocks; deterministic.
inline Graph hetero_graph(const HeteroDataset& d, unsigned num_threads = 0) {
  const auto m = static_cast<std::size_t>(d.num_edges());
  std::vector<std::int64_t> src(m), dst(m);
  homogeneous_edges(d, 0, d.num_edges(), src.data(), dst.data());
  Coo coo{d.num_nodes(), Buffer<std::int64_t>(std::move(src)),
          Buffer<std::int64_t>(std::move(dst))};
  BuildOptions b;
  b.num_threads = num_threads;
  return build_graph(coo, d.types, b);
}

/// The typed node data of `d` as partition_graph stores it: "<ntype>/feat" for every
/// featured type, "<target>/label" and the target's masks (those present).
inline TensorList hetero_node_data(const HeteroDataset& d) {
  TensorList t;
  for (std::int32_t i = 0; i < d.types.num_node_types(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (d.feat_dim[k] > 0)
      t.emplace_back(typed_data_name(d.types.node_type_name(NodeType(i)), "feat"),
                     HostTensor::from(d.feat[k], {d.types.num_nodes(NodeType(i)), d.feat_dim[k]}));
  }
  if (d.target_ntype.empty()) return t;
  const auto name = [&](const char* n) { return typed_data_name(d.target_ntype, n); };
  if (!d.label.empty()) t.emplace_back(name("label"), HostTensor::from(d.label));
  if (!d.train_mask.empty()) t.emplace_back(name("train_mask"), HostTensor::from(d.train_mask));
  if (!d.val_mask.empty()) t.emplace_back(name("val_mask"), HostTensor::from(d.val_mask));
  if (!d.test_mask.empty()) t.emplace_back(name("test_mask"), HostTensor::from(d.test_mask));
  return t;
}

/// The classes `--balance-ntypes` balances on a typed graph, one per global node: the
/// target's train, val and test nodes are 0, 1, 2 (its unmasked nodes 3), and every other
/// node type t is class 4 + t, so each partition gets its share of every type and of
/// the target's split (DGL balances types and the training set the same way).
inline std::vector<std::int64_t> hetero_split_classes(const HeteroDataset& d) {
  std::vector<std::int64_t> cls(static_cast<std::size_t>(d.num_nodes()));
  const std::int32_t target = d.target_ntype.empty() ? -1 : d.target().value;
  for (std::int32_t t = 0; t < d.types.num_node_types(); ++t) {
    const IdRange r = d.types.node_range(NodeType(t));
    for (std::int64_t v = r.begin; v < r.end; ++v) {
      std::int64_t c = 4 + t;
      if (t == target) {
        const auto i = static_cast<std::size_t>(v - r.begin);
        c = 3;
        const Buffer<bool>* masks[] = {&d.test_mask, &d.val_mask, &d.train_mask};
        for (std::int64_t k = 0; k < 3; ++k)
          if (!masks[k]->empty() && (*masks[k])[i]) c = 2 - k;
      }
      cls[static_cast<std::size_t>(v)] = c;
    }
  }
  return cls;
}

/// Partitions `d` into `num_parts` under `out_dir` (see partition_graph): each partition
/// owns one contiguous ID range per node type and per edge type when relabeled, its rows
/// grouped by edge type, with every type's data as typed node data.
inline PartitionResult partition_hetero_dataset(const HeteroDataset& d, const std::string& name,
                                                std::int64_t num_parts,
                                                const std::filesystem::path& out_dir,
                                                const PartitionOptions& opts = {}) {
  const Graph g = hetero_graph(d, opts.num_threads);
  return partition_graph(g, name, num_parts, out_dir, opts, hetero_node_data(d));
}

}  // namespace distgraph

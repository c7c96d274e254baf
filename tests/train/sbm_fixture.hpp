// Test helper: a small SBM node-classification graph in memory, its batches and a model.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "batch_source.hpp"
#include "distgraph/core/buffer.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/nn/graph_sage.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/multi_layer.hpp"

namespace distgraph::test {

/// An SBM node-classification graph in memory (features well separated by class).
struct SbmFixture {
  Dataset data;
  Graph graph;
  explicit SbmFixture(int classes = 4) {
    SbmOptions o;
    o.num_nodes = 1200;
    o.num_classes = classes;
    o.avg_degree = 8;
    o.feat_dim = 16;
    o.feature_noise = 1.0;
    o.train_fraction = 0.3;
    o.val_fraction = 0.2;
    o.test_fraction = 0.5;
    o.seed = 5;
    o.num_threads = 1;
    data = sbm_dataset(o);
    graph = dataset_graph(data, 1);
  }

  std::vector<std::int64_t> ids(const Buffer<bool>& mask) const {
    std::vector<std::int64_t> out;
    for (std::size_t v = 0; v < mask.size(); ++v)
      if (mask[v]) out.push_back(static_cast<std::int64_t>(v));
    return out;
  }

  /// Batches of `seeds` sampled from the in-memory graph.
  TestBatchSource source(std::vector<std::int64_t> seeds, std::vector<std::int64_t> fanouts,
                         std::int64_t batch_size, std::int64_t rank = 0) const {
    auto sampler = std::make_shared<MultiLayerNeighborSampler<>>(
        std::move(fanouts), UniformSampler{}, SampleOptions{.num_threads = 1});
    return TestBatchSource(
        std::move(seeds), batch_size, true, 11, rank,
        [this, sampler](std::span<const std::int64_t> s, const SampleKey& key) {
          return sampler->sample_blocks(in_edges_view(graph), s, key);
        },
        [this](TestBatch& b) {
          b.feat_dim = data.feat_dim;
          b.features = test::gather_rows(data.feat.span(), data.feat_dim, b.input_nodes);
          for (const auto v : b.output_nodes)
            b.labels.push_back(data.label[static_cast<std::size_t>(v)]);
        });
  }

  GraphSAGE model() const {
    return GraphSAGE(GraphSAGEOptions{
        .in_feats = data.feat_dim, .hidden = 32, .num_classes = data.num_classes, .dropout = 0.2});
  }
};

}  // namespace distgraph::test

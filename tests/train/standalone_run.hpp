// Test helper: train GraphSAGE standalone on a dataset folder (partitioned, StandaloneCluster).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "batch_source.hpp"
#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/nn/graph_sage.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/train/trainer.hpp"

namespace distgraph::test {

/// The recipe of one run (the defaults are the ones reported for Cora).
struct RunSettings {
  std::int64_t epochs = 50;
  std::int64_t hidden = 64;
  std::vector<std::int64_t> fanouts{10, 25};
  std::int64_t batch_size = 1000;
  double lr = 0.01;
  double weight_decay = 5e-4;
  double dropout = 0.5;
  double input_dropout = 0.5;
  Aggregator aggregator = Aggregator::mean;
};

struct RunResult {
  double val = 0, test = 0, train_loss = 0, seconds = 0;
  double sample_s = 0, fetch_s = 0, compute_s = 0;  ///< summed over the training epochs
};

/// A dataset partitioned once into `parts` under a temporary folder, served in-process.
class StandaloneData {
 public:
  StandaloneData(const std::filesystem::path& dataset_dir, const std::filesystem::path& out_dir,
                 std::int64_t parts)
      : data_(load_dataset(dataset_dir)) {
    partition_dataset(data_, "data", parts, out_dir, {.method = PartMethod::metis, .seed = 1});
    const auto config = out_dir / "data.json";
    std::vector<std::int64_t> global_of(static_cast<std::size_t>(data_.num_nodes), -1);
    for (std::int64_t p = 0; p < parts; ++p) {
      const Partition part = load_partition(config, p);
      for (std::int64_t v = 0; v < part.num_inner_nodes; ++v)
        global_of[static_cast<std::size_t>(part.orig_nid[static_cast<std::size_t>(v)])] =
            part.nid[static_cast<std::size_t>(v)];
    }
    const auto ids = [&](const Buffer<bool>& mask) {
      std::vector<std::int64_t> out;
      for (std::size_t v = 0; v < mask.size(); ++v)
        if (mask[v]) out.push_back(global_of[v]);
      return out;
    };
    train_ = ids(data_.train_mask);
    val_ = ids(data_.val_mask);
    test_ = ids(data_.test_mask);
    cluster_ = std::make_unique<StandaloneCluster<>>(config);
  }

  const Dataset& dataset() const noexcept { return data_; }
  const std::vector<std::int64_t>& train_ids() const noexcept { return train_; }
  const std::vector<std::int64_t>& val_ids() const noexcept { return val_; }
  const std::vector<std::int64_t>& test_ids() const noexcept { return test_; }

  /// Batches of `seeds` sampled through the cluster's servers, features and labels pulled
  /// from them (what NodeDataLoader does).
  TestBatchSource source(std::vector<std::int64_t> seeds, std::vector<std::int64_t> fanouts,
                         std::int64_t batch_size, bool shuffle, std::uint64_t seed) {
    auto g = std::make_shared<StandaloneGraph>(cluster_->graph());
    auto feat = std::make_shared<StandaloneGraph::tensor_type<float>>(g->ndata<float>("feat"));
    auto label = std::make_shared<StandaloneGraph::tensor_type<std::int64_t>>(
        g->ndata<std::int64_t>("label"));
    return TestBatchSource(
        std::move(seeds), batch_size, shuffle, seed, 0,
        [g, fanouts](std::span<const std::int64_t> s, const SampleKey& key) {
          return sample_blocks(s, fanouts,
                               [&](std::span<const std::int64_t> layer_seeds, std::int64_t fanout,
                                   std::int32_t layer) {
                                 return g->sample_neighbors(layer_seeds, fanout,
                                                            key.at_layer(layer));
                               });
        },
        [feat, label](TestBatch& b) {
          b.feat_dim = feat->num_cols();
          b.features.resize(b.input_nodes.size() * static_cast<std::size_t>(b.feat_dim));
          feat->pull(b.input_nodes, b.features);
          b.labels = label->pull(b.output_nodes);
        });
  }

  /// Trains with `s` from torch seed `seed`, then evaluates on the validation and test
  /// sets with full neighbourhoods.
  RunResult run(const RunSettings& s, std::uint64_t seed) {
    Stopwatch clock;
    torch::manual_seed(seed);
    GraphSAGE model(GraphSAGEOptions{.in_feats = data_.feat_dim,
                                     .hidden = s.hidden,
                                     .num_classes = data_.num_classes,
                                     .num_layers = static_cast<std::int64_t>(s.fanouts.size()),
                                     .dropout = s.dropout,
                                     .input_dropout = s.input_dropout,
                                     .aggregator = s.aggregator});
    Trainer<GraphSAGE> trainer(model, {.lr = s.lr, .weight_decay = s.weight_decay});
    auto train = source(train_, s.fanouts, s.batch_size, true, seed);
    RunResult r;
    for (std::int64_t e = 0; e < s.epochs; ++e) {
      const EpochStats st = trainer.train_epoch(train, e);
      r.train_loss = st.loss;
      r.sample_s += st.sample_s;
      r.fetch_s += st.fetch_s;
      r.compute_s += st.compute_s;
    }
    const std::vector<std::int64_t> full(s.fanouts.size(), -1);
    auto val = source(val_, full, 4096, false, seed);
    auto test = source(test_, full, 4096, false, seed);
    r.val = trainer.evaluate(val).value;
    r.test = trainer.evaluate(test).value;
    r.seconds = clock.seconds();
    return r;
  }

 private:
  Dataset data_;
  std::vector<std::int64_t> train_, val_, test_;
  std::unique_ptr<StandaloneCluster<>> cluster_;
};

}  // namespace distgraph::test

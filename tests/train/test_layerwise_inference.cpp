// Layer-wise inference against the full-neighbourhood forward pass (GraphSAGE, GCN, GAT),
// standalone with one and with two trainers, and its input checks.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "distgraph/distributed/standalone.hpp"
#include "distgraph/infer/layerwise_inference.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/tasks/node_classification.hpp"
#include "support/temp_dir.hpp"

namespace test_train_layerwise_inference {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

constexpr std::int64_t feat_dim = 12, num_classes = 4;

/// A 400-node SBM graph in 2 METIS partitions, served in-process.
struct SmallGraph {
  TempDir tmp;
  std::unique_ptr<StandaloneCluster<>> cluster;
  SmallGraph() {
    partition_dataset(sbm_dataset({.num_nodes = 400,
                                   .num_classes = static_cast<int>(num_classes),
                                   .avg_degree = 6,
                                   .feat_dim = feat_dim,
                                   .seed = 3}),
                      "g", 2, tmp.path(), {.method = PartMethod::metis, .seed = 1});
    cluster = std::make_unique<StandaloneCluster<>>(tmp / "g.json");
  }
};

/// `kind` with 3 layers (two hidden ones) and small widths, from torch seed `seed`.
NodeModel make_model(ModelKind kind, std::uint64_t seed) {
  torch::manual_seed(seed);
  NodeClassificationOptions o = node_classification_recipe(kind);
  o.hidden = 16;
  o.heads = 4;
  o.fanouts = {-1, -1, -1};
  o.aggregator = Aggregator::pool;  // the aggregator with its own extra layer
  return distgraph::detail::make_node_model(o, feat_dim, num_classes);
}

/// Every node's last-layer input and output from model->forward over full neighbourhoods
/// of all nodes as seeds (row v is node v).
struct Reference {
  torch::Tensor embeddings, logits;
};

Reference full_forward(const StandaloneGraph& g, NodeModel& model) {
  torch::NoGradGuard no_grad;
  model->eval();
  std::vector<std::int64_t> all(static_cast<std::size_t>(g.num_nodes()));
  std::iota(all.begin(), all.end(), std::int64_t{0});
  const std::vector<std::int64_t> fanouts(model->num_layers(), -1);
  MiniBatch mb = sample_blocks(
      all, fanouts, [&](std::span<const std::int64_t> seeds, std::int64_t fanout, std::int32_t) {
        return g.sample_neighbors(seeds, fanout, SampleKey{});
      });
  REQUIRE(mb.input_nodes == all);  // every block's sources are all nodes, in seed order
  const auto feat = g.ndata<float>("feat").pull(mb.input_nodes);
  const auto x = torch::from_blob(const_cast<float*>(feat.data()),
                                  {g.num_nodes(), feat_dim}, torch::kFloat)
                     .clone();
  const auto blocks = block_tensors(mb.blocks);
  Reference ref;
  ref.logits = model->forward(blocks, x);
  torch::Tensor h = x;
  for (std::size_t l = 0; l + 1 < blocks.size(); ++l)
    h = model->forward_layer(l, blocks[l], h, l > 0 ? blocks[l - 1].in_degrees : torch::Tensor());
  ref.embeddings = h;
  return ref;
}

/// The rows of `r` put in node order (row v is node v), and a check that they cover every
/// node once.
void gather(const LayerwiseResult& r, torch::Tensor& emb, torch::Tensor& logits,
            std::vector<int>& seen) {
  for (std::size_t i = 0; i < r.nodes.size(); ++i) {
    const auto v = r.nodes[i];
    ++seen[static_cast<std::size_t>(v)];
    emb[v].copy_(r.embeddings[static_cast<std::int64_t>(i)]);
    logits[v].copy_(r.logits[static_cast<std::int64_t>(i)]);
  }
}

void check_close(const torch::Tensor& got, const torch::Tensor& want) {
  REQUIRE(got.sizes() == want.sizes());
  const double diff = (got - want).abs().max().item<double>();
  INFO("max abs difference " << diff);
  CHECK(diff <= 1e-5);
}

}  // namespace

TEST_CASE("layer-wise inference equals the full-neighbourhood forward pass for sage, gcn and gat",
          "[train]") {
  const ModelKind kind = GENERATE(ModelKind::sage, ModelKind::gcn, ModelKind::gat);
  INFO("model " << to_string(kind));
  SmallGraph small;
  const StandaloneGraph g = small.cluster->graph();
  NodeModel model = make_model(kind, 7);
  const Reference ref = full_forward(g, model);
  const auto n = g.num_nodes();
  // Batches of 37: most sources of a 1-hop block are not its destinations, so GCN needs
  // the graph's in-degrees to match.
  model->train();
  const LayerwiseResult r = layerwise_inference(g, model, {.batch_size = 37});
  CHECK(model->is_training());  // the caller's mode is restored
  CHECK(r.layer_s.size() == 3);
  CHECK(static_cast<std::int64_t>(r.nodes.size()) == n);
  torch::Tensor emb = torch::zeros({n, 16}), logits = torch::zeros({n, num_classes});
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  gather(r, emb, logits, seen);
  CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  check_close(logits, ref.logits);
  check_close(emb, ref.embeddings);
  // The layers' tensors are gone once the pass ends.
  for (const auto& spec : g.client().list(0))
    CHECK(spec.name.find("distgraph:infer/") == std::string::npos);
}

TEST_CASE("two trainers share layer-wise inference, each computing its own nodes", "[train]") {
  const ModelKind kind = GENERATE(ModelKind::sage, ModelKind::gcn, ModelKind::gat);
  INFO("model " << to_string(kind));
  SmallGraph small;
  NodeModel reference_model = make_model(kind, 11);
  const Reference ref = full_forward(small.cluster->graph(), reference_model);
  const StandaloneGraph g0 = small.cluster->graph(2), g1 = small.cluster->graph(2);
  NodeModel m0 = make_model(kind, 11), m1 = make_model(kind, 11);  // the same parameters
  LayerwiseResult r0, r1;
  std::thread other([&] { r1 = layerwise_inference(g1, m1, {.batch_size = 50, .rank = 1}); });
  r0 = layerwise_inference(g0, m0, {.batch_size = 50, .rank = 0});
  other.join();
  CHECK(!r0.nodes.empty());
  CHECK(!r1.nodes.empty());
  const auto n = g0.num_nodes();
  torch::Tensor emb = torch::zeros({n, 16}), logits = torch::zeros({n, num_classes});
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  gather(r0, emb, logits, seen);
  gather(r1, emb, logits, seen);
  CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  check_close(logits, ref.logits);
  check_close(emb, ref.embeddings);
}

TEST_CASE("layer-wise inference returns only what is asked and refuses bad input", "[train]") {
  SmallGraph small;
  const StandaloneGraph g = small.cluster->graph();
  NodeModel model = make_model(ModelKind::sage, 1);
  const auto only_logits = layerwise_inference(g, model, {.embeddings = false});
  CHECK(!only_logits.embeddings.defined());
  CHECK(only_logits.logits.size(1) == num_classes);
  CHECK_THROWS_AS(layerwise_inference(g, model, {.batch_size = 0}), InvalidArgument);
  CHECK_THROWS_AS(layerwise_inference(g, model, {.rank = 1}), IdOutOfRange);
  NodeClassificationOptions o = node_classification_recipe(ModelKind::sage);
  NodeModel wide = distgraph::detail::make_node_model(o, feat_dim + 1, num_classes);
  CHECK_THROWS_WITH(layerwise_inference(g, wide, {}),
                    Catch::Contains("13") && Catch::Contains("columns"));
}

}  // namespace test_train_layerwise_inference

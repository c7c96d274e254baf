// GCNConv and GCN against dense references (outputs and gradients), a hand-computed case,
// and the full-graph GCN on a block whose destinations are every node.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "distgraph/nn/gcn.hpp"
#include "support/dense_block.hpp"

namespace test_train_gcn {

using namespace distgraph;
using distgraph::test::dense_adjacency;

namespace {

/// A random block: `num_dst` destinations among `num_src` sources, up to 4 in-edges each
/// (repeats allowed, as with replacement; some destinations get none).
Block random_block(std::int64_t num_src, std::int64_t num_dst, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Block b;
  for (std::int64_t v = 0; v < num_src; ++v) b.src_nodes.push_back(100 + v);
  b.num_dst = num_dst;
  b.indptr = {0};
  for (std::int64_t d = 0; d < num_dst; ++d) {
    const auto deg = static_cast<std::int64_t>(rng() % 5);
    for (std::int64_t k = 0; k < deg; ++k) {
      b.indices.push_back(static_cast<std::int64_t>(rng() % static_cast<std::uint32_t>(num_src)));
      b.eid.push_back(static_cast<std::int64_t>(b.eid.size()));
    }
    b.indptr.push_back(static_cast<std::int64_t>(b.indices.size()));
  }
  return b;
}

/// D_dst^-1/2 (A + I) D_src^-1/2 for block adjacency `a` (I on the destination columns),
/// GCNConv's documented degrees plus the self-loop: in-edges for destinations and for
/// sources that are destinations, out-edges in the block for the other sources.
torch::Tensor dense_gcn_adjacency(const torch::Tensor& a) {
  const auto num_dst = a.size(0);
  auto s = a.clone();
  s.slice(1, 0, num_dst) += torch::eye(num_dst, torch::kDouble);
  const auto in_deg = a.sum(1);
  auto src_deg = a.sum(0);
  src_deg.slice(0, 0, num_dst).copy_(in_deg);
  return s * (in_deg + 1.0).rsqrt().unsqueeze(1) * (src_deg + 1.0).rsqrt().unsqueeze(0);
}

/// The symmetric graph on `n` nodes with edges {u, v} for each pair in `pairs` as one
/// block with every node a destination.
Block full_block(std::int64_t n, const std::vector<std::pair<int, int>>& pairs) {
  std::vector<std::vector<std::int64_t>> in(static_cast<std::size_t>(n));
  for (const auto& [u, v] : pairs) {
    in[static_cast<std::size_t>(v)].push_back(u);
    in[static_cast<std::size_t>(u)].push_back(v);
  }
  Block b;
  b.num_dst = n;
  b.indptr = {0};
  for (std::int64_t v = 0; v < n; ++v) {
    b.src_nodes.push_back(v);
    for (auto u : in[static_cast<std::size_t>(v)]) {
      b.indices.push_back(u);
      b.eid.push_back(static_cast<std::int64_t>(b.eid.size()));
    }
    b.indptr.push_back(static_cast<std::int64_t>(b.indices.size()));
  }
  return b;
}

}  // namespace

TEST_CASE("GCNConv matches a dense D^-1/2 (A + I) D^-1/2 X W in outputs and gradients", "[train]") {
  torch::manual_seed(3);
  const Block b = random_block(9, 5, 7);
  const auto a = dense_adjacency(b);
  const auto bt = block_tensors(b);
  // in > out projects first, in < out aggregates first: both orders.
  using Sizes = std::pair<std::int64_t, std::int64_t>;
  for (const auto& [in, out] : {Sizes{6, 3}, Sizes{3, 6}}) {
    for (const bool bias : {false, true}) {
      GCNConv conv(GCNConvOptions{.in_feats = in, .out_feats = out, .bias = bias});
      conv->to(torch::kDouble);
      if (bias) conv->bias().data().uniform_(-1, 1);
      const auto x = torch::randn({9, in}, torch::kDouble).requires_grad_(true);
      const auto r = torch::randn({5, out}, torch::kDouble);
      const auto y = conv->forward(bt, x);
      (y * r).sum().backward();

      const auto x2 = x.detach().clone().requires_grad_(true);
      const auto w2 = conv->weight().detach().clone().requires_grad_(true);
      auto ref = dense_gcn_adjacency(a).matmul(x2).matmul(w2);
      if (bias) ref = ref + conv->bias().detach();
      (ref * r).sum().backward();
      CHECK(torch::allclose(y, ref, 1e-10, 1e-12));
      CHECK(torch::allclose(x.grad(), x2.grad(), 1e-10, 1e-12));
      CHECK(torch::allclose(conv->weight().grad(), w2.grad(), 1e-10, 1e-12));
    }
  }
}

TEST_CASE("GCNConv on the path 0-1-2 gives the hand-computed normalised sums", "[train]") {
  const auto bt = block_tensors(full_block(3, {{0, 1}, {1, 2}}));
  GCNConv conv(GCNConvOptions{.in_feats = 1, .out_feats = 1});
  conv->to(torch::kDouble);
  conv->weight().data().fill_(1.0);
  const auto x = torch::tensor({1.0, 2.0, 3.0}, torch::kDouble).unsqueeze(1);
  const auto y = conv->forward(bt, x);
  // Degrees with the self-loop: 2, 3, 2.
  const double s6 = std::sqrt(6.0);
  CHECK(y[0].item<double>() == Approx(1.0 / 2 + 2.0 / s6));
  CHECK(y[1].item<double>() == Approx(1.0 / s6 + 2.0 / 3 + 3.0 / s6));
  CHECK(y[2].item<double>() == Approx(2.0 / s6 + 3.0 / 2));
}

TEST_CASE("GCN over blocks of every node equals the full-graph GCN, also in float32", "[train]") {
  torch::manual_seed(5);
  const std::int64_t n = 12;
  std::vector<std::pair<int, int>> pairs;
  std::mt19937 rng(11);
  for (int k = 0; k < 20; ++k) {
    const int u = static_cast<int>(rng() % n), v = static_cast<int>(rng() % n);
    if (u != v) pairs.emplace_back(u, v);
  }
  const Block b = full_block(n, pairs);
  // The whole graph's A_hat, from the edge list alone (as ../shared/data/ref_gnn.py).
  auto adj = torch::zeros({n, n}, torch::kDouble);
  for (const auto& [u, v] : pairs) {
    adj[u][v] += 1.0;
    adj[v][u] += 1.0;
  }
  adj += torch::eye(n, torch::kDouble);
  const auto dinv = adj.sum(1).rsqrt();
  const auto a_hat = dinv.unsqueeze(1) * adj * dinv.unsqueeze(0);

  GCN model(GCNOptions{.in_feats = 7, .hidden = 5, .num_classes = 3});
  model->eval();
  const auto x = torch::randn({n, 7});
  const std::vector<BlockTensors> blocks{block_tensors(b), block_tensors(b)};
  const auto y = model->forward(blocks, x);
  const auto w1 = model->layer(0)->weight().to(torch::kDouble);
  const auto w2 = model->layer(1)->weight().to(torch::kDouble);
  const auto ref =
      a_hat.matmul(torch::relu(a_hat.matmul(x.to(torch::kDouble)).matmul(w1))).matmul(w2);
  CHECK(torch::allclose(y.to(torch::kDouble), ref, 1e-4, 1e-5));
  CHECK(y.size(0) == n);
  CHECK(y.size(1) == 3);
  CHECK_THROWS_AS(model->forward({blocks[0]}, x), ShapeError);
}

TEST_CASE("GCN has Kipf & Welling's parameters and rejects bad sizes", "[train]") {
  GCN model(GCNOptions{.in_feats = 10, .hidden = 16, .num_classes = 4});
  const auto params = model->named_parameters();
  REQUIRE(params.size() == 2);  // no bias
  CHECK(params["layers.0.weight"].sizes() == torch::IntArrayRef({10, 16}));
  CHECK(params["layers.1.weight"].sizes() == torch::IntArrayRef({16, 4}));
  // Glorot-uniform: |w| <= sqrt(6 / (fan_in + fan_out)).
  CHECK(params["layers.0.weight"].abs().max().item<double>() <= std::sqrt(6.0 / 26) + 1e-6);
  CHECK_THROWS_AS(GCN(GCNOptions{.in_feats = 0, .num_classes = 2}), InvalidArgument);
  CHECK_THROWS_AS(GCN(GCNOptions{.in_feats = 3, .num_classes = 2, .dropout = 1.0}),
                  InvalidArgument);
}

}  // namespace test_train_gcn

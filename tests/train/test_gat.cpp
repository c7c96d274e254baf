// GATConv and GAT against a dense masked-softmax reference (outputs and gradients), a
// hand-computed case, the heads check, and NodeModel's checkpoints and names.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "distgraph/nn/gat.hpp"
#include "distgraph/nn/node_model.hpp"

namespace test_train_gat {

using namespace distgraph;

namespace {

/// 5 destinations, 9 sources: destination 1 has no in-edge, destination 3 the edge from
/// source 6 twice (sampling with replacement), destination 0 an edge from itself.
Block small_block() {
  Block b;
  for (std::int64_t v = 0; v < 9; ++v) b.src_nodes.push_back(50 + v);
  b.num_dst = 5;
  b.indptr = {0, 3, 3, 5, 9, 11};
  b.indices = {0, 5, 7, 8, 2, 6, 6, 1, 4, 3, 0};
  for (std::int64_t k = 0; k < 11; ++k) b.eid.push_back(k);
  return b;
}

/// Dense [num_dst, num_src] edge counts of `b`, plus one self-loop per destination.
torch::Tensor counts_with_self_loops(const Block& b) {
  auto c = torch::zeros({b.num_dst, b.num_src()}, torch::kDouble);
  for (std::int64_t i = 0; i < b.num_dst; ++i) {
    c[i][i] += 1.0;
    for (auto k = b.indptr[static_cast<std::size_t>(i)];
         k < b.indptr[static_cast<std::size_t>(i) + 1]; ++k)
      c[i][b.indices[static_cast<std::size_t>(k)]] += 1.0;
  }
  return c;
}

/// GATConv with dense matrices: a softmax over each destination's row masked by the edge
/// counts (an edge listed twice counts twice), [num_dst, heads, f].
torch::Tensor dense_gat(const torch::Tensor& counts, const torch::Tensor& x, const torch::Tensor& w,
                        const torch::Tensor& al, const torch::Tensor& ar, const torch::Tensor& bias,
                        std::int64_t heads, double slope) {
  const auto num_dst = counts.size(0), num_src = counts.size(1);
  const auto z = x.matmul(w.t()).view({num_src, heads, -1});
  const auto el = (z * al).sum(-1);                                            // [src, heads]
  const auto er = (z.slice(0, 0, num_dst) * ar).sum(-1);                       // [dst, heads]
  const auto e = torch::leaky_relu(er.unsqueeze(1) + el.unsqueeze(0), slope);  // [dst, src, h]
  const auto c = counts.unsqueeze(2);
  const auto masked = torch::where(c > 0, e, torch::full_like(e, -1e300));
  const auto top = std::get<0>(masked.max(1, /*keepdim=*/true));
  const auto ex = c * (masked - top).exp();
  const auto alpha = ex / ex.sum(1, /*keepdim=*/true);  // [dst, src, h]
  auto out = torch::einsum("dsh,shf->dhf", {alpha, z});
  return bias.defined() ? out + bias.view({1, heads, -1}) : out;
}

}  // namespace

TEST_CASE("GATConv matches a dense masked-softmax reference in outputs and gradients", "[train]") {
  torch::manual_seed(9);
  const Block b = small_block();
  const auto counts = counts_with_self_loops(b);
  const auto bt = block_tensors(b);
  for (const std::int64_t heads : {1, 3}) {
    GATConv conv(GATConvOptions{.in_feats = 4, .out_feats = 2, .heads = heads});
    conv->to(torch::kDouble);
    conv->bias().data().uniform_(-1, 1);
    conv->eval();
    const auto x = torch::randn({9, 4}, torch::kDouble).requires_grad_(true);
    const auto r = torch::randn({5, heads, 2}, torch::kDouble);
    const auto y = conv->forward(bt, x);
    REQUIRE(y.sizes() == torch::IntArrayRef({5, heads, 2}));
    (y * r).sum().backward();

    const auto leaf = [](const torch::Tensor& t) {
      return t.detach().clone().requires_grad_(true);
    };
    const auto x2 = leaf(x), w2 = leaf(conv->fc()->weight), al2 = leaf(conv->attn_l()),
               ar2 = leaf(conv->attn_r()), b2 = leaf(conv->bias());
    const auto ref = dense_gat(counts, x2, w2, al2, ar2, b2, heads, 0.2);
    (ref * r).sum().backward();
    CHECK(torch::allclose(y, ref, 1e-9, 1e-11));
    CHECK(torch::allclose(x.grad(), x2.grad(), 1e-9, 1e-11));
    CHECK(torch::allclose(conv->fc()->weight.grad(), w2.grad(), 1e-9, 1e-11));
    CHECK(torch::allclose(conv->attn_l().grad(), al2.grad(), 1e-9, 1e-11));
    CHECK(torch::allclose(conv->attn_r().grad(), ar2.grad(), 1e-9, 1e-11));
    CHECK(torch::allclose(conv->bias().grad(), b2.grad(), 1e-9, 1e-11));
  }
}

TEST_CASE("GATConv with zero attention vectors averages each destination's edges and itself",
          "[train]") {
  GATConv conv(GATConvOptions{.in_feats = 1, .out_feats = 1, .heads = 1});
  conv->to(torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    conv->fc()->weight.fill_(1.0);
    conv->attn_l().zero_();
    conv->attn_r().zero_();
  }
  // Destination 0 <- sources 1, 2; destination 1 <- nothing.
  Block b;
  b.src_nodes = {7, 8, 9};
  b.num_dst = 2;
  b.indptr = {0, 2, 2};
  b.indices = {1, 2};
  b.eid = {0, 1};
  const auto x = torch::tensor({1.0, 2.0, 6.0}, torch::kDouble).unsqueeze(1);
  const auto y = conv->forward(block_tensors(b), x);
  CHECK(y[0][0][0].item<double>() == Approx((1.0 + 2.0 + 6.0) / 3));
  CHECK(y[1][0][0].item<double>() == Approx(2.0));  // its self-loop alone
}

TEST_CASE("GATConv's attention dropout acts while training only, reproducibly", "[train]") {
  GATConv conv(GATConvOptions{.in_feats = 3, .out_feats = 4, .heads = 2, .attn_dropout = 0.5});
  const auto bt = block_tensors(small_block());
  const auto x = torch::randn({9, 3});
  conv->eval();
  const auto clean = conv->forward(bt, x);
  conv->train();
  torch::manual_seed(1);
  const auto a = conv->forward(bt, x);
  torch::manual_seed(1);
  const auto b = conv->forward(bt, x);
  CHECK(torch::equal(a, b));
  CHECK_FALSE(torch::allclose(a, clean));
}

TEST_CASE("GAT concatenates hidden heads, averages the output heads and checks its heads",
          "[train]") {
  torch::manual_seed(2);
  GAT model(GATOptions{.in_feats = 4, .hidden = 6, .num_classes = 3, .heads = 3, .out_heads = 2});
  model->eval();
  const Block b0 = small_block();
  // Layer 1: the 5 destinations of b0 as sources, 2 destinations.
  Block b1;
  for (std::int64_t v = 0; v < 5; ++v) b1.src_nodes.push_back(50 + v);
  b1.num_dst = 2;
  b1.indptr = {0, 2, 4};
  b1.indices = {3, 4, 0, 2};
  b1.eid = {0, 1, 2, 3};
  const std::vector<BlockTensors> blocks{block_tensors(b0), block_tensors(b1)};
  const auto x = torch::randn({9, 4});
  const auto y = model->forward(blocks, x);
  const auto h = torch::elu(model->layer(0)->forward(blocks[0], x).flatten(1));
  const auto ref = model->layer(1)->forward(blocks[1], h).mean(1);
  CHECK(torch::allclose(y, ref));
  CHECK(y.sizes() == torch::IntArrayRef({2, 3}));
  CHECK(model->layer(0)->options().out_feats == 2);
  CHECK_THROWS_AS(GAT(GATOptions{.in_feats = 4, .hidden = 64, .num_classes = 3, .heads = 3}),
                  InvalidArgument);
  CHECK_THROWS_AS(model->forward({blocks[0]}, x), ShapeError);
}

TEST_CASE("NodeModel saves and loads exactly what the wrapped model would", "[train]") {
  torch::manual_seed(4);
  const GCNOptions o{.in_feats = 5, .hidden = 4, .num_classes = 2};
  NodeModel wrapped(GCN{o});
  CHECK(wrapped->kind() == ModelKind::gcn);
  GCN bare(o);
  torch::serialize::OutputArchive out;
  wrapped->save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  torch::serialize::InputArchive in;
  std::istringstream read(bytes.str());
  in.load_from(read);
  bare->load(in);
  const auto wp = wrapped->parameters(), bp = bare->parameters();
  REQUIRE(wp.size() == bp.size());
  for (std::size_t i = 0; i < wp.size(); ++i) CHECK(torch::equal(wp[i], bp[i]));
  // Another model's archive does not load.
  NodeModel gat(GAT(GATOptions{.in_feats = 5, .hidden = 4, .num_classes = 2, .heads = 2}));
  torch::serialize::InputArchive again;
  std::istringstream reread(bytes.str());
  again.load_from(reread);
  CHECK_THROWS(gat->load(again));
}

TEST_CASE("model kinds round-trip through their names, and others are refused by name", "[train]") {
  for (const auto m : {ModelKind::sage, ModelKind::gcn, ModelKind::gat})
    CHECK(parse_model_kind(to_string(m)) == m);
  try {
    parse_model_kind("gin");
    FAIL("no exception");
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()).find("'gin'; expected sage, gcn or gat") != std::string::npos);
  }
}

}  // namespace test_train_gat

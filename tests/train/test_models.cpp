// Blocks as tensors, SAGEConv against a dense reference (outputs and gradients), GraphSAGE,
// and ROC-AUC.
#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "distgraph/torch.hpp"
#include "support/dense_block.hpp"

namespace test_train_models {

using namespace distgraph;
using distgraph::test::dense_adjacency;

namespace {

/// 4 destinations, 7 sources: destination 2 has no in-edge, destination 1 has the edge
/// from source 5 twice (sampling with replacement), destination 0 a self edge (source 0).
Block small_block() {
  Block b;
  b.src_nodes = {10, 11, 12, 13, 14, 15, 16};
  b.num_dst = 4;
  b.indptr = {0, 3, 6, 6, 9};
  b.indices = {0, 4, 5, 5, 5, 6, 1, 2, 4};
  b.eid = {100, 101, 102, 103, 104, 105, 106, 107, 108};
  return b;
}

/// The same layer written with dense matrices (DGL's formulas).
torch::Tensor dense_sage(SAGEConv& conv, const torch::Tensor& a, const torch::Tensor& h,
                         std::int64_t num_dst) {
  const auto deg = a.sum(1, /*keepdim=*/true);
  const auto h_dst = h.slice(0, 0, num_dst);
  const auto w = [](torch::nn::Linear& l) { return l->weight.t(); };
  torch::Tensor out;
  switch (conv->options().aggregator) {
    case Aggregator::mean:
      out = h_dst.matmul(w(conv->fc_self())) +
            (a / deg.clamp_min(1.0)).matmul(h).matmul(w(conv->fc_neigh()));
      break;
    case Aggregator::gcn:
      out = ((a.matmul(h) + h_dst) / (deg + 1.0)).matmul(w(conv->fc_neigh()));
      break;
    case Aggregator::pool: {
      const auto p = torch::relu(h.matmul(w(conv->fc_pool())) + conv->fc_pool()->bias);
      const auto has_edge = (a > 0).unsqueeze(2);  // [dst, src, 1]
      const auto masked =
          torch::where(has_edge, p.unsqueeze(0),
                       torch::full({}, -std::numeric_limits<double>::infinity(), torch::kDouble));
      const auto m = torch::where(deg > 0, masked.amax(1), torch::zeros({}, torch::kDouble));
      out = h_dst.matmul(w(conv->fc_self())) + m.matmul(w(conv->fc_neigh()));
      break;
    }
  }
  return out + conv->bias();
}

std::vector<torch::Tensor> grads_of(SAGEConv& conv, const torch::Tensor& h) {
  std::vector<torch::Tensor> g{h.grad().clone()};
  for (auto& p : conv->parameters()) g.push_back(p.grad().clone());
  return g;
}

void zero_grads(SAGEConv& conv, torch::Tensor& h) {
  h.mutable_grad() = torch::Tensor();
  for (auto& p : conv->parameters()) p.mutable_grad() = torch::Tensor();
}

}  // namespace

TEST_CASE("block_tensors holds a block's CSR with the destination of every edge", "[train]") {
  const Block b = small_block();
  const BlockTensors t = block_tensors(b);
  CHECK(t.num_src == 7);
  CHECK(t.num_dst == 4);
  CHECK(t.num_edges() == 9);
  CHECK(t.indptr.scalar_type() == torch::kLong);
  CHECK(torch::equal(t.indptr, torch::tensor({0, 3, 6, 6, 9}, torch::kLong)));
  CHECK(torch::equal(t.indices, torch::tensor({0, 4, 5, 5, 5, 6, 1, 2, 4}, torch::kLong)));
  CHECK(torch::equal(t.dst_index, torch::tensor({0, 0, 0, 1, 1, 1, 3, 3, 3}, torch::kLong)));
  CHECK(torch::equal(t.in_degrees, torch::tensor({3, 3, 0, 3}, torch::kLong)));
}

TEST_CASE("block_tensors takes over a moved block's arrays without copying", "[train]") {
  Block b = small_block();
  const auto* data = b.indices.data();
  const BlockTensors t = block_tensors(std::move(b));
  CHECK(t.indices.data_ptr<std::int64_t>() == data);
  CHECK(torch::equal(t.indices, torch::tensor({0, 4, 5, 5, 5, 6, 1, 2, 4}, torch::kLong)));
  // Tensors outlive the (moved-from) block they came from.
  const BlockTensors copy = t;
  CHECK(copy.indices.data_ptr<std::int64_t>() == data);
}

TEST_CASE("block_tensors rejects malformed blocks naming the array at fault", "[train]") {
  Block b = small_block();
  b.indices[3] = 7;
  CHECK_THROWS_AS(block_tensors(b), IdOutOfRange);
  b = small_block();
  b.indptr.pop_back();
  CHECK_THROWS_WITH(block_tensors(b), Catch::Contains("indptr has 4 entries"));
  b = small_block();
  b.indptr.back() = 8;
  CHECK_THROWS_AS(block_tensors(b), ShapeError);
  b = small_block();
  b.num_dst = 8;
  CHECK_THROWS_AS(block_tensors(b), ShapeError);
}

TEST_CASE("block_tensors of an edgeless block gives empty edge tensors", "[train]") {
  Block b;
  b.src_nodes = {3, 4};
  b.num_dst = 2;
  b.indptr = {0, 0, 0};
  const BlockTensors t = block_tensors(std::move(b));
  CHECK(t.num_edges() == 0);
  CHECK(t.dst_index.numel() == 0);
  SAGEConv conv(SAGEConvOptions{.in_feats = 3, .out_feats = 2});
  const auto out = conv->forward(t, torch::ones({2, 3}));
  CHECK(out.sizes() == torch::IntArrayRef({2, 2}));
}

TEST_CASE("SAGEConv matches a dense reference in outputs and gradients for every aggregator",
          "[train]") {
  const Aggregator agg = GENERATE(Aggregator::mean, Aggregator::gcn, Aggregator::pool);
  // 5 -> 3 projects before aggregating (DGL's lin_before_mp), 3 -> 5 after.
  const auto dims = GENERATE(std::pair<std::int64_t, std::int64_t>{5, 3},
                             std::pair<std::int64_t, std::int64_t>{3, 5});
  INFO("aggregator " << to_string(agg) << ", " << dims.first << " -> " << dims.second);
  torch::manual_seed(7);
  const Block b = small_block();
  const BlockTensors t = block_tensors(b);
  SAGEConv conv(
      SAGEConvOptions{.in_feats = dims.first, .out_feats = dims.second, .aggregator = agg});
  conv->to(torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    conv->bias().uniform_(-0.5, 0.5);  // a zero bias would hide a missing bias gradient
  }
  auto h = torch::randn({b.num_src(), dims.first}, torch::kDouble).requires_grad_(true);
  const auto weight = torch::randn({b.num_dst, dims.second}, torch::kDouble);

  const auto out = conv->forward(t, h);
  (out * weight).sum().backward();
  const auto got = grads_of(conv, h);
  zero_grads(conv, h);

  const auto ref = dense_sage(conv, dense_adjacency(b), h, b.num_dst);
  (ref * weight).sum().backward();
  const auto want = grads_of(conv, h);

  CHECK(torch::allclose(out, ref, 1e-5, 1e-5));
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("gradient " << i << " (0 = input, then parameters)");
    CHECK(torch::allclose(got[i], want[i], 1e-5, 1e-5));
  }
  // The isolated destination (2) only sees its own row (mean, pool) or itself over 1 (gcn).
  if (agg == Aggregator::gcn) {
    CHECK(torch::allclose(out[2], conv->fc_neigh()->forward(h[2]) + conv->bias(), 1e-9, 1e-9));
  } else {
    CHECK(torch::allclose(out[2], conv->fc_self()->forward(h[2]) + conv->bias(), 1e-9, 1e-9));
  }
}

TEST_CASE("csr_sum walks the CSR as index_select + index_add would, any thread count", "[train]") {
  // A random block with duplicate edges, empty rows and hub sources.
  std::mt19937_64 rng(3);
  Block b;
  b.num_dst = 300;
  b.src_nodes.resize(1000);
  b.indptr = {0};
  for (std::int64_t d = 0; d < b.num_dst; ++d) {
    const auto deg = static_cast<std::int64_t>(rng() % 12);
    for (std::int64_t k = 0; k < deg; ++k)
      b.indices.push_back(static_cast<std::int64_t>(rng() % (k % 3 == 0 ? 10 : 1000)));
    b.indptr.push_back(static_cast<std::int64_t>(b.indices.size()));
  }
  const BlockTensors t = block_tensors(b);
  const auto msg = torch::randn({1000, 37}).requires_grad_(true);
  const auto upstream = torch::randn({b.num_dst, 37});
  const auto reference_sum =
      torch::zeros({b.num_dst, 37}).index_add(0, t.dst_index, msg.index_select(0, t.indices));
  const auto reference_grad = torch::autograd::grad({reference_sum}, {msg}, {upstream})[0];
  const int threads = torch::get_num_threads();
  std::vector<torch::Tensor> sums, grads;
  for (const int n : {1, 2, 3}) {
    torch::set_num_threads(n);
    const auto sum = csr_sum(t, msg);
    sums.push_back(sum.detach());
    grads.push_back(torch::autograd::grad({sum}, {msg}, {upstream})[0]);
  }
  torch::set_num_threads(threads);
  CHECK(torch::allclose(sums[0], reference_sum, 1e-5, 1e-5));
  CHECK(torch::allclose(grads[0], reference_grad, 1e-5, 1e-5));
  for (std::size_t i = 1; i < sums.size(); ++i) {
    CHECK(torch::equal(sums[i], sums[0]));
    CHECK(torch::equal(grads[i], grads[0]));
  }
  // Without autograd (fixed features) the same sum.
  CHECK(torch::equal(csr_sum(t, msg.detach()), sums[0]));
}

TEST_CASE("SAGEConv has DGL's parameters for each aggregator", "[train]") {
  const auto names = [](Aggregator a) {
    SAGEConv conv(SAGEConvOptions{.in_feats = 4, .out_feats = 2, .aggregator = a});
    std::vector<std::string> out;
    for (const auto& p : conv->named_parameters()) out.push_back(p.key());
    std::sort(out.begin(), out.end());
    return out;
  };
  CHECK(names(Aggregator::mean) ==
        std::vector<std::string>{"bias", "fc_neigh.weight", "fc_self.weight"});
  CHECK(names(Aggregator::gcn) == std::vector<std::string>{"bias", "fc_neigh.weight"});
  CHECK(names(Aggregator::pool) == std::vector<std::string>{"bias", "fc_neigh.weight",
                                                            "fc_pool.bias", "fc_pool.weight",
                                                            "fc_self.weight"});
  CHECK_THROWS_AS(SAGEConv(SAGEConvOptions{.in_feats = 0, .out_feats = 2}), InvalidArgument);
  SAGEConv conv(SAGEConvOptions{.in_feats = 4, .out_feats = 2});
  CHECK_THROWS_WITH(conv->forward(block_tensors(small_block()), torch::ones({7, 3})),
                    Catch::Contains("shape [7, 3]; expected [7, 4]"));
}

TEST_CASE("GraphSAGE chains its layers over the blocks and checks them", "[train]") {
  torch::manual_seed(1);
  // Two layers: block 0 has 7 sources -> 4 destinations, block 1 has 4 -> 2.
  Block top;
  top.src_nodes = {10, 11, 12, 13};
  top.num_dst = 2;
  top.indptr = {0, 2, 3};
  top.indices = {2, 3, 1};
  top.eid = {0, 1, 2};
  const std::vector<BlockTensors> blocks{block_tensors(small_block()), block_tensors(top)};
  GraphSAGE model(GraphSAGEOptions{.in_feats = 5, .hidden = 8, .num_classes = 3, .dropout = 0.5});
  const auto x = torch::randn({7, 5});
  model->eval();
  const auto a = model->forward(blocks, x);
  CHECK(a.sizes() == torch::IntArrayRef({2, 3}));
  CHECK(torch::equal(a, model->forward(blocks, x)));  // no dropout in eval mode
  model->train();
  CHECK_FALSE(torch::equal(a, model->forward(blocks, x)));
  CHECK(model->parameters().size() == 6);

  CHECK_THROWS_AS(model->forward({blocks[0]}, x), ShapeError);
  CHECK_THROWS_AS(model->forward({blocks[1], blocks[0]}, x), ShapeError);
  CHECK_THROWS_AS(model->forward(blocks, torch::randn({6, 5})), ShapeError);
  CHECK_THROWS_AS(
      GraphSAGE(GraphSAGEOptions{.in_feats = 5, .hidden = 8, .num_classes = 3, .dropout = 1.0}),
      InvalidArgument);
}

TEST_CASE("roc_auc counts ties as one half and matches the pairwise definition", "[train]") {
  CHECK(roc_auc(std::vector<double>{0.1, 0.4, 0.35, 0.8}, std::vector<std::int64_t>{0, 0, 1, 1}) ==
        Approx(0.75));
  CHECK(roc_auc(std::vector<double>{1, 2, 3}, std::vector<std::int64_t>{0, 1, 1}) == 1.0);
  CHECK(roc_auc(std::vector<double>{3, 2, 1}, std::vector<std::int64_t>{0, 1, 1}) == 0.0);
  CHECK(roc_auc(std::vector<double>{0.5, 0.5, 0.5, 0.5}, std::vector<std::int64_t>{0, 1, 0, 1}) ==
        0.5);
  // Random scores with many ties against the O(n^2) pairwise count.
  std::mt19937 rng(3);
  std::vector<double> s(300);
  std::vector<std::int64_t> y(300);
  for (std::size_t i = 0; i < s.size(); ++i) {
    s[i] = static_cast<double>(rng() % 20);
    y[i] = static_cast<std::int64_t>(rng() % 3 == 0);
  }
  double wins = 0, pairs = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    for (std::size_t j = 0; j < s.size(); ++j)
      if (y[i] == 1 && y[j] == 0) {
        pairs += 1;
        wins += s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0;
      }
  CHECK(roc_auc(s, y) == Approx(wins / pairs).epsilon(1e-12));
  CHECK_THROWS_AS(roc_auc(std::vector<double>{1, 2}, std::vector<std::int64_t>{1, 1}),
                  InvalidArgument);
  CHECK_THROWS_AS(roc_auc(std::vector<double>{1, 2}, std::vector<std::int64_t>{0, 2}),
                  InvalidArgument);
  CHECK_THROWS_AS(roc_auc(std::vector<double>{1}, std::vector<std::int64_t>{0, 1}), ShapeError);
}

TEST_CASE("the dropout mask keeps 1 - p of the values, scaled, reproducibly under manual_seed",
          "[train]") {
  torch::manual_seed(5);
  const auto a = distgraph::detail::dropout_mask({300, 1000}, 0.3, torch::kFloat);
  const double kept = (a > 0).sum().item<double>() / 300000.0;
  CHECK(kept == Approx(0.7).margin(0.005));  // 30 standard deviations of 8.4e-4 apart
  CHECK(a.max().item<float>() == Approx(1.0 / 0.7));
  CHECK(a.mean().item<double>() == Approx(1.0).margin(0.01));
  torch::manual_seed(5);
  CHECK(torch::equal(a, distgraph::detail::dropout_mask({300, 1000}, 0.3, torch::kFloat)));
  CHECK_FALSE(torch::equal(a, distgraph::detail::dropout_mask({300, 1000}, 0.3, torch::kFloat)));
  CHECK(distgraph::detail::dropout_mask({4}, 0.5, torch::kDouble).scalar_type() == torch::kDouble);
  // Four values share one hash: neighbours must still be independent (0.7^2 kept together),
  // and a size that is not a multiple of four is filled to its end.
  const auto flat = (a.reshape({-1}) > 0).to(torch::kDouble);
  const double both = (flat.slice(0, 0, -1) * flat.slice(0, 1)).mean().item<double>();
  CHECK(both == Approx(0.49).margin(0.01));
  const auto odd = distgraph::detail::dropout_mask({5, 3}, 0.5, torch::kFloat);
  CHECK(((odd == 0) | (odd == 2)).all().item<bool>());
}

TEST_CASE("dropout multiplies by the mask of its seed and drops the gradient at the same places",
          "[train]") {
  for (const auto dtype : {torch::kFloat, torch::kDouble}) {
    // 4099 values: whole groups of four and a tail.
    const auto x = torch::randn({4099}, dtype).requires_grad_(true);
    torch::manual_seed(11);
    const auto mask = distgraph::detail::dropout_mask({4099}, 0.4, dtype);
    torch::manual_seed(11);
    const auto y = distgraph::dropout(x, 0.4);
    CHECK(torch::equal(y, x.detach() * mask));
    const auto upstream = torch::randn({4099}, dtype);
    y.backward(upstream);
    CHECK(torch::equal(x.grad(), upstream * mask));
    torch::manual_seed(11);  // without autograd: the same values
    CHECK(torch::equal(distgraph::dropout(x.detach(), 0.4), y.detach()));
    CHECK(torch::equal(distgraph::dropout(x.detach(), 0.0), x.detach()));
  }
  // Other dtypes fall back to rand_like and keep their dtype.
  const auto h = distgraph::dropout(torch::ones({64}, torch::kHalf), 0.5);
  CHECK(h.scalar_type() == torch::kHalf);
  CHECK(((h == 0) | (h == 2)).all().item<bool>());
}

TEST_CASE("relu_dropout is dropout of relu in one pass, values and gradients", "[train]") {
  for (const auto dtype : {torch::kFloat, torch::kDouble}) {
    auto x = torch::randn({4099}, dtype);
    x[5] = 0.0;  // relu's gradient at 0 is 0
    x[9] = std::numeric_limits<double>::quiet_NaN();
    const auto a = x.clone().requires_grad_(true), b = x.clone().requires_grad_(true);
    torch::manual_seed(12);
    const auto unfused = distgraph::dropout(torch::relu(a), 0.3);
    torch::manual_seed(12);
    const auto fused = distgraph::relu_dropout(b, 0.3);
    const auto same = [](const torch::Tensor& u, const torch::Tensor& v) {
      return torch::equal(torch::nan_to_num(u, 7.0), torch::nan_to_num(v, 7.0)) &&
             torch::equal(torch::isnan(u), torch::isnan(v));
    };
    CHECK(same(fused.detach(), unfused.detach()));
    const auto upstream = torch::randn({4099}, dtype);
    unfused.backward(upstream);
    fused.backward(upstream);
    CHECK(same(b.grad(), a.grad()));
    // The mask bites: about 30% of the positive values dropped, none of the negatives kept.
    const auto positive = (x > 0).sum().item<double>();
    const auto kept = (fused.detach() > 0).sum().item<double>();
    CHECK(kept / positive == Approx(0.7).margin(0.04));
    CHECK_FALSE(((fused.detach() != 0) & (x < 0)).any().item<bool>());
    CHECK(std::isnan(fused[9].item<double>()) == std::isnan(unfused[9].item<double>()));
  }
  // p == 0: plain relu.
  const auto x = torch::randn({64});
  CHECK(torch::equal(distgraph::relu_dropout(x, 0.0), torch::relu(x)));
}

TEST_CASE("hash dropout keeps exactly the values its documented hash rule keeps, any thread count",
          "[train]") {
  // The rule (dropout.hpp) restated independently: value i is kept when 16 bits of
  // splitmix64(seed + (i / 4) * golden), from bit 16 * (i % 4), reach p * 65536. Masks must
  // not change between versions: a resumed run repeats the masks of the run it continues.
  const auto reference_keep = [](std::uint64_t seed, std::int64_t i, double p) {
    std::uint64_t z = seed + static_cast<std::uint64_t>(i / 4) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    const auto bits = (z >> (16 * (i % 4))) & 0xffff;
    return bits >= static_cast<std::uint64_t>(p * 65536.0);
  };
  // 70,003 values: several 256-group chunks and 16,384-group parallel ranges, and a tail.
  const std::int64_t n = 70003;
  const std::uint64_t seed = 0x1234'5678'9abc'def0ULL;
  const double p = 0.3;
  const auto x = torch::randn({n});
  const auto* xv = x.data_ptr<float>();
  const int threads = torch::get_num_threads();
  for (const int t : {1, 2}) {
    torch::set_num_threads(t);
    const auto plain = distgraph::detail::hash_dropout(x, seed, p);
    const auto fused = distgraph::detail::hash_dropout(x, seed, p, /*relu=*/true);
    const auto* pv = plain.data_ptr<float>();
    const auto* fv = fused.data_ptr<float>();
    std::int64_t wrong = 0, kept = 0;
    const auto scale = static_cast<float>(1.0 / (1.0 - p));
    for (std::int64_t i = 0; i < n; ++i) {
      const bool keep = reference_keep(seed, i, p);
      kept += keep;
      wrong += pv[i] != (keep ? xv[i] * scale : 0.0f);
      wrong += fv[i] != (keep && xv[i] > 0 ? xv[i] * scale : 0.0f);
    }
    INFO(t << " thread(s)");
    CHECK(wrong == 0);
    CHECK(static_cast<double>(kept) / n == Approx(0.7).margin(0.01));
  }
  torch::set_num_threads(threads);
}

TEST_CASE("split_linear equals two linears in values and gradients, whichever outputs are used",
          "[train]") {
  torch::manual_seed(3);
  const auto x0 = torch::randn({9, 5}, torch::kDouble);
  const auto wa0 = torch::randn({4, 5}, torch::kDouble), wl0 = torch::randn({3, 5}, torch::kDouble);
  const auto ua = torch::randn({9, 4}, torch::kDouble), ul = torch::randn({6, 3}, torch::kDouble);
  for (const int use : {1, 2, 3}) {  // bit 0: the all-rows output, bit 1: the leading rows'
    INFO("outputs used: " << use);
    const auto leaf = [](const torch::Tensor& t) { return t.clone().requires_grad_(true); };
    auto x = leaf(x0), wa = leaf(wa0), wl = leaf(wl0);
    auto rx = leaf(x0), rwa = leaf(wa0), rwl = leaf(wl0);
    const auto [all, lead] = split_linear(x, wa, wl, 6);
    const auto ref_all = torch::nn::functional::linear(rx, rwa);
    const auto ref_lead = torch::nn::functional::linear(rx.narrow(0, 0, 6), rwl);
    CHECK(torch::allclose(all, ref_all, 1e-12, 1e-12));
    CHECK(torch::allclose(lead, ref_lead, 1e-12, 1e-12));
    const auto loss = [&](const torch::Tensor& a, const torch::Tensor& l) {
      auto s = torch::zeros({}, torch::kDouble);
      if (use & 1) s = s + (a * ua).sum();
      if (use & 2) s = s + (l * ul).sum();
      return s;
    };
    loss(all, lead).backward();
    loss(ref_all, ref_lead).backward();
    CHECK(torch::allclose(x.grad(), rx.grad(), 1e-12, 1e-12));
    CHECK(wa.grad().defined() == rwa.grad().defined());
    CHECK(wl.grad().defined() == rwl.grad().defined());
    if (use & 1) CHECK(torch::allclose(wa.grad(), rwa.grad(), 1e-12, 1e-12));
    if (use & 2) CHECK(torch::allclose(wl.grad(), rwl.grad(), 1e-12, 1e-12));
  }
  // An input without gradient (fixed features): only the weights get one.
  auto wa = wa0.clone().requires_grad_(true), wl = wl0.clone().requires_grad_(true);
  const auto [all, lead] = split_linear(x0, wa, wl, 6);
  ((all * ua).sum() + (lead * ul).sum()).backward();
  CHECK(torch::allclose(wa.grad(), ua.t().mm(x0), 1e-12, 1e-12));
  CHECK(torch::allclose(wl.grad(), ul.t().mm(x0.narrow(0, 0, 6)), 1e-12, 1e-12));
}

}  // namespace test_train_models

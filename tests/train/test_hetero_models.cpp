// Typed blocks as tensors, RGCN and HeteroSAGE layers against hand computation, gradients,
// and both models learning a label that only the graph carries.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "distgraph/nn/hetero_block_tensors.hpp"
#include "distgraph/nn/hetero_input.hpp"
#include "distgraph/nn/hetero_sage.hpp"
#include "distgraph/nn/rgcn.hpp"
#include "distgraph/sampling/block.hpp"

namespace test_train_hetero_models {

using namespace distgraph;

namespace {

/// 3 destinations, 5 sources; destination 1 has no in-edge.
Block tiny_block() {
  Block b;
  b.src_nodes = {10, 11, 12, 13, 14};
  b.num_dst = 3;
  b.indptr = {0, 3, 3, 5};
  b.indices = {3, 4, 1, 4, 0};
  b.eid = {0, 1, 2, 3, 4};
  return b;
}

torch::Tensor longs(std::vector<std::int64_t> v) { return torch::tensor(v, torch::kLong); }

bool same(const torch::Tensor& a, const torch::Tensor& b) { return torch::equal(a, b); }

/// Mean of rows `rows` of h (zeros when there are none).
torch::Tensor mean_rows(const torch::Tensor& h, std::vector<std::int64_t> rows) {
  if (rows.empty()) return torch::zeros({h.size(1)}, h.options());
  return h.index_select(0, longs(rows)).mean(0);
}

}  // namespace

TEST_CASE("hetero_block_tensors groups edges by relation and destinations by type",
          "[train][hetero]") {
  const Block b = tiny_block();
  const std::vector<std::int32_t> etypes = {1, 0, 1, 0, 1};  // relation 2 has no edge
  const std::vector<std::int32_t> ntypes = {0, 1, 0, 1, 1};  // type 2 has no node
  const auto hb = hetero_block_tensors(b, etypes, ntypes, 3, 3);
  CHECK(hb.num_src() == 5);
  CHECK(hb.num_dst() == 3);
  CHECK(same(hb.block.indices, longs({3, 4, 1, 4, 0})));
  CHECK(same(hb.edge_type, longs({1, 0, 1, 0, 1})));
  CHECK(same(hb.src_type, longs({0, 1, 0, 1, 1})));
  REQUIRE(hb.rel_edges.size() == 3);
  CHECK(same(hb.rel_edges[0], longs({1, 3})));
  CHECK(same(hb.rel_edges[1], longs({0, 2, 4})));
  CHECK(hb.rel_edges[2].numel() == 0);
  REQUIRE(hb.dst_of_type.size() == 3);
  CHECK(same(hb.dst_of_type[0], longs({0, 2})));
  CHECK(same(hb.dst_of_type[1], longs({1})));
  CHECK(hb.dst_of_type[2].numel() == 0);
  const auto copy = hb.to(torch::kCPU);  // same device: shares the tensors
  CHECK(copy.edge_type.data_ptr() == hb.edge_type.data_ptr());

  const std::vector<std::int32_t> short_types = {0, 1};
  CHECK_THROWS_AS(hetero_block_tensors(b, short_types, ntypes, 3, 3), ShapeError);
  CHECK_THROWS_AS(hetero_block_tensors(b, etypes, short_types, 3, 3), ShapeError);
  const std::vector<std::int32_t> bad_rel = {1, 0, 3, 0, 1};
  CHECK_THROWS_AS(hetero_block_tensors(b, bad_rel, ntypes, 3, 3), IdOutOfRange);
  const std::vector<std::int32_t> bad_type = {0, 1, 0, -1, 1};
  CHECK_THROWS_AS(hetero_block_tensors(b, etypes, bad_type, 3, 3), IdOutOfRange);
  CHECK_THROWS_AS(hetero_block_tensors(b, etypes, ntypes, 0, 3), InvalidArgument);
  Block broken = b;
  broken.indices[0] = 7;
  CHECK_THROWS_AS(hetero_block_tensors(broken, etypes, ntypes, 3, 3), IdOutOfRange);
}

TEST_CASE("a one-relation RGCN layer is W_self h_v + mean of W_r h_u + b", "[train][hetero]") {
  torch::manual_seed(1);
  const Block b = tiny_block();
  const std::vector<std::int32_t> etypes(5, 0), ntypes(5, 0);
  const auto hb = hetero_block_tensors(b, etypes, ntypes, 1, 1);
  RGCNConv conv(RGCNConvOptions{
      .in_feats = 3, .out_feats = 2, .relation_dst_type = {0}, .num_node_types = 1});
  {
    torch::NoGradGuard no_grad;
    conv->bias().uniform_(-0.5, 0.5);
  }
  const auto h = torch::randn({5, 3});
  const auto out = conv->forward(hb, h);
  const auto ws = conv->loop_weight()[0], wr = conv->weight()[0], bias = conv->bias();
  const std::vector<std::vector<std::int64_t>> in = {{3, 4, 1}, {}, {4, 0}};
  REQUIRE(out.sizes() == torch::IntArrayRef({3, 2}));
  for (std::int64_t v = 0; v < 3; ++v) {
    const auto want =
        h[v].matmul(ws) + mean_rows(h, in[static_cast<std::size_t>(v)]).matmul(wr) + bias;
    CHECK(torch::allclose(out[v], want, 1e-5, 1e-5));
  }
}

TEST_CASE("RGCN basis weights are the coefficient combination of the bases", "[train][hetero]") {
  torch::manual_seed(2);
  const Block b = tiny_block();
  const std::vector<std::int32_t> etypes = {0, 2, 1, 2, 0}, ntypes(5, 0);
  const auto hb = hetero_block_tensors(b, etypes, ntypes, 3, 1);
  RGCNConvOptions o{.in_feats = 3,
                    .out_feats = 2,
                    .relation_dst_type = {0, 0, 0},
                    .num_node_types = 1,
                    .num_bases = 2};
  RGCNConv basis(o);
  REQUIRE(basis->uses_bases());
  const auto w = basis->relation_weight();
  for (std::int64_t r = 0; r < 3; ++r) {
    auto want = torch::zeros({3, 2});
    for (std::int64_t k = 0; k < 2; ++k) want += basis->coeff()[r][k] * basis->basis()[k];
    CHECK(torch::allclose(w[r], want, 1e-6, 1e-6));
  }
  o.num_bases = 0;
  RGCNConv full(o);
  {
    torch::NoGradGuard no_grad;
    full->weight().copy_(w);
    full->loop_weight().copy_(basis->loop_weight());
  }
  const auto h = torch::randn({5, 3});
  CHECK(torch::allclose(basis->forward(hb, h), full->forward(hb, h), 1e-5, 1e-5));
}

TEST_CASE(
    "HeteroSAGE sums or averages the relations into a type, and an untargeted type has its own map",
    "[train][hetero]") {
  torch::manual_seed(3);
  // Relation 0: type 1 -> type 0; relation 1: type 0 -> type 0; nothing targets type 1.
  const Block b = tiny_block();
  const std::vector<std::int32_t> etypes = {0, 1, 0, 1, 1};
  const std::vector<std::int32_t> ntypes = {0, 1, 0, 1, 0};
  const auto hb = hetero_block_tensors(b, etypes, ntypes, 2, 2);
  const auto h = torch::randn({5, 3}).requires_grad_(true);
  const auto upstream = torch::randn({3, 2});
  for (const auto combine : {HeteroModelOptions::Combine::sum, HeteroModelOptions::Combine::mean}) {
    HeteroSAGEConv conv(HeteroSAGEConvOptions{.in_feats = 3,
                                              .out_feats = 2,
                                              .relation_dst_type = {0, 0},
                                              .num_node_types = 2,
                                              .combine = combine});
    {
      torch::NoGradGuard no_grad;
      conv->bias().uniform_(-0.5, 0.5);
      conv->alone_bias(1).uniform_(-0.5, 0.5);
    }
    const auto out = conv->forward(hb, h);
    const auto ws = conv->self_weight(), wn = conv->neigh_weight(), bias = conv->bias();
    const auto rel = [&](std::int64_t r, std::int64_t v, std::vector<std::int64_t> in) {
      return h[v].matmul(ws[r]) + mean_rows(h, std::move(in)).matmul(wn[r]) + bias[r];
    };
    const double k = combine == HeteroModelOptions::Combine::mean ? 2.0 : 1.0;
    const auto want0 = (rel(0, 0, {3, 1}) + rel(1, 0, {4})) / k;
    const auto want2 = (rel(0, 2, {}) + rel(1, 2, {4, 0})) / k;
    const auto want1 = h[1].matmul(conv->alone_weight(1)) + conv->alone_bias(1);
    CHECK(torch::allclose(out[0], want0, 1e-5, 1e-5));
    CHECK(torch::allclose(out[1], want1, 1e-5, 1e-5));
    CHECK(torch::allclose(out[2], want2, 1e-5, 1e-5));
    // The gather kernel's backward pass against autograd through the hand computation.
    const auto want = torch::stack({want0, want1, want2});
    const auto got_grad = torch::autograd::grad({(out * upstream).sum()}, {h})[0];
    const auto want_grad = torch::autograd::grad({(want * upstream).sum()}, {h})[0];
    CHECK(torch::allclose(got_grad, want_grad, 1e-5, 1e-5));
  }
}

TEST_CASE("hetero layers handle blocks with no destination, and models check chaining and inputs",
          "[train][hetero]") {
  Block empty;
  empty.src_nodes = {1, 2};
  empty.num_dst = 0;
  empty.indptr = {0};
  const std::vector<std::int32_t> no_edges, ntypes = {0, 1};
  const auto hb = hetero_block_tensors(empty, no_edges, ntypes, 2, 2);
  RGCNConv rgcn(RGCNConvOptions{
      .in_feats = 3, .out_feats = 2, .relation_dst_type = {0, 1}, .num_node_types = 2});
  HeteroSAGEConv sage(HeteroSAGEConvOptions{
      .in_feats = 3, .out_feats = 2, .relation_dst_type = {0, 1}, .num_node_types = 2});
  CHECK(rgcn->forward(hb, torch::ones({2, 3})).sizes() == torch::IntArrayRef({0, 2}));
  CHECK(sage->forward(hb, torch::ones({2, 3})).sizes() == torch::IntArrayRef({0, 2}));
  CHECK_THROWS_AS(rgcn->forward(hb, torch::ones({3, 3})), ShapeError);

  const HeteroModelOptions o{.in_feats = {3, 3},
                             .num_relations = 2,
                             .relation_dst_type = {0, 1},
                             .hidden = 4,
                             .num_classes = 2,
                             .num_layers = 2};
  RGCN model(o);
  const Block b = tiny_block();
  const std::vector<std::int32_t> etypes = {0, 1, 0, 1, 0}, types5 = {0, 1, 0, 1, 1};
  const auto b0 = hetero_block_tensors(b, etypes, types5, 2, 2);
  const std::vector<TypedInput> inputs = {
      {.ntype = 0, .positions = longs({0, 2}), .feat = torch::ones({2, 3})},
      {.ntype = 1, .positions = longs({1, 3, 4}), .feat = torch::ones({3, 3})}};
  // b0 has 3 destinations; a second b0 would need 3 sources, it has 5.
  CHECK_THROWS_AS(model->forward({b0, b0}, inputs), ShapeError);
  CHECK_THROWS_AS(model->forward({b0}, inputs), ShapeError);
  const auto b1 = hetero_block_tensors(tiny_block(), etypes, types5, 2, 2);
  Block top;
  top.src_nodes = {10, 11, 12};
  top.num_dst = 1;
  top.indptr = {0, 2};
  top.indices = {1, 2};
  const std::vector<std::int32_t> top_edges = {1, 0}, top_types = {0, 1, 0};
  const auto t = hetero_block_tensors(top, top_edges, top_types, 2, 2);
  CHECK(model->forward({b1, t}, inputs).sizes() == torch::IntArrayRef({1, 2}));
  const std::vector<TypedInput> missing = {inputs[0]};
  CHECK_THROWS_AS(model->forward({b1, t}, missing), ShapeError);
  CHECK_THROWS_AS(
      RGCN(HeteroModelOptions{
          .in_feats = {3}, .num_relations = 1, .relation_dst_type = {1}, .num_classes = 2}),
      InvalidArgument);
}

TEST_CASE("gradients reach every relation's weights that has edges, and no other",
          "[train][hetero]") {
  torch::manual_seed(4);
  const Block b = tiny_block();
  // Relations 0 and 1 have edges into type 0; relation 2 (into type 0) has none.
  const std::vector<std::int32_t> etypes = {0, 1, 0, 1, 1}, ntypes(5, 0);
  const auto hb = hetero_block_tensors(b, etypes, ntypes, 3, 1);
  const auto h = torch::randn({5, 3});
  const auto nonzero = [](const torch::Tensor& g) { return g.abs().sum().item<double>() > 0; };
  for (const std::int64_t bases : {0, 2}) {
    INFO("num_bases " << bases);
    RGCNConv conv(RGCNConvOptions{.in_feats = 3,
                                  .out_feats = 2,
                                  .relation_dst_type = {0, 0, 0},
                                  .num_node_types = 1,
                                  .num_bases = bases});
    conv->forward(hb, h).pow(2).sum().backward();
    const auto g = bases ? conv->coeff().grad() : conv->weight().grad();
    REQUIRE(g.defined());
    CHECK(nonzero(g[0]));
    CHECK(nonzero(g[1]));
    CHECK_FALSE(nonzero(g[2]));
    CHECK(nonzero(conv->loop_weight().grad()));
  }
  HeteroSAGEConv sage(HeteroSAGEConvOptions{
      .in_feats = 3, .out_feats = 2, .relation_dst_type = {0, 0, 0}, .num_node_types = 1});
  sage->forward(hb, h).pow(2).sum().backward();
  const auto g = sage->neigh_weight().grad();
  REQUIRE(g.defined());
  CHECK(nonzero(g[0]));
  CHECK(nonzero(g[1]));
  CHECK_FALSE(nonzero(g[2]));
  CHECK(nonzero(sage->self_weight().grad()[2]));  // every relation's self term counts
}

namespace {

/// A typed graph whose paper labels only the graph carries: 200 papers (type 0) with
/// identical features, 60 authors (type 1) with random ones, 4 venues (type 2) with
/// learnable embeddings; paper p's label is its venue's class (venue v has class v).
/// Relations: 0 venue -> paper, 1 paper -> venue, 2 author -> paper, 3 paper -> author.
struct ToyGraph {
  static constexpr std::int64_t papers = 200, authors = 60, venues = 4;
  std::vector<std::int64_t> src, dst;
  std::vector<std::int32_t> etype;
  std::vector<std::int64_t> label;  // per paper

  ToyGraph() {
    std::mt19937 rng(9);
    const auto add = [&](std::int64_t s, std::int64_t d, std::int32_t r) {
      src.push_back(s);
      dst.push_back(d);
      etype.push_back(r);
    };
    for (std::int64_t p = 0; p < papers; ++p) {
      const auto v = static_cast<std::int64_t>(rng() % venues);
      label.push_back(v);
      add(papers + authors + v, p, 0);
      add(p, papers + authors + v, 1);
      for (int k = 0; k < 2; ++k) {
        const auto a = papers + static_cast<std::int64_t>(rng() % authors);
        add(a, p, 2);
        add(p, a, 3);
      }
    }
  }

  static std::int32_t type_of(std::int64_t n) {
    return n < papers ? 0 : n < papers + authors ? 1 : 2;
  }

  /// The block of every in-edge of `dst_nodes` (full neighbourhood), with its types.
  HeteroBlockTensors block(const std::vector<std::int64_t>& dst_nodes, Block& b) const {
    std::vector<char> wanted(papers + authors + venues, 0);
    for (const auto d : dst_nodes) wanted[static_cast<std::size_t>(d)] = 1;
    Frontier f;
    for (std::size_t e = 0; e < src.size(); ++e)
      if (wanted[static_cast<std::size_t>(dst[e])]) {
        f.src.push_back(src[e]);
        f.dst.push_back(dst[e]);
        f.eid.push_back(static_cast<std::int64_t>(e));
      }
    b = to_block(f, dst_nodes);
    std::vector<std::int32_t> et, nt;
    for (const auto e : b.eid) et.push_back(etype[static_cast<std::size_t>(e)]);
    for (const auto n : b.src_nodes) nt.push_back(type_of(n));
    return hetero_block_tensors(b, et, nt, 4, 3);
  }
};

/// Train accuracy of `model` (RGCN or HeteroSAGE) after 100 full-batch Adam steps.
template <class Model>
double train_accuracy(Model& model) {
  const ToyGraph g;
  std::vector<std::int64_t> seeds(ToyGraph::papers);
  for (std::int64_t p = 0; p < ToyGraph::papers; ++p) seeds[static_cast<std::size_t>(p)] = p;
  Block top, bottom;
  const auto b1 = g.block(seeds, top);
  const auto b0 = g.block(top.src_nodes, bottom);
  std::vector<std::vector<std::int64_t>> pos(3), ids(3);
  for (std::int64_t j = 0; j < bottom.num_src(); ++j) {
    const auto n = bottom.src_nodes[static_cast<std::size_t>(j)];
    pos[static_cast<std::size_t>(ToyGraph::type_of(n))].push_back(j);
    ids[static_cast<std::size_t>(ToyGraph::type_of(n))].push_back(n);
  }
  const auto author_feat = torch::randn({ToyGraph::authors, 8});
  auto venue_embedding = torch::randn({ToyGraph::venues, 8}).requires_grad_(true);
  const auto labels = torch::tensor(g.label, torch::kLong);

  auto params = model->parameters();
  params.push_back(venue_embedding);
  torch::optim::Adam adam(params, torch::optim::AdamOptions(0.02));
  const auto inputs = [&] {
    const auto a = torch::tensor(ids[1], torch::kLong) - ToyGraph::papers;
    const auto v = torch::tensor(ids[2], torch::kLong) - ToyGraph::papers - ToyGraph::authors;
    return std::vector<TypedInput>{
        {0, torch::tensor(pos[0], torch::kLong),
         torch::ones({static_cast<std::int64_t>(pos[0].size()), 8})},
        {1, torch::tensor(pos[1], torch::kLong), author_feat.index_select(0, a)},
        {2, torch::tensor(pos[2], torch::kLong), venue_embedding.index_select(0, v)}};
  };
  model->train();
  for (int step = 0; step < 100; ++step) {
    adam.zero_grad();
    const auto loss =
        torch::nn::functional::cross_entropy(model->forward({b0, b1}, inputs()), labels);
    loss.backward();
    adam.step();
  }
  model->eval();
  torch::NoGradGuard no_grad;
  const auto pred = model->forward({b0, b1}, inputs()).argmax(1);
  return pred.eq(labels).to(torch::kDouble).mean().template item<double>();
}

HeteroModelOptions toy_options() {
  // Every paper has the same features, so a features-only model predicts one class for
  // all of them: 25% at best on balanced classes.
  return HeteroModelOptions{.in_feats = {8, 8, 8},
                            .num_relations = 4,
                            .relation_dst_type = {0, 2, 0, 1},
                            .hidden = 16,
                            .num_classes = 4,
                            .num_layers = 2,
                            .dropout = 0.2};
}

}  // namespace

TEST_CASE("RGCN learns labels carried only by the graph", "[train][hetero]") {
  torch::manual_seed(21);
  for (const std::int64_t bases : {0, 2}) {
    INFO("num_bases " << bases);
    auto o = toy_options();
    o.num_bases = bases;
    RGCN model(o);
    CHECK(train_accuracy(model) > 0.9);
  }
}

TEST_CASE("HeteroSAGE learns labels carried only by the graph", "[train][hetero]") {
  torch::manual_seed(22);
  for (const auto combine : {HeteroModelOptions::Combine::sum, HeteroModelOptions::Combine::mean}) {
    auto o = toy_options();
    o.combine = combine;
    HeteroSAGE model(o);
    CHECK(train_accuracy(model) > 0.9);
  }
}

}  // namespace test_train_hetero_models

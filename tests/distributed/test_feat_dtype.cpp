// 16-bit features through a DistGraph: stored and served as float16/bfloat16, widened to
// float32 in the loader's batch, equal to rounding the float32 rows.
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "distgraph/core/half.hpp"
#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/loaders/edge_data_loader.hpp"
#include "distgraph/loaders/node_data_loader.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "support/small_hsbm.hpp"
#include "support/temp_dir.hpp"

namespace test_distributed_feat_dtype {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

/// `x` rounded to `t` and widened back: what a trainer must see for a float32 input x.
std::vector<float> rounded(std::span<const float> x, DType t) {
  std::vector<std::byte> w(x.size() * dtype_size(t));
  convert_from_float32(t, x, w);
  std::vector<float> back(x.size());
  convert_to_float32(t, w, back);
  return back;
}

/// Input node ID of every global node ID, from the partitions' orig_nid.
std::vector<std::int64_t> input_ids(const std::filesystem::path& config) {
  const PartitionConfig c = read_partition_config(config);
  std::vector<std::int64_t> orig(static_cast<std::size_t>(c.num_nodes), -1);
  for (std::int64_t p = 0; p < c.num_parts; ++p) {
    const Partition part = load_partition(config, p);
    for (std::int64_t i = 0; i < part.num_inner_nodes; ++i)
      orig[static_cast<std::size_t>(part.nid[static_cast<std::size_t>(i)])] =
          part.orig_nid[static_cast<std::size_t>(i)];
  }
  return orig;
}

}  // namespace

TEST_CASE("loaders widen bfloat16 and float16 features to exactly the rounded float32 rows",
          "[dist]") {
  SbmOptions o;
  o.num_nodes = 500;
  o.num_classes = 3;
  o.avg_degree = 6;
  o.feat_dim = 9;
  o.seed = 4;
  const Dataset d = sbm_dataset(o);
  for (DType t : {DType::bfloat16, DType::float16, DType::float32}) {
    INFO(dtype_name(t));
    TempDir tmp;
    partition_dataset(d, "g", 3, tmp.path(), {.method = PartMethod::metis, .feat_dtype = t});
    const auto orig = input_ids(tmp / "g.json");
    StandaloneCluster<> cluster(tmp / "g.json");
    auto g = cluster.graph();
    const auto raw = g.raw_ndata("feat");
    CHECK(raw.dtype() == t);
    CHECK(raw.num_cols() == d.feat_dim);
    CHECK(raw.row_bytes() == static_cast<std::size_t>(d.feat_dim) * dtype_size(t));
    if (t != DType::float32)
      CHECK_THROWS_WITH(g.ndata<float>("feat"), Catch::Contains(std::string("stored as ") +
                                                                std::string(dtype_name(t))));
    const auto want_row = [&](std::int64_t v) {
      const auto c = static_cast<std::size_t>(d.feat_dim);
      return rounded(
          std::span(d.feat.data() + static_cast<std::size_t>(orig[static_cast<std::size_t>(v)]) * c,
                    c),
          t);
    };
    std::vector<std::int64_t> seeds(100);
    for (std::size_t i = 0; i < seeds.size(); ++i) seeds[i] = static_cast<std::int64_t>(i * 5);
    NodeDataLoader loader(g, seeds, {3, 2},
                          {.batch_size = 32, .seed = 1, .num_prefetch_threads = 2});
    std::int64_t rows = 0;
    for (const NodeBatch& b : loader.epoch(0)) {
      REQUIRE(b.feat_dim == d.feat_dim);
      REQUIRE(b.features.size() == b.input_nodes.size() * static_cast<std::size_t>(d.feat_dim));
      for (std::size_t i = 0; i < b.input_nodes.size(); ++i) {
        const auto want = want_row(b.input_nodes[i]);
        REQUIRE(std::memcmp(b.features.data() + i * want.size(), want.data(),
                            want.size() * sizeof(float)) == 0);
        ++rows;
      }
    }
    CHECK(rows >= static_cast<std::int64_t>(seeds.size()));
    // The edge loader shares the feature pull.
    std::vector<std::int64_t> eids(40);
    for (std::size_t i = 0; i < eids.size(); ++i) eids[i] = static_cast<std::int64_t>(i * 7);
    EdgeDataLoader edges(g, eids, {2}, {.batch_size = 16, .seed = 2});
    for (const EdgeBatch& b : edges.epoch(0))
      for (std::size_t i = 0; i < b.input_nodes.size(); ++i) {
        const auto want = want_row(b.input_nodes[i]);
        REQUIRE(std::memcmp(b.features.data() + i * want.size(), want.data(),
                            want.size() * sizeof(float)) == 0);
      }
  }
}

TEST_CASE("typed loaders widen float16 features of every node type", "[dist][hetero]") {
  const HeteroDataset d = test::small_hsbm();
  TempDir tmp;
  partition_hetero_dataset(d, "h", 2, tmp.path(),
                           {.method = PartMethod::random, .feat_dtype = DType::float16});
  const auto orig = input_ids(tmp / "h.json");
  StandaloneCluster<> cluster(tmp / "h.json");
  auto g = cluster.graph();
  CHECK(g.nodes("paper").raw_data("feat").dtype() == DType::float16);
  const auto papers = g.nodes("paper");
  std::vector<std::int64_t> ids(60);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>(i * 4);
  const auto seeds = papers.to_global(ids);
  NodeDataLoader loader(g, seeds, {3, 3}, {.batch_size = 16, .seed = 3, .label = "paper/label"});
  std::map<std::int32_t, std::int64_t> rows_of_type;
  for (const NodeBatch& b : loader.epoch(0)) {
    REQUIRE(b.features.empty());
    for (const TypedRows& tr : b.typed_features) {
      const auto c = static_cast<std::size_t>(tr.cols);
      const auto k = static_cast<std::size_t>(tr.ntype);
      REQUIRE(tr.cols == d.feat_dim[k]);
      const std::int64_t begin = d.types.node_range(NodeType(tr.ntype)).begin;
      for (std::size_t j = 0; j < tr.positions.size(); ++j) {
        const std::int64_t v = b.input_nodes[static_cast<std::size_t>(tr.positions[j])];
        const auto row = static_cast<std::size_t>(orig[static_cast<std::size_t>(v)] - begin);
        const auto want = rounded(std::span(d.feat[k].data() + row * c, c), DType::float16);
        REQUIRE(std::memcmp(tr.rows.data() + j * c, want.data(), c * sizeof(float)) == 0);
        ++rows_of_type[tr.ntype];
      }
    }
  }
  CHECK(rows_of_type.size() == 2);  // papers and authors have features; venues none
}

TEST_CASE("a loader refuses a feature stored as integers, naming it", "[dist][bad_input]") {
  SbmOptions o;
  o.num_nodes = 100;
  o.feat_dim = 3;
  const Dataset d = sbm_dataset(o);
  TempDir tmp;
  partition_dataset(d, "g", 1, tmp.path(), {.method = PartMethod::random});
  StandaloneCluster<> cluster(tmp / "g.json");
  auto g = cluster.graph();
  const std::vector<std::int64_t> seeds = {0, 1, 2};
  CHECK_THROWS_WITH(NodeDataLoader(g, seeds, {2}, {.feature = "label"}),
                    Catch::Contains("node data 'label'") && Catch::Contains("dtype int64") &&
                        Catch::Contains("float16 or bfloat16"));
}

}  // namespace test_distributed_feat_dtype

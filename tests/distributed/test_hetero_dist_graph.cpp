// DistGraph over a typed partition in standalone mode: type views, typed data, typed node
// split, per-relation loaders, and a one-type graph behaving as the homogeneous one.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "distgraph/distributed/node_split.hpp"
#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/hetero_synthetic.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/loaders/node_data_loader.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "distgraph/sampling/per_relation_sampler.hpp"
#include "support/one_type_hetero.hpp"
#include "support/small_hsbm.hpp"
#include "support/temp_dir.hpp"

namespace test_distributed_hetero_dist_graph {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

/// A small typed dataset partitioned by METIS into 2 parts, with each global node's input
/// (type, type-wise ID).
struct HeteroFixture {
  TempDir tmp;
  HeteroDataset data;
  std::filesystem::path config;
  std::vector<std::int32_t> type_of;     // global ID -> node type
  std::vector<std::int64_t> input_id_of;  // global ID -> input type-wise ID
  std::vector<std::int32_t> part_of;     // global ID -> owning partition

  HeteroFixture() {
    data = test::small_hsbm();
    partition_hetero_dataset(data, "h", 2, tmp.path(), {.method = PartMethod::metis, .seed = 2});
    config = tmp / "h.json";
    const auto n = static_cast<std::size_t>(data.num_nodes());
    type_of.assign(n, -1);
    input_id_of.assign(n, -1);
    part_of.assign(n, -1);
    for (std::int32_t p = 0; p < 2; ++p) {
      const Partition part = load_partition(config, p);
      for (std::int64_t v = 0; v < part.num_inner_nodes; ++v) {
        const auto g = static_cast<std::size_t>(part.nid[static_cast<std::size_t>(v)]);
        const auto orig = part.orig_nid[static_cast<std::size_t>(v)];
        for (std::int32_t t = 0; t < data.types.num_node_types(); ++t) {
          const IdRange r = data.types.node_range(NodeType(t));
          if (orig >= r.begin && orig < r.end) {
            type_of[g] = t;
            input_id_of[g] = orig - r.begin;
          }
        }
        part_of[g] = p;
      }
    }
  }

  /// The dataset's feature row of global node `g` (empty for featureless types).
  std::vector<float> feat_row(std::int64_t g) const {
    const auto t = static_cast<std::size_t>(type_of[static_cast<std::size_t>(g)]);
    const auto w = static_cast<std::size_t>(data.feat_dim[t]);
    const auto i = static_cast<std::size_t>(input_id_of[static_cast<std::size_t>(g)]);
    return {data.feat[t].begin() + static_cast<std::ptrdiff_t>(i * w),
            data.feat[t].begin() + static_cast<std::ptrdiff_t>((i + 1) * w)};
  }

  /// Global IDs of type `t` owned by partition `p`.
  std::vector<std::int64_t> owned(std::int32_t t, std::int32_t p) const {
    std::vector<std::int64_t> out;
    for (std::size_t g = 0; g < type_of.size(); ++g)
      if (type_of[g] == t && part_of[g] == p) out.push_back(static_cast<std::int64_t>(g));
    return out;
  }
};

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("a typed standalone DistGraph counts and pulls each node type's data",
          "[dist][hetero]") {
  HeteroFixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const auto& types = f.data.types;
  CHECK(g.num_nodes() == f.data.num_nodes());
  CHECK(g.num_edges() == f.data.num_edges());
  for (std::int32_t t = 0; t < types.num_node_types(); ++t) {
    const std::string& name = types.node_type_name(NodeType(t));
    CHECK(g.nodes(name).count() == types.num_nodes(NodeType(t)));
    CHECK(g.num_nodes(name) == types.num_nodes(NodeType(t)));
    CHECK(g.node_type(name).value == t);
  }
  for (std::int32_t e = 0; e < types.num_edge_types(); ++e) {
    const auto& c = types.edge_type(EdgeType(e));
    CHECK(g.edges(c.edge_type).count() == types.num_edges(EdgeType(e)));
    CHECK(g.edges(c.src_type + ":" + c.edge_type + ":" + c.dst_type).count() ==
          types.num_edges(EdgeType(e)));
  }

  SECTION("typed features equal the dataset's rows, from both partitions") {
    for (const std::string ntype : {"paper", "author"}) {
      INFO("node type " << ntype);
      const auto view = g.nodes(ntype);
      // A scattered subset of type-wise IDs, in no particular order.
      std::vector<std::int64_t> ids;
      for (std::int64_t i = view.count() - 1; i >= 0; i -= 3) ids.push_back(i);
      std::rotate(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(ids.size() / 3),
                  ids.end());
      const auto global = view.to_global(ids);
      CHECK(view.to_type_wise(global) == ids);
      std::set<std::int32_t> parts;
      for (auto v : global) parts.insert(f.part_of[static_cast<std::size_t>(v)]);
      CHECK(parts.size() == 2);
      const auto feat = view.data<float>("feat");
      CHECK(feat.num_rows() == view.count());
      const auto rows = feat.pull(global);
      const auto w = static_cast<std::size_t>(feat.num_cols());
      REQUIRE(rows.size() == global.size() * w);
      for (std::size_t i = 0; i < global.size(); ++i) {
        REQUIRE(f.type_of[static_cast<std::size_t>(global[i])] == g.node_type(ntype).value);
        const auto want = f.feat_row(global[i]);
        REQUIRE(std::vector<float>(rows.begin() + static_cast<std::ptrdiff_t>(i * w),
                                   rows.begin() + static_cast<std::ptrdiff_t>((i + 1) * w)) ==
                want);
      }
    }
  }

  SECTION("an ID of another type is refused, locally and remotely") {
    const auto paper_feat = g.nodes("paper").data<float>("feat");
    const std::int32_t author = g.node_type("author").value;
    for (std::int32_t p = 0; p < 2; ++p) {
      INFO("author owned by partition " << p);
      const auto authors = f.owned(author, p);
      REQUIRE(!authors.empty());
      std::vector<std::int64_t> ids{authors.front()};
      CHECK_THROWS_AS(paper_feat.pull(ids), Error);
      CHECK_THROWS_AS(g.nodes("paper").to_type_wise(ids), IdOutOfRange);
      // One good ID beside the bad one changes nothing.
      const auto papers = f.owned(g.node_type("paper").value, 1 - p);
      REQUIRE(!papers.empty());
      ids.insert(ids.begin(), papers.front());
      CHECK_THROWS_AS(paper_feat.pull(ids), Error);
      const std::vector<float> row(static_cast<std::size_t>(paper_feat.num_cols()) * 2, 1.0f);
      CHECK_THROWS_AS(paper_feat.push(ids, row), Error);
    }
    // The refused push wrote nothing.
    const auto papers = f.owned(g.node_type("paper").value, 0);
    const std::vector<std::int64_t> one{papers.front()};
    CHECK(paper_feat.pull(one) == f.feat_row(papers.front()));
  }

  SECTION("create_data on a node type: push and pull round trip") {
    const auto view = g.nodes("venue");
    auto emb = view.create_data<float>("emb", 3);
    CHECK(emb.num_rows() == view.count());
    CHECK(emb.name() == "node:venue/emb");
    std::vector<std::int64_t> ids(static_cast<std::size_t>(view.count()));
    std::iota(ids.begin(), ids.end(), 0);
    const auto global = view.to_global(ids);
    std::vector<float> rows(global.size() * 3);
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i) * 0.5f;
    emb.push(global, rows);
    CHECK(emb.pull(global) == rows);
    std::vector<std::int64_t> back(global.rbegin(), global.rend());
    const auto reversed = emb.pull(back);
    for (std::size_t i = 0; i < back.size(); ++i)
      for (std::size_t c = 0; c < 3; ++c)
        REQUIRE(reversed[i * 3 + c] == rows[(back.size() - 1 - i) * 3 + c]);
    // Reopening by name finds the same rows.
    CHECK(view.data<float>("emb").pull(global) == rows);
    // A paper is not a venue.
    const std::vector<std::int64_t> paper{g.nodes("paper").to_global(std::vector<std::int64_t>{0})};
    CHECK_THROWS_AS(emb.pull(paper), Error);
  }

  SECTION("unknown type names are refused, naming them") {
    CHECK_THROWS_AS(g.nodes("nope"), InvalidArgument);
    CHECK_THROWS_WITH(g.nodes("nope"), Catch::Contains("nope"));
    CHECK_THROWS_AS(g.edges("nope"), InvalidArgument);
    CHECK_THROWS_WITH(g.edges("nope"), Catch::Contains("nope"));
    CHECK_THROWS_AS(g.edges("paper:nope:paper"), InvalidArgument);
    CHECK_THROWS_AS(g.num_nodes("nope"), InvalidArgument);
  }
}

TEST_CASE("node_split over two node types gives every trainer the same count",
          "[dist][hetero]") {
  HeteroFixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  std::vector<std::int64_t> train;
  for (std::size_t i = 0; i < f.data.train_mask.size(); ++i)
    if (f.data.train_mask[i]) train.push_back(static_cast<std::int64_t>(i));
  std::vector<std::int64_t> some_authors;
  for (std::int64_t a = 0; a < 41; ++a) some_authors.push_back(a * 2);
  const std::vector<TypedIds> seeds{{"paper", train}, {"author", some_authors}};
  const auto all = typed_to_global(std::span<const TypedIds>(seeds), g.book());
  REQUIRE(all.size() == train.size() + some_authors.size());
  for (const std::int32_t trainers : {1, 3, 4}) {
    INFO(trainers << " trainers");
    std::set<std::int64_t> covered;
    std::size_t first = 0;
    for (std::int32_t rank = 0; rank < trainers; ++rank) {
      const auto mine = node_split(std::span<const TypedIds>(seeds), g.book(),
                                   {.rank = rank, .num_trainers = trainers});
      if (rank == 0) first = mine.size();
      CHECK(mine.size() == first);
      covered.insert(mine.begin(), mine.end());
    }
    CHECK(covered == std::set<std::int64_t>(all.begin(), all.end()));
  }
  const std::vector<TypedIds> bad{{"nope", {0}}};
  CHECK_THROWS_WITH(node_split(std::span<const TypedIds>(bad), g.book(), {}),
                    Catch::Contains("nope"));
}

TEST_CASE("a per-relation NodeDataLoader keeps each relation's fanout and typed features",
          "[dist][hetero]") {
  HeteroFixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const auto& types = f.data.types;
  const std::int32_t R = types.num_edge_types();
  REQUIRE(R == 5);
  // writes, rev_writes, published_in, rev_published_in, cites (input layer first).
  const std::vector<std::vector<std::int64_t>> fanouts{{2, 1, 0, 1, 3}, {3, -1, 1, 1, 2}};
  // Input in-degree of each (global node, relation).
  std::map<std::pair<std::int64_t, std::int32_t>, std::int64_t> in_degree;
  {
    std::vector<std::int64_t> global_of_input(static_cast<std::size_t>(f.data.num_nodes()));
    for (std::size_t v = 0; v < f.type_of.size(); ++v)
      global_of_input[static_cast<std::size_t>(
          types.node_range(NodeType(f.type_of[v])).begin + f.input_id_of[v])] =
          static_cast<std::int64_t>(v);
    for (std::int32_t r = 0; r < R; ++r) {
      const auto dst_type = types.node_type(types.edge_type(EdgeType(r)).dst_type);
      for (const auto v : f.data.dst[static_cast<std::size_t>(r)])
        ++in_degree[{
            global_of_input[static_cast<std::size_t>(types.node_range(dst_type).begin + v)], r}];
    }
  }
  const auto papers = g.nodes("paper");
  std::vector<std::int64_t> train;
  for (std::size_t i = 0; i < f.data.train_mask.size(); ++i)
    if (f.data.train_mask[i]) train.push_back(static_cast<std::int64_t>(i));
  const auto seeds = papers.to_global(train);
  LoaderOptions opts{.batch_size = 8, .seed = 4, .label = "paper/label"};
  for (const auto& fo : fanouts) opts.layer_samplers.push_back(PerRelationSampler::spec(fo));
  NodeDataLoader loader(g, seeds, {-1, -1}, opts);
  std::int64_t batches = 0, seen = 0;
  for (const NodeBatch& b : loader.epoch(0)) {
    ++batches;
    seen += static_cast<std::int64_t>(b.output_nodes.size());
    REQUIRE(b.blocks.size() == 2);
    for (std::size_t l = 0; l < 2; ++l) {
      const Block& block = b.blocks[l];
      const auto etypes = g.edge_types_of(block.eid);
      for (std::int64_t i = 0; i < block.num_dst; ++i) {
        std::vector<std::int64_t> count(static_cast<std::size_t>(R), 0);
        for (auto k = block.indptr[static_cast<std::size_t>(i)];
             k < block.indptr[static_cast<std::size_t>(i) + 1]; ++k)
          ++count[static_cast<std::size_t>(etypes[static_cast<std::size_t>(k)])];
        const std::int64_t dst = block.src_nodes[static_cast<std::size_t>(i)];
        for (std::int32_t r = 0; r < R; ++r) {
          INFO("layer " << l << " dst " << dst << " relation " << r);
          const auto fanout = fanouts[l][static_cast<std::size_t>(r)];
          const auto it = in_degree.find({dst, r});
          const std::int64_t deg = it == in_degree.end() ? 0 : it->second;
          REQUIRE(count[static_cast<std::size_t>(r)] == (fanout < 0 ? deg : std::min(fanout, deg)));
        }
      }
    }
    // Typed features: each input node's type, each featured type's rows.
    REQUIRE(b.features.empty());
    REQUIRE(b.input_types.size() == b.input_nodes.size());
    for (std::size_t i = 0; i < b.input_nodes.size(); ++i)
      REQUIRE(b.input_types[i] == f.type_of[static_cast<std::size_t>(b.input_nodes[i])]);
    std::vector<int> covered(b.input_nodes.size(), 0);
    for (const TypedRows& tr : b.typed_features) {
      REQUIRE(tr.cols == f.data.feat_dim[static_cast<std::size_t>(tr.ntype)]);
      REQUIRE(tr.rows.size() == tr.positions.size() * static_cast<std::size_t>(tr.cols));
      for (std::size_t j = 0; j < tr.positions.size(); ++j) {
        const auto pos = static_cast<std::size_t>(tr.positions[j]);
        ++covered[pos];
        REQUIRE(b.input_types[pos] == tr.ntype);
        const auto w = static_cast<std::size_t>(tr.cols);
        REQUIRE(std::vector<float>(tr.rows.begin() + static_cast<std::ptrdiff_t>(j * w),
                                   tr.rows.begin() + static_cast<std::ptrdiff_t>((j + 1) * w)) ==
                f.feat_row(b.input_nodes[pos]));
      }
    }
    for (std::size_t i = 0; i < b.input_nodes.size(); ++i)
      REQUIRE(covered[i] ==
              (f.data.feat_dim[static_cast<std::size_t>(b.input_types[i])] > 0 ? 1 : 0));
    REQUIRE(b.labels.size() == b.output_nodes.size());
    for (std::size_t i = 0; i < b.output_nodes.size(); ++i)
      REQUIRE(b.labels[i] == f.data.label[static_cast<std::size_t>(
                                 f.input_id_of[static_cast<std::size_t>(b.output_nodes[i])])]);
  }
  CHECK(seen == static_cast<std::int64_t>(seeds.size()));
  CHECK(batches == (static_cast<std::int64_t>(seeds.size()) + 7) / 8);
}

TEST_CASE("a graph of one node type and one edge type partitions and samples as the "
          "homogeneous one",
          "[dist][hetero]") {
  SbmOptions o;
  o.num_nodes = 400;
  o.num_classes = 4;
  o.avg_degree = 8;
  o.feat_dim = 4;
  o.seed = 6;
  const Dataset d = sbm_dataset(o);
  const HeteroDataset h = distgraph::test::one_type_hetero(d);

  TempDir homo_dir, hetero_dir;
  const PartitionOptions popts{.method = PartMethod::metis, .seed = 2};
  partition_dataset(d, "g", 2, homo_dir.path(), popts);
  partition_hetero_dataset(h, "g", 2, hetero_dir.path(), popts);
  const PartitionConfig homo_cfg = read_partition_config(homo_dir / "g.json");
  const PartitionConfig hetero_cfg = read_partition_config(hetero_dir / "g.json");
  for (std::size_t p = 0; p < 2; ++p)
    for (const char* file : {"indptr.npy", "indices.npy", "eid.npy", "orig_eid.npy", "nid.npy",
                             "orig_nid.npy", "inner_node.npy", "inner_edge.npy"}) {
      INFO("part " << p << " " << file);
      CHECK(file_bytes(homo_cfg.resolve(homo_cfg.parts[p].part_graph) / file) ==
            file_bytes(hetero_cfg.resolve(hetero_cfg.parts[p].part_graph) / file));
    }

  StandaloneCluster<> homo_cluster(homo_dir / "g.json"), hetero_cluster(hetero_dir / "g.json");
  auto hg = homo_cluster.graph();
  auto tg = hetero_cluster.graph();
  REQUIRE(hg.num_nodes() == tg.num_nodes());
  std::vector<std::int64_t> seeds;
  for (std::int64_t v = 0; v < hg.num_nodes(); v += 5) seeds.push_back(v);

  SECTION("sample_neighbors") {
    for (std::int64_t fanout : {0, 1, 3, -1}) {
      INFO("fanout " << fanout);
      const SampleKey key{.seed = 3, .epoch = 1, .rank = 0, .batch = 2};
      const Frontier a = hg.sample_neighbors(seeds, fanout, key);
      const Frontier b = tg.sample_neighbors(seeds, -1, key, PerRelationSampler::spec({fanout}));
      CHECK(a.src == b.src);
      CHECK(a.dst == b.dst);
      CHECK(a.eid == b.eid);
    }
  }
  SECTION("NodeDataLoader batches") {
    NodeDataLoader homo(hg, seeds, {3, 2}, {.batch_size = 16, .seed = 7});
    LoaderOptions typed{.batch_size = 16, .seed = 7, .label = "node/label"};
    typed.layer_samplers = {PerRelationSampler::spec({3}), PerRelationSampler::spec({2})};
    NodeDataLoader hetero(tg, seeds, {-1, -1}, typed);
    homo.begin_epoch(0);
    hetero.begin_epoch(0);
    std::int64_t batches = 0;
    while (auto a = homo.next()) {
      auto b = hetero.next();
      REQUIRE(b);
      ++batches;
      INFO("batch " << a->index);
      CHECK(a->output_nodes == b->output_nodes);
      CHECK(a->input_nodes == b->input_nodes);
      REQUIRE(a->blocks.size() == b->blocks.size());
      for (std::size_t l = 0; l < a->blocks.size(); ++l) {
        CHECK(a->blocks[l].src_nodes == b->blocks[l].src_nodes);
        CHECK(a->blocks[l].num_dst == b->blocks[l].num_dst);
        CHECK(a->blocks[l].indptr == b->blocks[l].indptr);
        CHECK(a->blocks[l].indices == b->blocks[l].indices);
        CHECK(a->blocks[l].eid == b->blocks[l].eid);
      }
      CHECK(a->labels == b->labels);
      // The one type's typed features are the homogeneous features, all positions.
      REQUIRE(b->typed_features.size() == 1);
      const TypedRows& tr = b->typed_features.front();
      std::vector<std::int64_t> all(a->input_nodes.size());
      std::iota(all.begin(), all.end(), 0);
      CHECK(tr.positions == all);
      CHECK(tr.rows == a->features);
    }
    CHECK_FALSE(hetero.next());
    CHECK(batches > 1);
  }
}

}  // namespace test_distributed_hetero_dist_graph

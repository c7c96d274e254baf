// partition_hetero_dataset + load_partition: typed data rows, per-type counts and ranges,
// rows grouped by edge type, bad typed data.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "distgraph/io/hetero_synthetic.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "support/small_hsbm.hpp"
#include "support/temp_dir.hpp"

namespace test_partition_partition_hetero {

using namespace distgraph;
using distgraph::test::small_hsbm;
using distgraph::test::TempDir;

namespace {

/// (node type, type-wise ID) of input node `v` of `d`.
std::pair<std::int32_t, std::int64_t> input_type_of(const HeteroDataset& d, std::int64_t v) {
  for (std::int32_t t = 0; t < d.types.num_node_types(); ++t) {
    const IdRange r = d.types.node_range(NodeType(t));
    if (v >= r.begin && v < r.end) return {t, v - r.begin};
  }
  FAIL("input node " << v << " has no type");
  return {-1, -1};
}

std::int32_t input_edge_type_of(const HeteroDataset& d, std::int64_t e) {
  for (std::int32_t t = 0; t < d.types.num_edge_types(); ++t) {
    const IdRange r = d.types.edge_range(EdgeType(t));
    if (e >= r.begin && e < r.end) return t;
  }
  FAIL("input edge " << e << " has no type");
  return -1;
}

/// Checks one partition of a typed dataset against the dataset.
void check_typed_partition(const HeteroDataset& d, const Partition& part) {
  const AnyPartitionBook& book = part.book;
  const auto p = PartId(static_cast<std::int32_t>(part.part_id));
  const auto inner = static_cast<std::size_t>(part.num_inner_nodes);
  REQUIRE(book.node_type_names() == d.types.node_type_names());

  // Owned nodes: the book's type of each global ID is the input type of its input ID.
  std::vector<std::int32_t> types(inner);
  std::vector<std::int64_t> type_wise(inner);
  book.node_to_per_type(std::span<const std::int64_t>(part.nid.data(), inner), types, type_wise);
  std::vector<std::int64_t> owned_of_type(static_cast<std::size_t>(d.types.num_node_types()), 0);
  for (std::size_t i = 0; i < inner; ++i) {
    const auto [t, id] = input_type_of(d, part.orig_nid[i]);
    REQUIRE(types[i] == t);
    if (!part.config.relabeled) REQUIRE(type_wise[i] == id);
    owned_of_type[static_cast<std::size_t>(t)]++;
  }
  for (std::int32_t t = 0; t < d.types.num_node_types(); ++t)
    CHECK(book.num_owned_nodes(p, NodeType(t)) == owned_of_type[static_cast<std::size_t>(t)]);

  // Typed data: one row per owned node of its type, in local order, equal to the input's.
  for (std::int32_t t = 0; t < d.types.num_node_types(); ++t) {
    const auto tk = static_cast<std::size_t>(t);
    const std::string name = typed_data_name(d.types.node_type_name(NodeType(t)), "feat");
    INFO("tensor " << name);
    if (d.feat_dim[tk] == 0) {
      CHECK(part.node_feats.count(name) == 0);
      continue;
    }
    REQUIRE(part.node_feats.count(name) == 1);
    const HostTensor& x = part.node_feats.at(name);
    REQUIRE(x.shape == std::vector<std::int64_t>{owned_of_type[tk], d.feat_dim[tk]});
    const float* rows = x.data_as<float>(name);
    std::int64_t row = 0;
    for (std::size_t i = 0; i < inner; ++i) {
      const auto [ti, id] = input_type_of(d, part.orig_nid[i]);
      if (ti != t) continue;
      const auto w = static_cast<std::size_t>(d.feat_dim[tk]);
      for (std::size_t c = 0; c < w; ++c)
        REQUIRE(rows[static_cast<std::size_t>(row) * w + c] ==
                d.feat[tk][static_cast<std::size_t>(id) * w + c]);
      ++row;
    }
  }
  // The target's labels likewise.
  const NodeType target = d.target();
  const std::string label_name = typed_data_name(d.target_ntype, "label");
  REQUIRE(part.node_feats.count(label_name) == 1);
  const HostTensor& label_tensor = part.node_feats.at(label_name);
  REQUIRE(label_tensor.rows() == book.num_owned_nodes(p, target));
  const std::int64_t* labels = label_tensor.data_as<std::int64_t>(label_name);
  std::size_t at = 0;
  for (std::size_t i = 0; i < inner; ++i) {
    const auto [ti, id] = input_type_of(d, part.orig_nid[i]);
    if (ti == target.value) REQUIRE(labels[at++] == d.label[static_cast<std::size_t>(id)]);
  }

  // Each row's edges: grouped by edge type ascending (the book's type of the global edge
  // ID, equal to the input type), within a type in input source order.
  const auto m = part.eid.size();
  std::vector<std::int32_t> etypes(m);
  std::vector<std::int64_t> etype_wise(m);
  book.edge_to_per_type(part.eid, etypes, etype_wise);
  for (std::int64_t r = 0; r < part.graph.num_rows; ++r) {
    const auto b = static_cast<std::size_t>(part.graph.indptr[static_cast<std::size_t>(r)]);
    const auto e = static_cast<std::size_t>(part.graph.indptr[static_cast<std::size_t>(r) + 1]);
    for (std::size_t k = b; k < e; ++k) {
      INFO("partition " << part.part_id << " row " << r << " position " << k);
      REQUIRE(etypes[k] == input_edge_type_of(d, part.orig_eid[k]));
      if (k == b) continue;
      REQUIRE(etypes[k] >= etypes[k - 1]);
      if (etypes[k] == etypes[k - 1])
        REQUIRE(part.orig_nid[static_cast<std::size_t>(part.graph.indices[k])] >=
                part.orig_nid[static_cast<std::size_t>(part.graph.indices[k - 1])]);
    }
  }
}

}  // namespace

TEST_CASE("typed partitions hold each type's rows, grouped rows and per-type ranges",
          "[partition][hetero]") {
  const HeteroDataset d = small_hsbm();
  const PartMethod method = GENERATE(PartMethod::metis, PartMethod::random);
  const bool relabel = GENERATE(true, false);
  INFO((method == PartMethod::metis ? "metis" : "random") << (relabel ? "" : " --no-relabel"));
  TempDir tmp;
  partition_hetero_dataset(d, "h", 2, tmp.path(),
                           {.method = method, .relabel = relabel, .seed = 5});
  const auto config = tmp / "h.json";
  std::vector<std::int64_t> owned(static_cast<std::size_t>(d.types.num_node_types()), 0);
  for (std::int64_t p = 0; p < 2; ++p) {
    const Partition part = load_partition(config, p);
    CHECK(part.config.relabeled == relabel);
    check_typed_partition(d, part);
    for (std::int32_t t = 0; t < d.types.num_node_types(); ++t)
      owned[static_cast<std::size_t>(t)] +=
          part.book.num_owned_nodes(PartId(static_cast<std::int32_t>(p)), NodeType(t));
  }
  for (std::int32_t t = 0; t < d.types.num_node_types(); ++t)
    CHECK(owned[static_cast<std::size_t>(t)] == d.types.num_nodes(NodeType(t)));

  if (relabel) {
    // Partition-major, then type: each (partition, type) is one contiguous range, and the
    // ranges tile [0, num_nodes) in that order.
    const Partition part = load_partition(config, 0);
    const RangePartitionBook* book = part.book.get_if<RangePartitionBook>();
    REQUIRE(book != nullptr);
    std::int64_t next = 0;
    for (std::int32_t p = 0; p < 2; ++p) {
      for (std::int32_t t = 0; t < d.types.num_node_types(); ++t) {
        const auto r = book->node_ranges(NodeType(t))[static_cast<std::size_t>(p)];
        CHECK(r.first == next);
        CHECK(r.second - r.first == book->num_owned_nodes(PartId(p), NodeType(t)));
        next = r.second;
      }
      CHECK(book->node_range(PartId(p)).second == next);
    }
    CHECK(next == d.num_nodes());
    for (std::int64_t p = 0; p < 2; ++p) {
      const Partition q = load_partition(config, p);
      for (std::int64_t i = 0; i + 1 < q.num_inner_nodes; ++i)
        REQUIRE(q.nid[static_cast<std::size_t>(i) + 1] == q.nid[static_cast<std::size_t>(i)] + 1);
    }
  }
}

TEST_CASE("partition_graph rejects typed data of the wrong size or of an unknown type",
          "[partition][hetero]") {
  const HeteroDataset d = small_hsbm();
  const Graph g = hetero_graph(d);
  TempDir tmp;
  SECTION("a typed tensor with a row per node of all types") {
    TensorList data = hetero_node_data(d);
    const std::int64_t n = d.num_nodes();
    std::vector<float> wrong(static_cast<std::size_t>(n) * 2, 1.0f);
    data.emplace_back("author/extra", HostTensor::from(Buffer<float>(std::move(wrong)), {n, 2}));
    CHECK_THROWS_AS(partition_graph(g, "h", 2, tmp.path(), {}, data), ShapeError);
    CHECK_THROWS_WITH(
        partition_graph(g, "h", 2, tmp.path(), {}, data),
        Catch::Contains("author/extra") &&
            Catch::Contains(std::to_string(d.types.num_nodes(d.types.node_type("author")))));
  }
  SECTION("a typed tensor one row short") {
    TensorList data;
    const std::int64_t rows = d.types.num_nodes(d.types.node_type("paper")) - 1;
    data.emplace_back(
        "paper/feat",
        HostTensor::from(Buffer<float>(std::vector<float>(static_cast<std::size_t>(rows), 0.0f)),
                         {rows, 1}));
    CHECK_THROWS_AS(partition_graph(g, "h", 2, tmp.path(), {}, data), ShapeError);
    CHECK_THROWS_WITH(partition_graph(g, "h", 2, tmp.path(), {}, data),
                      Catch::Contains("paper/feat"));
  }
  SECTION("a name with '/' whose prefix is not a node type") {
    TensorList data;
    const std::int64_t n = d.num_nodes();
    data.emplace_back(
        "unknown_type/feat",
        HostTensor::from(Buffer<float>(std::vector<float>(static_cast<std::size_t>(n), 0.0f)),
                         {n, 1}));
    CHECK_THROWS_AS(partition_graph(g, "h", 2, tmp.path(), {}, data), InvalidArgument);
    CHECK_THROWS_WITH(partition_graph(g, "h", 2, tmp.path(), {}, data),
                      Catch::Contains("unknown_type/feat"));
  }
  // Nothing was written by the rejected calls.
  CHECK_FALSE(std::filesystem::exists(tmp / "h.json"));
}

}  // namespace test_partition_partition_hetero

// partition_graph with feat_dtype: 16-bit features on disk, in the config and back.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "distgraph/core/half.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/load_partition.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "support/small_hsbm.hpp"
#include "support/temp_dir.hpp"

namespace test_partition_feat_dtype {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

Dataset small_sbm() {
  SbmOptions o;
  o.num_nodes = 300;
  o.num_classes = 3;
  o.avg_degree = 6;
  o.feat_dim = 7;
  o.seed = 5;
  return sbm_dataset(o);
}

/// `rows` float32 rows of `src` (input node IDs), converted to `t` as the partitioner must.
std::vector<std::byte> converted_rows(const Buffer<float>& src, std::int64_t cols,
                                      const Buffer<std::int64_t>& rows, DType t) {
  const auto c = static_cast<std::size_t>(cols);
  std::vector<std::byte> out(rows.size() * c * dtype_size(t));
  for (std::size_t i = 0; i < rows.size(); ++i)
    convert_from_float32(t, std::span(src.data() + static_cast<std::size_t>(rows[i]) * c, c),
                         std::span(out).subspan(i * c * dtype_size(t), c * dtype_size(t)));
  return out;
}

std::string header_of(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string h(128, '\0');
  in.read(h.data(), 128);
  return h;
}

}  // namespace

TEST_CASE(
    "features partitioned as bfloat16 or float16 hold each float32 row rounded, byte for byte",
    "[partition]") {
  const Dataset d = small_sbm();
  for (DType t : {DType::bfloat16, DType::float16, DType::float32}) {
    INFO(dtype_name(t));
    TempDir tmp;
    partition_dataset(d, "g", 2, tmp.path(),
                      {.method = PartMethod::random, .feat_dtype = t, .seed = 3});
    const PartitionConfig c = read_partition_config(tmp / "g.json");
    for (const auto& spec : c.node_feats)
      CHECK(spec.dtype == (spec.name == "feat" ? std::string(dtype_name(t))
                                               : spec.name == "label" ? "int64" : "bool"));
    for (std::int64_t p = 0; p < 2; ++p) {
      const Partition part = load_partition(tmp / "g.json", p);
      const HostTensor& f = part.node_feats.at("feat");
      CHECK(f.dtype == t);
      CHECK(f.shape == std::vector<std::int64_t>{part.num_inner_nodes, d.feat_dim});
      const Buffer<std::int64_t> owned(std::vector<std::int64_t>(
          part.orig_nid.begin(), part.orig_nid.begin() + part.num_inner_nodes));
      const auto want = converted_rows(d.feat, d.feat_dim, owned, t);
      REQUIRE(f.bytes.size() == want.size());
      CHECK(std::memcmp(f.bytes.data(), want.data(), want.size()) == 0);
      // Labels and masks are never converted.
      CHECK(part.node_feats.at("label").dtype == DType::int64);
      CHECK(part.node_feats.at("train_mask").dtype == DType::bool_);
      // NumPy's view of the file: '<u2' words for bfloat16, '<f2' for float16.
      const std::string h =
          header_of(tmp / ("part" + std::to_string(p)) / "node_feat" / "feat.npy");
      if (t == DType::bfloat16) CHECK(h.find("'descr': '<u2'") != std::string::npos);
      if (t == DType::float16) CHECK(h.find("'descr': '<f2'") != std::string::npos);
    }
  }
}

TEST_CASE("typed features are stored in the feature dtype, typed labels stay integers",
          "[partition][hetero]") {
  const HeteroDataset d = test::small_hsbm();
  TempDir tmp;
  partition_hetero_dataset(d, "h", 2, tmp.path(),
                           {.method = PartMethod::random, .feat_dtype = DType::float16});
  const PartitionConfig c = read_partition_config(tmp / "h.json");
  std::size_t feats = 0;
  for (const auto& spec : c.node_feats) {
    INFO(spec.name);
    if (spec.name.ends_with("/feat")) {
      CHECK(spec.dtype == "float16");
      ++feats;
    } else {
      CHECK(spec.dtype != "float16");
    }
  }
  CHECK(feats == 2);  // paper and author
  const Partition part = load_partition(tmp / "h.json", 1);
  CHECK(part.node_feats.at("paper/feat").dtype == DType::float16);
}

TEST_CASE("a feature file whose dtype disagrees with the config is refused, naming the file",
          "[partition][bad_input]") {
  const Dataset d = small_sbm();
  TempDir tmp;
  partition_dataset(d, "g", 2, tmp.path(),
                    {.method = PartMethod::random, .feat_dtype = DType::bfloat16, .seed = 3});
  const auto cfg = tmp / "g.json";
  const auto file = tmp / "part1" / "node_feat" / "feat.npy";
  const Partition before = load_partition(cfg, 1);
  const HostTensor f = before.node_feats.at("feat");
  const std::vector<std::byte> words(f.bytes.begin(), f.bytes.end());

  SECTION("bfloat16 words written by NumPy as plain uint16 are read as the config says") {
    write_npy(file, DType::uint16, f.shape, words.data());
    const Partition p = load_partition(cfg, 1);
    CHECK(p.node_feats.at("feat").dtype == DType::bfloat16);
    CHECK(std::memcmp(p.node_feats.at("feat").bytes.data(), words.data(), words.size()) == 0);
  }
  SECTION("a float32 file where the config says bfloat16") {
    std::vector<float> rows(static_cast<std::size_t>(f.num_elements()), 1.0f);
    write_npy(file, rows, f.shape);
    CHECK_THROWS_AS(load_partition(cfg, 1), PartitionError);
    CHECK_THROWS_WITH(load_partition(cfg, 1), Catch::Contains(file.string()) &&
                                                  Catch::Contains("dtype float32") &&
                                                  Catch::Contains("config says bfloat16"));
    CHECK_NOTHROW(load_partition(cfg, 0));
  }
  SECTION("a float16 file where the config says bfloat16") {
    write_npy(file, DType::float16, f.shape, words.data());
    CHECK_THROWS_WITH(load_partition(cfg, 1), Catch::Contains(file.string()) &&
                                                  Catch::Contains("dtype float16"));
  }
  SECTION("bfloat16 words where the config says float16") {
    nlohmann::json j;
    std::ifstream(cfg) >> j;
    j["distgraph"]["node_feats"]["feat"]["dtype"] = "float16";
    std::ofstream(cfg) << j.dump();
    CHECK_THROWS_WITH(load_partition(cfg, 1), Catch::Contains(file.string()) &&
                                                  Catch::Contains("dtype bfloat16") &&
                                                  Catch::Contains("config says float16"));
  }
}

TEST_CASE("partition_graph refuses a feature dtype other than float32, float16 or bfloat16",
          "[partition][bad_input]") {
  const Dataset d = small_sbm();
  TempDir tmp;
  CHECK_THROWS_WITH(partition_dataset(d, "g", 2, tmp.path(), {.feat_dtype = DType::int16}),
                    Catch::Contains("feat_dtype int16"));
  CHECK_FALSE(std::filesystem::exists(tmp / "g.json"));
}

}  // namespace test_partition_feat_dtype

// Dataset folders: the real datasets under ../shared/data, minimal folders, write/load round trip.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "distgraph/io/dataset.hpp"
#include "support/temp_dir.hpp"

namespace test_io_dataset {

using namespace distgraph;
namespace fs = std::filesystem;

namespace {

template <class T>
std::vector<T> to_vector(const Buffer<T>& b) {
  return std::vector<T>(b.begin(), b.end());
}

/// A Buffer<bool> holding `flags` (Buffer<bool>(std::vector<bool>) cannot exist: no data()).
Buffer<bool> mask(std::initializer_list<int> flags) {
  std::shared_ptr<bool[]> p(new bool[flags.size()]());
  std::size_t i = 0;
  for (int f : flags) p[i++] = f != 0;
  return Buffer<bool>(p, p.get(), flags.size());
}

/// A 6-node graph with 3 features, 3 classes and a split, built in memory.
Dataset small_dataset() {
  Dataset ds;
  ds.name = "toy";
  ds.num_nodes = 6;
  ds.src = Buffer<std::int64_t>(std::vector<std::int64_t>{0, 1, 1, 2, 3, 4, 5, 5});
  ds.dst = Buffer<std::int64_t>(std::vector<std::int64_t>{1, 0, 2, 1, 4, 3, 0, 4});
  ds.feat_dim = 3;
  std::vector<float> feat(18);
  for (std::size_t i = 0; i < feat.size(); ++i) feat[i] = static_cast<float>(i) * 0.25f - 1.0f;
  ds.feat = Buffer<float>(std::move(feat));
  ds.num_classes = 3;
  ds.label = Buffer<std::int64_t>(std::vector<std::int64_t>{0, 2, 1, 0, 2, 1});
  ds.train_mask = mask({1, 1, 0, 0, 0, 0});
  ds.val_mask = mask({0, 0, 1, 0, 0, 0});
  ds.test_mask = mask({0, 0, 0, 1, 1, 1});
  ds.meta = {{"features", "made up"}, {"files", {{"src.npy", {{"sha256", "stale"}}}}}};
  return ds;
}

void check_equal(const Dataset& a, const Dataset& b) {
  CHECK(a.name == b.name);
  CHECK(a.num_nodes == b.num_nodes);
  CHECK(to_vector(a.src) == to_vector(b.src));
  CHECK(to_vector(a.dst) == to_vector(b.dst));
  CHECK(a.feat_dim == b.feat_dim);
  CHECK(to_vector(a.feat) == to_vector(b.feat));
  CHECK(a.num_classes == b.num_classes);
  CHECK(to_vector(a.label) == to_vector(b.label));
  CHECK(to_vector(a.train_mask) == to_vector(b.train_mask));
  CHECK(to_vector(a.val_mask) == to_vector(b.val_mask));
  CHECK(to_vector(a.test_mask) == to_vector(b.test_mask));
}

/// Checks what every dataset folder must satisfy after loading.
void check_consistent(const Dataset& ds) {
  const auto n = static_cast<std::size_t>(ds.num_nodes);
  CHECK(ds.src.size() == ds.dst.size());
  if (ds.has_features()) CHECK(ds.feat.size() == n * static_cast<std::size_t>(ds.feat_dim));
  if (ds.has_labels()) CHECK(ds.label.size() == n);
  for (const auto* m : {&ds.train_mask, &ds.val_mask, &ds.test_mask})
    if (!m->empty()) CHECK(m->size() == n);
}

}  // namespace

TEST_CASE("cora loads with its published sizes and split", "[io][data]") {
  DISTGRAPH_REQUIRE_DATASET(dir, "cora");
  const auto ds = load_dataset(dir);
  CHECK(ds.name == "cora");
  CHECK(ds.num_nodes == 2708);
  CHECK(ds.num_edges() == 10556);
  CHECK(ds.feat_dim == 1433);
  CHECK(ds.feat.size() == 2708u * 1433u);
  CHECK(ds.num_classes == 7);
  CHECK(ds.label.size() == 2708);
  CHECK(ds.num_train() == 140);
  CHECK(ds.num_val() == 500);
  CHECK(ds.num_test() == 1000);
  CHECK(ds.meta.at("num_edges") == 10556);
  // Rows are normalised to sum 1 (cora has no all-zero rows).
  for (std::size_t row : {0u, 1000u, 2707u}) {
    double sum = 0;
    for (std::size_t j = 0; j < 1433; ++j) sum += ds.feat[row * 1433 + j];
    CHECK(sum == Approx(1.0).epsilon(1e-5));
  }
  // src is sorted (a CSR row index) and no edge is a self-loop.
  CHECK(std::is_sorted(ds.src.begin(), ds.src.end()));
  for (std::size_t e = 0; e < ds.src.size(); ++e) REQUIRE(ds.src[e] != ds.dst[e]);
}

TEST_CASE("cora loads to the same arrays with and without mmap", "[io][data]") {
  DISTGRAPH_REQUIRE_DATASET(dir, "cora");
  const auto mapped = load_dataset(dir);
  const auto read = load_dataset(dir, {.mmap = false, .num_threads = 1});
  check_equal(mapped, read);
}

TEST_CASE("every dataset under shared/data loads and agrees with its meta.json", "[io][data]") {
  const auto root = distgraph::test::shared_data_dir();
  if (root.empty()) {
    WARN("SKIPPED: no shared data folder at " DISTGRAPH_SHARED_DATA);
    return;
  }
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!fs::exists(entry.path() / "src.npy")) continue;
    INFO(entry.path().string());
    const auto ds = load_dataset(entry.path());
    check_consistent(ds);
    CHECK(ds.name == entry.path().filename().string());
    CHECK(ds.num_nodes == ds.meta.at("num_nodes").get<std::int64_t>());
    CHECK(ds.num_edges() == ds.meta.at("num_edges").get<std::int64_t>());
    CHECK(ds.feat_dim == ds.meta.at("feat_dim").get<std::int64_t>());
    CHECK(ds.num_classes == ds.meta.at("num_classes").get<std::int64_t>());
    CHECK(ds.num_train() == ds.meta.at("split").at("train").get<std::int64_t>());
    ++loaded;
  }
  CHECK(loaded > 0);
}

TEST_CASE("write_dataset then load_dataset gives back the same dataset", "[io]") {
  distgraph::test::TempDir tmp;
  const auto ds = small_dataset();
  write_dataset(tmp / "toy", ds);
  const auto back = load_dataset(tmp / "toy");
  check_equal(ds, back);
  CHECK(back.meta.at("features") == "made up");
  CHECK_FALSE(back.meta.contains("files"));
  CHECK(back.meta.at("split").at("test") == 3);
  CHECK(back.meta.at("num_edges") == 8);

  // Writing a smaller dataset over it removes the optional files it lacks.
  Dataset bare;
  bare.name = "bare";
  bare.num_nodes = 3;
  bare.src = Buffer<std::int64_t>(std::vector<std::int64_t>{0, 1});
  bare.dst = Buffer<std::int64_t>(std::vector<std::int64_t>{1, 2});
  write_dataset(tmp / "toy", bare);
  CHECK_FALSE(fs::exists(tmp / "toy" / "feat.npy"));
  CHECK_FALSE(fs::exists(tmp / "toy" / "train_mask.npy"));
  const auto bare_back = load_dataset(tmp / "toy");
  check_equal(bare, bare_back);
  CHECK_FALSE(bare_back.has_features());
  CHECK_FALSE(bare_back.has_labels());
}

TEST_CASE("a folder of only src.npy and dst.npy takes num_nodes from the largest id", "[io]") {
  distgraph::test::TempDir tmp;
  write_npy(tmp / "src.npy", std::vector<std::int32_t>{0, 4, 2});
  write_npy(tmp / "dst.npy", std::vector<std::int32_t>{4, 0, 9});
  const auto ds = load_dataset(tmp.path());
  CHECK(ds.num_nodes == 10);
  CHECK(ds.num_edges() == 3);
  CHECK(ds.dst[2] == 9);
  CHECK(ds.name == tmp.path().filename().string());
  CHECK_FALSE(ds.has_features());
  CHECK(ds.train_mask.empty());
}

TEST_CASE("num_nodes comes from feat.npy rows when meta.json is absent", "[io]") {
  distgraph::test::TempDir tmp;
  write_npy(tmp / "src.npy", std::vector<std::int64_t>{0});
  write_npy(tmp / "dst.npy", std::vector<std::int64_t>{1});
  write_npy(tmp / "feat.npy", std::vector<double>(8, 0.5), {4, 2});
  write_npy(tmp / "label.npy", std::vector<std::uint8_t>{0, 1, 1, 3});
  write_npy(tmp / "val_mask.npy", std::vector<std::uint8_t>{0, 1, 0, 1});
  const auto ds = load_dataset(tmp.path());
  CHECK(ds.num_nodes == 4);
  CHECK(ds.feat_dim == 2);
  CHECK(ds.feat[7] == 0.5f);
  CHECK(ds.num_classes == 4);
  CHECK(ds.num_val() == 2);
  CHECK(ds.train_mask.empty());
}

TEST_CASE("without meta.json or feat.npy num_nodes is label.npy's length, and a mismatch says so",
          "[io]") {
  distgraph::test::TempDir tmp;
  write_npy(tmp / "src.npy", std::vector<std::int64_t>{0, 1});
  write_npy(tmp / "dst.npy", std::vector<std::int64_t>{1, 2});
  write_npy(tmp / "label.npy", std::vector<std::int64_t>{0, 1, 0, 1, 1});
  const auto ds = load_dataset(tmp.path());
  CHECK(ds.num_nodes == 5);
  CHECK(ds.num_classes == 2);
  write_npy(tmp / "test_mask.npy", std::vector<std::uint8_t>{1, 1, 1});
  try {
    load_dataset(tmp.path());
    FAIL("no exception");
  } catch (const ShapeError& e) {
    CHECK_THAT(e.what(), Catch::Contains("test_mask.npy: 3 entries, but label.npy has 5 entries"));
  }
  // An edge id past label.npy's length is out of range, not a larger graph.
  fs::remove(tmp / "test_mask.npy");
  write_npy(tmp / "dst.npy", std::vector<std::int64_t>{1, 5});
  CHECK_THROWS_AS(load_dataset(tmp.path()), IdOutOfRange);
}

}  // namespace test_io_dataset

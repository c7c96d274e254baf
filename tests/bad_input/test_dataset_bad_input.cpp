// Broken dataset folders: each fault is rejected with the right type, naming files and values.
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "distgraph/io/dataset.hpp"
#include "support/temp_dir.hpp"

namespace test_bad_input_dataset_bad_input {

using namespace distgraph;
namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
}

/// A valid 4-node folder: 3 edges, 2 features, 3 classes, masks, meta.json.
void write_valid(const fs::path& dir) {
  write_npy(dir / "src.npy", std::vector<std::int64_t>{0, 1, 2});
  write_npy(dir / "dst.npy", std::vector<std::int64_t>{1, 2, 3});
  write_npy(dir / "feat.npy", std::vector<float>(8, 1.0f), {4, 2});
  write_npy(dir / "label.npy", std::vector<std::int64_t>{0, 1, 2, 0});
  write_npy(dir / "train_mask.npy", std::vector<std::uint8_t>{1, 0, 0, 0});
  write_npy(dir / "val_mask.npy", std::vector<std::uint8_t>{0, 1, 0, 0});
  write_npy(dir / "test_mask.npy", std::vector<std::uint8_t>{0, 0, 1, 1});
  write_text(dir / "meta.json",
             R"({"name": "tiny", "num_nodes": 4, "num_edges": 3, "feat_dim": 2,
                 "num_classes": 3, "split": {"train": 1, "val": 1, "test": 2}})");
}

/// Requires load_dataset(dir) to throw E with every string of `parts` in its message.
template <class E>
void require_rejected(const fs::path& dir, const std::vector<std::string>& parts) {
  try {
    load_dataset(dir);
    FAIL("no exception");
  } catch (const E& e) {
    for (const auto& part : parts) CHECK_THAT(e.what(), Catch::Contains(part));
  }
}

}  // namespace

TEST_CASE("the valid tiny folder used below loads", "[bad_input]") {
  distgraph::test::TempDir tmp;
  write_valid(tmp.path());
  const auto ds = load_dataset(tmp.path());
  CHECK(ds.num_nodes == 4);
  CHECK(ds.name == "tiny");
}

TEST_CASE("src.npy and dst.npy of different lengths are rejected naming both", "[bad_input]") {
  distgraph::test::TempDir tmp;
  write_valid(tmp.path());
  write_npy(tmp / "dst.npy", std::vector<std::int64_t>{1, 2});
  require_rejected<ShapeError>(tmp.path(),
                               {(tmp / "src.npy").string(), "length 3", "dst.npy", "length 2"});
}

TEST_CASE("a label.npy shorter than feat.npy is rejected naming both and their lengths",
          "[bad_input]") {
  distgraph::test::TempDir tmp;
  write_valid(tmp.path());
  fs::remove(tmp / "meta.json");
  write_npy(tmp / "label.npy", std::vector<std::int64_t>{0, 1, 2});
  require_rejected<ShapeError>(tmp.path(),
                               {(tmp / "label.npy").string(), "3 entries", "feat.npy has 4 rows"});
}

TEST_CASE("a mask longer than meta.json's num_nodes is rejected", "[bad_input]") {
  distgraph::test::TempDir tmp;
  write_valid(tmp.path());
  write_npy(tmp / "val_mask.npy", std::vector<std::uint8_t>{0, 1, 0, 0, 0});
  require_rejected<ShapeError>(
      tmp.path(), {(tmp / "val_mask.npy").string(), "5 entries", "meta.json says num_nodes = 4"});
}

TEST_CASE("a label out of range is rejected naming label.npy and the value", "[bad_input]") {
  distgraph::test::TempDir tmp;
  write_valid(tmp.path());
  write_npy(tmp / "label.npy", std::vector<std::int64_t>{0, 1, 3, 0});
  require_rejected<IdOutOfRange>(tmp.path(), {(tmp / "label.npy").string(), "id 3", "[0, 3)"});
  write_npy(tmp / "label.npy", std::vector<std::int64_t>{0, -1, 2, 0});
  require_rejected<IdOutOfRange>(tmp.path(), {(tmp / "label.npy").string(), "id -1"});
}

TEST_CASE("an edge id out of range is rejected naming the file and the value", "[bad_input]") {
  distgraph::test::TempDir tmp;
  write_valid(tmp.path());
  write_npy(tmp / "dst.npy", std::vector<std::int64_t>{1, 4, 3});
  require_rejected<IdOutOfRange>(tmp.path(), {(tmp / "dst.npy").string(), "id 4", "[0, 4)"});
  write_npy(tmp / "dst.npy", std::vector<std::int64_t>{1, 2, 3});
  write_npy(tmp / "src.npy", std::vector<std::int64_t>{0, -7, 2});
  require_rejected<IdOutOfRange>(tmp.path(), {(tmp / "src.npy").string(), "id -7"});
}

TEST_CASE("a negative edge id is rejected even when num_nodes comes from the ids", "[bad_input]") {
  distgraph::test::TempDir tmp;
  write_npy(tmp / "src.npy", std::vector<std::int64_t>{0, -2});
  write_npy(tmp / "dst.npy", std::vector<std::int64_t>{1, 1});
  require_rejected<IdOutOfRange>(tmp.path(), {(tmp / "src.npy").string(), "id -2"});
}

TEST_CASE("a folder without src.npy is rejected naming the missing file", "[bad_input]") {
  distgraph::test::TempDir tmp;
  write_valid(tmp.path());
  fs::remove(tmp / "src.npy");
  require_rejected<IoError>(tmp.path(), {(tmp / "src.npy").string(), "missing"});
}

TEST_CASE("a missing dataset folder is rejected with IoError", "[bad_input]") {
  distgraph::test::TempDir tmp;
  require_rejected<IoError>(tmp / "nope", {(tmp / "nope").string(), "no such folder"});
  write_text(tmp / "file", "x");
  require_rejected<IoError>(tmp / "file", {(tmp / "file").string(), "not a folder"});
}

TEST_CASE("a malformed meta.json is rejected naming meta.json", "[bad_input]") {
  distgraph::test::TempDir tmp;
  write_valid(tmp.path());
  write_text(tmp / "meta.json", R"({"name": "tiny", "num_nodes": 4,)");
  require_rejected<FormatError>(tmp.path(), {(tmp / "meta.json").string(), "malformed JSON"});
  write_text(tmp / "meta.json", R"([1, 2])");
  require_rejected<FormatError>(tmp.path(), {(tmp / "meta.json").string(), "expected an object"});
  write_text(tmp / "meta.json", R"({"num_nodes": "four"})");
  require_rejected<FormatError>(
      tmp.path(), {(tmp / "meta.json").string(), "num_nodes", "expected a non-negative integer"});
  write_text(tmp / "meta.json", R"({"num_nodes": -4})");
  require_rejected<FormatError>(tmp.path(), {"num_nodes is -4"});
}

TEST_CASE("meta.json counts that disagree with the arrays are rejected", "[bad_input]") {
  distgraph::test::TempDir tmp;
  write_valid(tmp.path());
  write_text(tmp / "meta.json", R"({"num_edges": 5})");
  require_rejected<ShapeError>(tmp.path(),
                               {(tmp / "meta.json").string(), "num_edges is 5", "src.npy has 3"});
  write_text(tmp / "meta.json", R"({"feat_dim": 3})");
  require_rejected<ShapeError>(tmp.path(), {"feat_dim is 3", "feat.npy has 2 columns"});
  write_text(tmp / "meta.json", R"({"split": {"train": 2}})");
  require_rejected<ShapeError>(tmp.path(), {"split.train is 2", "train_mask.npy has 1"});
}

TEST_CASE("a uint8 mask holding a value other than 0 or 1 is rejected", "[bad_input]") {
  distgraph::test::TempDir tmp;
  write_valid(tmp.path());
  write_npy(tmp / "train_mask.npy", std::vector<std::uint8_t>{1, 0, 2, 0});
  require_rejected<FormatError>(tmp.path(),
                                {(tmp / "train_mask.npy").string(), "value 2 at index 2"});
}

TEST_CASE("arrays of the wrong rank or dtype are rejected naming the file", "[bad_input]") {
  distgraph::test::TempDir tmp;
  write_valid(tmp.path());
  write_npy(tmp / "feat.npy", std::vector<float>(8, 1.0f));
  require_rejected<ShapeError>(tmp.path(), {(tmp / "feat.npy").string(), "shape (8,)", "2-D"});
  write_npy(tmp / "feat.npy", std::vector<std::int32_t>(8, 1), {4, 2});
  require_rejected<DTypeError>(tmp.path(), {(tmp / "feat.npy").string(), "dtype int32"});
  write_valid(tmp.path());
  write_npy(tmp / "src.npy", std::vector<float>{0, 1, 2});
  require_rejected<DTypeError>(tmp.path(), {(tmp / "src.npy").string(), "dtype float32"});
}

TEST_CASE("write_dataset refuses an inconsistent dataset before writing anything", "[bad_input]") {
  distgraph::test::TempDir tmp;
  Dataset ds;
  ds.name = "broken";
  ds.num_nodes = 2;
  ds.src = Buffer<std::int64_t>(std::vector<std::int64_t>{0, 1});
  ds.dst = Buffer<std::int64_t>(std::vector<std::int64_t>{1});
  CHECK_THROWS_AS(write_dataset(tmp / "out", ds), ShapeError);
  ds.dst = Buffer<std::int64_t>(std::vector<std::int64_t>{1, 2});
  CHECK_THROWS_AS(write_dataset(tmp / "out", ds), IdOutOfRange);
  CHECK_FALSE(fs::exists(tmp / "out"));
}

}  // namespace test_bad_input_dataset_bad_input

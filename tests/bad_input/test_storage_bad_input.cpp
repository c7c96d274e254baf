// MmapStorage folders with corrupt, truncated or foreign files: errors name the file.
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "distgraph/io/npy.hpp"
#include "distgraph/storage/in_memory_storage.hpp"
#include "distgraph/storage/mmap_storage.hpp"
#include "support/temp_dir.hpp"
#include "support/what_contains.hpp"

namespace test_bad_input_storage_bad_input {

using namespace distgraph;
namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
}

/// A storage folder holding one good tensor "good" (int64, 4 x 2).
fs::path make_store(const test::TempDir& tmp) {
  const fs::path dir = tmp / "store";
  MmapStorage s(dir);
  s.create({.name = "good", .dtype = DType::int64, .rows = 4, .cols = 2});
  return dir;
}

}  // namespace

TEST_CASE("a truncated tensor file makes attach throw FormatError naming it", "[bad_input]") {
  test::TempDir tmp;
  const fs::path dir = make_store(tmp);
  fs::resize_file(dir / "good.npy", fs::file_size(dir / "good.npy") - 8);
  CHECK_THROWS_MATCHES(MmapStorage::attach(dir), FormatError,
                       test::WhatContains({"good.npy", "truncated"}));
}

TEST_CASE("garbage, empty and foreign-shaped tensor files throw FormatError naming them",
          "[bad_input]") {
  test::TempDir tmp;
  const fs::path dir = make_store(tmp);
  SECTION("garbage bytes") { write_text(dir / "junk.npy", "this is not an array at all"); }
  SECTION("an empty file") { write_text(dir / "junk.npy", ""); }
  SECTION("a rank-3 array") { write_npy(dir / "junk.npy", std::vector<float>(8), {2, 2, 2}); }
  SECTION("a rank-0 array") {
    const float one = 1;
    write_npy(dir / "junk.npy", DType::float32, std::vector<std::int64_t>{}, &one);
  }
  SECTION("no columns") { write_npy(dir / "junk.npy", std::vector<float>{}, {3, 0}); }
  CHECK_THROWS_MATCHES(MmapStorage::attach(dir), FormatError, test::WhatContains({"junk.npy"}));
  // A handle opened before the file appeared meets it on lookup, not on other tensors.
  fs::path moved = tmp / "junk.npy";
  fs::rename(dir / "junk.npy", moved);
  MmapStorage s = MmapStorage::attach(dir);
  fs::rename(moved, dir / "junk.npy");
  CHECK(s.spec("good").rows == 4);
  CHECK_THROWS_AS(s.contains("junk"), FormatError);
  CHECK_THROWS_AS(s.list(), FormatError);
}

TEST_CASE("a big-endian tensor file throws DTypeError naming it", "[bad_input]") {
  test::TempDir tmp;
  const fs::path dir = make_store(tmp);
  std::string file = npy_header_bytes(DType::float32, std::vector<std::int64_t>{2, 1});
  file.replace(file.find("<f4"), 3, ">f4");
  file.append(8, '\0');
  write_text(dir / "be.npy", file);
  CHECK_THROWS_MATCHES(MmapStorage::attach(dir), DTypeError, test::WhatContains({"be.npy"}));
}

TEST_CASE("a damaged lock file throws FormatError naming .locks", "[bad_input]") {
  test::TempDir tmp;
  const fs::path dir = make_store(tmp);
  SECTION("wrong size") { fs::resize_file(dir / ".locks", 100); }
  SECTION("wrong magic") {
    std::fstream f(dir / ".locks", std::ios::in | std::ios::out | std::ios::binary);
    f.write("NOTLOCKS", 8);
  }
  CHECK_THROWS_MATCHES(MmapStorage::attach(dir), FormatError, test::WhatContains({".locks"}));
  CHECK_THROWS_AS(MmapStorage(dir), FormatError);
}

TEST_CASE("files that cannot be tensors are ignored: temporaries and other names", "[bad_input]") {
  test::TempDir tmp;
  const fs::path dir = make_store(tmp);
  write_text(dir / ".good.npy.tmp-123-0", "half-written");
  write_text(dir / "notes.txt", "hello");
  write_text(dir / "bad name.npy", "garbage");
  fs::create_directories(dir / "sub.npy.d");
  const auto s = MmapStorage::attach(dir);
  const auto all = s.list();
  REQUIRE(all.size() == 1);
  CHECK(all[0].name == "good");
  CHECK_FALSE(s.contains("bad name"));
}

TEST_CASE("adopting a malformed or rank-0 .npy throws, naming the file", "[bad_input]") {
  test::TempDir tmp;
  MmapStorage s(tmp / "store");
  InMemoryStorage mem;
  write_text(tmp / "bad.npy", "\x93NUMPY\x01\x00garbage");
  CHECK_THROWS_MATCHES(s.create_from_npy("x", tmp / "bad.npy"), FormatError,
                       test::WhatContains({"bad.npy"}));
  CHECK_THROWS_AS(mem.create_from_npy("x", tmp / "bad.npy"), FormatError);
  const double one = 1;
  write_npy(tmp / "scalar.npy", DType::float64, std::vector<std::int64_t>{}, &one);
  CHECK_THROWS_MATCHES(s.create_from_npy("x", tmp / "scalar.npy"), ShapeError,
                       test::WhatContains({"scalar.npy"}));
  write_npy(tmp / "ok.npy", std::vector<float>{1, 2});
  CHECK_THROWS_AS(s.create_from_npy("bad/../name", tmp / "ok.npy"), InvalidArgument);
  CHECK(s.list().empty());
}

}  // namespace test_bad_input_storage_bad_input

// The Storage contract (docs/concepts/Storage.md) as test cases any storage model runs:
// DISTGRAPH_STORAGE_CONFORMANCE_TESTS(Model, ...) registers them over the given models, so
// test executables linked with other libraries (train/, libtorch) can add theirs.
#pragma once

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <numeric>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "distgraph/core/dtype.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/storage/concepts.hpp"
#include "support/temp_dir.hpp"
#include "support/what_contains.hpp"

namespace distgraph::test::storage_conformance {

/// A fresh storage of model S: file-backed models (those with S::create_dir) in a new
/// folder under `dir`, the others default-constructed.
template <class S>
S make_storage(const TempDir& dir) {
  if constexpr (requires { S::create_dir(dir / "store"); })
    return S::create_dir(dir / "store");
  else
    return S{};
}

/// A storage of model S, in a fresh folder for the file-backed ones.
template <class S>
struct Fixture {
  TempDir dir;
  S storage = make_storage<S>(dir);
};

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}
template <class T>
std::span<std::byte> out_bytes(std::vector<T>& v) {
  return std::as_writable_bytes(std::span(v));
}

/// Rows `rows` of tensor `name` as T.
template <class T, class S>
std::vector<T> read(const S& s, const std::string& name, std::vector<std::int64_t> rows) {
  const auto cols = static_cast<std::size_t>(s.spec(name).cols);
  std::vector<T> out(rows.size() * cols);
  s.read_rows(name, rows, out_bytes(out));
  return out;
}

/// Runs `fn(i)` on `n` threads and rethrows the first exception.
template <class Fn>
void run_threads(int n, Fn fn) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        fn(i);
      } catch (...) {
        errors[static_cast<std::size_t>(i)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

/// create, contains, spec, list and remove; layouts and names checked.
template <class S>
void check_create_and_layout() {
  static_assert(Storage<S>);
  Fixture<S> f;
  auto& s = f.storage;
  const TensorSpec feat{.name = "feat", .dtype = DType::float32, .rows = 5, .cols = 3};

  CHECK_FALSE(s.contains("feat"));
  CHECK(s.create(feat));
  CHECK(s.contains("feat"));
  CHECK(s.spec("feat").same_layout(feat));
  CHECK(s.spec("feat").name == "feat");
  CHECK(read<float>(s, "feat", {0, 4}) == std::vector<float>(6, 0.0f));

  SECTION("creating the same layout again returns false and keeps the data") {
    const std::vector<float> row = {1, 2, 3};
    s.write_rows("feat", std::vector<std::int64_t>{2}, bytes_of(row));
    CHECK_FALSE(s.create(feat));
    const std::vector<float> other(15, 9.0f);
    CHECK_FALSE(s.create(feat, bytes_of(other)));
    CHECK(read<float>(s, "feat", {2}) == row);
  }
  SECTION("another dtype throws DTypeError, another shape ShapeError, naming the tensor") {
    auto f64 = feat;
    f64.dtype = DType::float64;
    CHECK_THROWS_MATCHES(s.create(f64), DTypeError,
                         test::WhatContains({"tensor 'feat'", "float64"}));
    auto wider = feat;
    wider.cols = 4;
    CHECK_THROWS_AS(s.create(wider), ShapeError);
    auto longer = feat;
    longer.rows = 6;
    CHECK_THROWS_WITH(s.create(longer), Catch::Matchers::Contains("tensor 'feat'"));
  }
  SECTION("create with bytes fills the tensor; a wrong size throws ShapeError first") {
    const TensorSpec ids{.name = "ids", .dtype = DType::int64, .rows = 3, .cols = 2};
    const std::vector<std::int64_t> init = {1, 2, 3, 4, 5, 6};
    CHECK_THROWS_AS(s.create(ids, bytes_of(std::vector<std::int64_t>(5))), ShapeError);
    CHECK_FALSE(s.contains("ids"));
    CHECK(s.create(ids, bytes_of(init)));
    CHECK(read<std::int64_t>(s, "ids", {0, 1, 2}) == init);
  }
  SECTION("list returns every tensor sorted by name") {
    s.create({.name = "a:label", .dtype = DType::int32, .rows = 0, .cols = 1});
    s.create({.name = "Z-mask.v1", .dtype = DType::bool_, .rows = 7, .cols = 1});
    const auto all = s.list();
    REQUIRE(all.size() == 3);
    CHECK(all[0].name == "Z-mask.v1");
    CHECK(all[0].dtype == DType::bool_);
    CHECK(all[1].name == "a:label");
    CHECK(all[1].rows == 0);
    CHECK(all[2].name == "feat");
    CHECK(all[2].same_layout(feat));
  }
  SECTION("names outside [A-Za-z0-9_.:/-], path-like or longer than 200 characters are refused") {
    for (std::string bad : {std::string(), std::string("a//b"), std::string("../x"),
                            std::string("/a"), std::string("a/"),
                            std::string("has space"), std::string(201, 'n')}) {
      auto spec = feat;
      spec.name = bad;
      CHECK_THROWS_AS(s.create(spec), InvalidArgument);
      CHECK_FALSE(s.contains(bad));
    }
    auto ok = feat;
    ok.name = std::string(200, 'n');
    CHECK(s.create(ok));
    ok.name = "node:paper/feat";  // typed data
    CHECK(s.create(ok));
    CHECK(s.contains("node:paper/feat"));
  }
  SECTION("a negative row count or no columns throws ShapeError") {
    CHECK_THROWS_AS(s.create({.name = "neg", .dtype = DType::float32, .rows = -1, .cols = 1}),
                    ShapeError);
    CHECK_THROWS_AS(s.create({.name = "flat", .dtype = DType::float32, .rows = 4, .cols = 0}),
                    ShapeError);
    CHECK_FALSE(s.contains("neg"));
  }
  SECTION("remove drops the tensor and reports whether there was one") {
    CHECK(s.remove("feat"));
    CHECK_FALSE(s.contains("feat"));
    CHECK_FALSE(s.remove("feat"));
    CHECK_THROWS_AS(s.spec("feat"), NotFound);
    CHECK(s.list().empty());
    auto again = feat;
    again.cols = 7;
    CHECK(s.create(again));
    CHECK(s.spec("feat").cols == 7);
  }
}

/// read_rows, write_rows and add_rows: order, duplicates, dtypes, bad batches.
template <class S>
void check_rows_in_request_order() {
  Fixture<S> f;
  auto& s = f.storage;
  const std::vector<std::int64_t> init = {0, 1, 10, 11, 20, 21, 30, 31};
  REQUIRE(s.create({.name = "x", .dtype = DType::int64, .rows = 4, .cols = 2}, bytes_of(init)));

  SECTION("reads follow the request order and may repeat rows") {
    CHECK(read<std::int64_t>(s, "x", {3, 0, 3}) == std::vector<std::int64_t>{30, 31, 0, 1, 30, 31});
    CHECK(read<std::int64_t>(s, "x", {}).empty());
  }
  SECTION("writes replace rows; a row listed twice ends as its last listing") {
    const std::vector<std::int64_t> in = {7, 7, 8, 8, 9, 9};
    s.write_rows("x", std::vector<std::int64_t>{1, 2, 1}, bytes_of(in));
    CHECK(read<std::int64_t>(s, "x", {0, 1, 2, 3}) ==
          std::vector<std::int64_t>{0, 1, 9, 9, 8, 8, 30, 31});
  }
  SECTION("adds accumulate, every listing of a duplicate row included") {
    const std::vector<std::int64_t> in = {1, 2, 100, 200, 1000, 2000};
    s.add_rows("x", std::vector<std::int64_t>{3, 0, 3}, bytes_of(in));
    CHECK(read<std::int64_t>(s, "x", {0, 1, 2, 3}) ==
          std::vector<std::int64_t>{100, 201, 10, 11, 20, 21, 1031, 2033});
  }
  SECTION("adds work for float32, float64 and int32; integers wrap instead of overflowing") {
    s.create({.name = "f", .dtype = DType::float32, .rows = 2, .cols = 3});
    s.create({.name = "d", .dtype = DType::float64, .rows = 2, .cols = 1});
    s.create({.name = "i", .dtype = DType::int32, .rows = 1, .cols = 2});
    const std::vector<float> fin = {0.5f, -1.0f, 2.25f};
    s.add_rows("f", std::vector<std::int64_t>{1}, bytes_of(fin));
    s.add_rows("f", std::vector<std::int64_t>{1}, bytes_of(fin));
    CHECK(read<float>(s, "f", {0, 1}) == std::vector<float>{0, 0, 0, 1.0f, -2.0f, 4.5f});
    const std::vector<double> din = {0.125, 3.0};
    s.add_rows("d", std::vector<std::int64_t>{0, 0}, bytes_of(din));
    CHECK(read<double>(s, "d", {0, 1}) == std::vector<double>{3.125, 0.0});
    const std::vector<std::int32_t> iin = {2147483647, -5};
    s.add_rows("i", std::vector<std::int64_t>{0}, bytes_of(std::vector<std::int32_t>{1, 2}));
    s.add_rows("i", std::vector<std::int64_t>{0}, bytes_of(iin));
    CHECK(read<std::int32_t>(s, "i", {0}) == std::vector<std::int32_t>{-2147483648, -5 + 2});
  }
  SECTION("adds to non-numeric dtypes throw DTypeError naming the tensor") {
    s.create({.name = "mask", .dtype = DType::bool_, .rows = 2, .cols = 1});
    s.create({.name = "half", .dtype = DType::float16, .rows = 2, .cols = 1});
    const std::vector<std::uint8_t> one = {1};
    CHECK_THROWS_MATCHES(s.add_rows("mask", std::vector<std::int64_t>{0}, bytes_of(one)),
                         DTypeError, test::WhatContains({"tensor 'mask'"}));
    const std::vector<std::uint16_t> h = {0x3c00};
    CHECK_THROWS_AS(s.add_rows("half", std::vector<std::int64_t>{0}, bytes_of(h)), DTypeError);
    // Reads and writes of any dtype are fine.
    s.write_rows("mask", std::vector<std::int64_t>{1}, bytes_of(one));
    CHECK(read<std::uint8_t>(s, "mask", {0, 1}) == std::vector<std::uint8_t>{0, 1});
  }
  SECTION("an out-of-range row anywhere in the batch throws IdOutOfRange; nothing is written") {
    const std::vector<std::int64_t> in(6, 99);
    for (std::int64_t bad : {std::int64_t{4}, std::int64_t{-1}, std::int64_t{1} << 62}) {
      const std::vector<std::int64_t> rows = {0, 1, bad};
      CHECK_THROWS_MATCHES(s.write_rows("x", rows, bytes_of(in)), IdOutOfRange,
                           test::WhatContains({"tensor 'x'", std::to_string(bad)}));
      CHECK_THROWS_AS(s.add_rows("x", rows, bytes_of(in)), IdOutOfRange);
      std::vector<std::int64_t> out(6);
      CHECK_THROWS_AS(s.read_rows("x", rows, out_bytes(out)), IdOutOfRange);
    }
    CHECK(read<std::int64_t>(s, "x", {0, 1, 2, 3}) == init);
  }
  SECTION("byte spans of the wrong length throw ShapeError; nothing is written") {
    const std::vector<std::int64_t> rows = {0, 1};
    const std::vector<std::int64_t> short_in(3, 5), long_in(5, 5);
    CHECK_THROWS_AS(s.write_rows("x", rows, bytes_of(short_in)), ShapeError);
    CHECK_THROWS_AS(s.add_rows("x", rows, bytes_of(long_in)), ShapeError);
    std::vector<std::int64_t> out(3);
    CHECK_THROWS_MATCHES(s.read_rows("x", rows, out_bytes(out)), ShapeError,
                         test::WhatContains({"tensor 'x'"}));
    const std::vector<std::byte> odd(2 * 16 - 1);
    CHECK_THROWS_AS(s.write_rows("x", rows, odd), ShapeError);
    CHECK(read<std::int64_t>(s, "x", {0, 1, 2, 3}) == init);
  }
  SECTION("unknown names throw NotFound naming the tensor") {
    std::vector<std::int64_t> out(2);
    const std::vector<std::int64_t> rows = {0};
    CHECK_THROWS_MATCHES(s.read_rows("y", rows, out_bytes(out)), NotFound,
                         test::WhatContains({"tensor 'y'"}));
    CHECK_THROWS_AS(s.write_rows("y", rows, bytes_of(out)), NotFound);
    CHECK_THROWS_AS(s.add_rows("y", rows, bytes_of(out)), NotFound);
    CHECK_THROWS_AS(s.spec("y"), NotFound);
    CHECK_THROWS_AS(s.read_rows("no/such", rows, out_bytes(out)), NotFound);
    CHECK_FALSE(s.remove("y"));
  }
}

/// Readers never see a row half-written by a concurrent writer.
template <class S>
void check_no_torn_rows() {
  Fixture<S> f;
  auto& s = f.storage;
  // Long rows (4 KiB) give a torn copy plenty of room to show.
  constexpr std::int64_t rows = 16, cols = 512;
  constexpr int writers = 3, readers = 2, generations = 1500;
  REQUIRE(s.create({.name = "pattern", .dtype = DType::int64, .rows = rows, .cols = cols}));
  std::atomic<std::int64_t> torn{0}, bad_value{0}, rows_checked{0};

  run_threads(writers + readers, [&](int id) {
    if (id < writers) {
      // Every element of a written row is the same value: writer id and generation.
      std::vector<std::int64_t> in(4 * cols);
      for (int g = 0; g < generations; ++g) {
        const std::int64_t value = (id + 1) * 1000000 + g;
        std::fill(in.begin(), in.end(), value);
        const std::vector<std::int64_t> batch = {(g + id) % rows, (g * 3 + id) % rows,
                                                 (g * 5 + 1) % rows, (g * 7 + id + 2) % rows};
        s.write_rows("pattern", batch, bytes_of(in));
      }
      return;
    }
    std::vector<std::int64_t> all(rows);
    std::iota(all.begin(), all.end(), 0);
    std::vector<std::int64_t> out(rows * cols);
    for (int k = 0; k < generations; ++k) {
      s.read_rows("pattern", all, out_bytes(out));
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t* row = out.data() + r * cols;
        const std::int64_t v = row[0];
        if (!std::all_of(row, row + cols, [v](std::int64_t x) { return x == v; })) ++torn;
        const std::int64_t w = v / 1000000, g = v % 1000000;
        if (v != 0 && !(w >= 1 && w <= writers && g < generations)) ++bad_value;
        ++rows_checked;
      }
    }
  });
  CHECK(torn == 0);
  CHECK(bad_value == 0);
  CHECK(rows_checked == readers * generations * rows);
}

/// Concurrent add_rows to the same rows lose no addition.
template <class S>
void check_no_lost_adds() {
  Fixture<S> f;
  auto& s = f.storage;
  constexpr std::int64_t rows = 8, cols = 33;
  constexpr int threads = 4, rounds = 3000;
  REQUIRE(s.create({.name = "acc", .dtype = DType::int64, .rows = rows, .cols = cols}));
  REQUIRE(s.create({.name = "accf", .dtype = DType::float32, .rows = rows, .cols = cols}));
  // Every thread adds to all rows, row 3 twice per call; float sums stay below 2^24, so
  // they are exact.
  const std::vector<std::int64_t> batch = {0, 1, 2, 3, 4, 5, 6, 7, 3};
  run_threads(threads, [&](int id) {
    const std::vector<std::int64_t> in(batch.size() * cols, id + 1);
    const std::vector<float> fin(batch.size() * cols, static_cast<float>(id + 1));
    for (int k = 0; k < rounds; ++k) {
      s.add_rows("acc", batch, bytes_of(in));
      s.add_rows("accf", batch, bytes_of(fin));
    }
  });
  const std::int64_t per_listing = rounds * (threads * (threads + 1) / 2);
  const auto sums = read<std::int64_t>(s, "acc", {0, 1, 2, 3, 4, 5, 6, 7});
  const auto fsums = read<float>(s, "accf", {0, 1, 2, 3, 4, 5, 6, 7});
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t expected = per_listing * (r == 3 ? 2 : 1);
      REQUIRE(sums[static_cast<std::size_t>(r * cols + c)] == expected);
      REQUIRE(fsums[static_cast<std::size_t>(r * cols + c)] == static_cast<float>(expected));
    }
}

/// remove and create race with readers and adders without harm.
template <class S>
void check_remove_while_in_use() {
  Fixture<S> f;
  auto& s = f.storage;
  const TensorSpec spec{.name = "t", .dtype = DType::float64, .rows = 64, .cols = 16};
  REQUIRE(s.create(spec));
  std::atomic<int> served{0}, missing{0};
  run_threads(3, [&](int id) {
    std::vector<std::int64_t> all(64);
    std::iota(all.begin(), all.end(), 0);
    std::vector<double> buf(64 * 16, 1.0);
    for (int k = 0; k < 300; ++k) {
      if (id == 0) {
        // Recreate with the same layout: readers see the old or the new tensor.
        s.remove("t");
        s.create(spec);
        continue;
      }
      try {
        if (id == 1)
          s.read_rows("t", all, out_bytes(buf));
        else
          s.add_rows("t", all, bytes_of(buf));
        ++served;
      } catch (const NotFound&) {
        ++missing;
      }
    }
  });
  CHECK(served + missing == 600);
  CHECK(s.contains("t"));
}

}  // namespace distgraph::test::storage_conformance

/// Registers every storage conformance case as a TEMPLATE_TEST_CASE over the models given,
/// e.g. DISTGRAPH_STORAGE_CONFORMANCE_TESTS(InMemoryStorage, MmapStorage).
#define DISTGRAPH_STORAGE_CONFORMANCE_TESTS(...)                                                 \
  TEMPLATE_TEST_CASE("storages create tensors once and reject a different layout",               \
                     "[conformance][storage]", __VA_ARGS__) {                                    \
    ::distgraph::test::storage_conformance::check_create_and_layout<TestType>();                 \
  }                                                                                              \
  TEMPLATE_TEST_CASE("storages read, write and add rows in request order",                       \
                     "[conformance][storage]", __VA_ARGS__) {                                    \
    ::distgraph::test::storage_conformance::check_rows_in_request_order<TestType>();             \
  }                                                                                              \
  TEMPLATE_TEST_CASE("concurrent row writes are never seen half-done", "[conformance][storage]", \
                     __VA_ARGS__) {                                                              \
    ::distgraph::test::storage_conformance::check_no_torn_rows<TestType>();                      \
  }                                                                                              \
  TEMPLATE_TEST_CASE("concurrent adds to overlapping rows lose no update",                       \
                     "[conformance][storage]", __VA_ARGS__) {                                    \
    ::distgraph::test::storage_conformance::check_no_lost_adds<TestType>();                      \
  }                                                                                              \
  TEMPLATE_TEST_CASE("removing a tensor while other threads use it is safe",                     \
                     "[conformance][storage]", __VA_ARGS__) {                                    \
    ::distgraph::test::storage_conformance::check_remove_while_in_use<TestType>();               \
  }

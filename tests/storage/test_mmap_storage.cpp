// MmapStorage: .npy files NumPy can read, visibility between handles, and processes that
// write, add and create concurrently in one folder.
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "distgraph/io/npy.hpp"
#include "distgraph/storage/in_memory_storage.hpp"
#include "distgraph/storage/mmap_storage.hpp"
#include "support/temp_dir.hpp"
#include "support/what_contains.hpp"

namespace test_storage_mmap_storage {

using namespace distgraph;
namespace fs = std::filesystem;

namespace {

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

template <class T, class S>
std::vector<T> read_all(const S& s, const std::string& name) {
  const TensorSpec spec = s.spec(name);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(spec.rows));
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<T> out(static_cast<std::size_t>(spec.rows * spec.cols));
  s.read_rows(name, rows, std::as_writable_bytes(std::span(out)));
  return out;
}

/// Forked child processes that start together on go() and report an exit code each.
/// Children must not touch Catch2: they return a code (0 = success), and any exception
/// becomes code 99 after printing its message to stderr.
class Children {
 public:
  template <class Body>
  Children(int n, Body body) {
    REQUIRE(::pipe(start_) == 0);
    REQUIRE(::pipe(done_) == 0);
    for (int i = 0; i < n; ++i) {
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        ::close(start_[1]);  // so closing the parent's copy is seen as EOF
        ::close(done_[0]);
        char c;
        int code = 98;
        // EOF on the start pipe is the broadcast "go".
        if (::read(start_[0], &c, 1) == 0) {
          try {
            code = body(i);
          } catch (const std::exception& e) {
            std::fprintf(stderr, "child %d: %s\n", i, e.what());
            code = 99;
          }
        }
        // Exiting closes this child's end of the done pipe.
        ::_exit(code);
      }
      pids_.push_back(pid);
    }
    ::close(start_[0]);
    ::close(done_[1]);
  }
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;
  ~Children() {
    ::close(start_[1]);
    ::close(done_[0]);
  }

  /// Releases every child at once.
  void go() {
    ::close(start_[1]);
    start_[1] = -1;
  }

  /// Exit codes of all children once they have exited; kills them and fails the test
  /// when they have not all exited within `timeout`.
  std::vector<int> wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    bool all_exited = false;
    while (!all_exited) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{done_[0], POLLIN, 0};
      const int rc = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(0, left.count())));
      if (rc == 0) break;
      char c;
      // The done pipe reads EOF once every child has exited (nobody writes to it).
      if (rc > 0 && ::read(done_[0], &c, 1) == 0) all_exited = true;
    }
    if (!all_exited)
      for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    std::vector<int> codes;
    for (pid_t pid : pids_) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    REQUIRE(all_exited);
    return codes;
  }

 private:
  int start_[2] = {-1, -1};
  int done_[2] = {-1, -1};
  std::vector<pid_t> pids_;
};

/// The rows one add_rows call of round `k` touches: 6 of 48 rows, overlapping between
/// rounds and processes, row `k % 48` listed twice.
std::vector<std::int64_t> add_batch(int k) {
  std::vector<std::int64_t> rows;
  for (int i = 0; i < 5; ++i) rows.push_back((k * 7 + i * 11) % 48);
  rows.push_back(k % 48);
  return rows;
}

}  // namespace

TEST_CASE("tensor files are .npy arrays with 64-byte aligned data that NumPy can load",
          "[storage]") {
  test::TempDir tmp;
  MmapStorage s(tmp / "m0");
  const std::vector<float> init = {1, 2, 3, 4, 5, 6};
  REQUIRE(
      s.create({.name = "feat", .dtype = DType::float32, .rows = 3, .cols = 2}, bytes_of(init)));
  s.write_rows("feat", std::vector<std::int64_t>{1}, bytes_of(std::vector<float>{-3, -4}));
  CHECK(s.file_path("feat") == tmp / "m0" / "feat.npy");
  const NpyArray a = read_npy(s.file_path("feat"));
  CHECK(a.header.dtype == DType::float32);
  CHECK(a.header.shape == std::vector<std::int64_t>{3, 2});
  CHECK(a.header.data_offset % 64 == 0);
  const auto data = a.as<float>();
  CHECK(std::vector<float>(data.begin(), data.end()) == std::vector<float>{1, 2, -3, -4, 5, 6});
  CHECK(s.path() == tmp / "m0");
  // Prefaulted mappings read the same pages.
  const auto pre = MmapStorage::attach(tmp / "m0", {.prefault = true});
  CHECK(read_all<float>(pre, "feat") == std::vector<float>{1, 2, -3, -4, 5, 6});
  CHECK_THROWS_AS(s.file_path("a b"), InvalidArgument);
}

TEST_CASE("a bfloat16 tensor stays bfloat16 for every process that attaches to the folder",
          "[storage]") {
  test::TempDir tmp;
  MmapStorage s(tmp / "m0");
  const std::vector<std::uint16_t> words = {0x3f80, 0xc000, 0x3f00, 0x7f80};
  REQUIRE(s.create({.name = "node:feat", .dtype = DType::bfloat16, .rows = 2, .cols = 2},
                   bytes_of(words)));
  CHECK(s.spec("node:feat").dtype == DType::bfloat16);
  // Backups and co-located trainers attach: the file's header says what the words are.
  const auto other = MmapStorage::attach(tmp / "m0");
  REQUIRE(other.list().size() == 1);
  CHECK(other.list().front().dtype == DType::bfloat16);
  CHECK(read_all<std::uint16_t>(other, "node:feat") == words);
  // Creating it again as uint16 (same bytes per row) is a dtype mismatch, not a reuse.
  CHECK_THROWS_AS(s.create({.name = "node:feat", .dtype = DType::uint16, .rows = 2, .cols = 2}),
                  DTypeError);
  CHECK(read_npy(s.file_path("node:feat")).header.dtype == DType::bfloat16);
}

TEST_CASE("create_from_npy copies an array in, and higher ranks flatten into columns",
          "[storage]") {
  test::TempDir tmp;
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  write_npy(tmp / "cube.npy", v, {2, 3, 2});
  write_npy(tmp / "col.npy", std::vector<std::int32_t>{4, 5, 6});
  MmapStorage s(tmp / "store");
  InMemoryStorage mem;
  CHECK(s.create_from_npy("cube", tmp / "cube.npy"));
  CHECK(mem.create_from_npy("cube", tmp / "cube.npy"));
  CHECK(s.spec("cube").same_layout({.name = "", .dtype = DType::float64, .rows = 2, .cols = 6}));
  CHECK(read_all<double>(s, "cube") == v);
  CHECK(read_all<double>(mem, "cube") == v);
  CHECK(s.create_from_npy("col", tmp / "col.npy"));
  CHECK(s.spec("col").same_layout({.name = "", .dtype = DType::int32, .rows = 3, .cols = 1}));
  CHECK(read_all<std::int32_t>(s, "col") == std::vector<std::int32_t>{4, 5, 6});
  // The copy is independent of the source file.
  fs::remove(tmp / "col.npy");
  CHECK(read_all<std::int32_t>(s, "col") == std::vector<std::int32_t>{4, 5, 6});
  // Same layout again: false; another layout: the usual error.
  CHECK_FALSE(s.create_from_npy("cube", tmp / "cube.npy"));
  CHECK_THROWS_AS(s.create_from_npy("col", tmp / "cube.npy"), DTypeError);
  CHECK_THROWS_AS(s.create_from_npy("x", tmp / "missing.npy"), IoError);
}

TEST_CASE("a second handle on the folder sees creations, writes and removals of the first",
          "[storage]") {
  test::TempDir tmp;
  MmapStorage a = MmapStorage::create_dir(tmp / "shm");
  MmapStorage b = MmapStorage::attach(tmp / "shm");
  REQUIRE(a.create({.name = "emb", .dtype = DType::int64, .rows = 4, .cols = 3}));
  CHECK(b.contains("emb"));
  a.write_rows("emb", std::vector<std::int64_t>{2}, bytes_of(std::vector<std::int64_t>{7, 8, 9}));
  b.add_rows("emb", std::vector<std::int64_t>{2}, bytes_of(std::vector<std::int64_t>{1, 1, 1}));
  CHECK(read_all<std::int64_t>(a, "emb") ==
        std::vector<std::int64_t>{0, 0, 0, 0, 0, 0, 8, 9, 10, 0, 0, 0});
  CHECK(b.list().size() == 1);

  // b has the old file mapped; a replaces it with another shape.
  CHECK(a.remove("emb"));
  CHECK_FALSE(b.contains("emb"));
  CHECK_THROWS_AS(b.spec("emb"), NotFound);
  REQUIRE(a.create({.name = "emb", .dtype = DType::int64, .rows = 2, .cols = 5}));
  CHECK(b.spec("emb").cols == 5);
  CHECK(b.create({.name = "emb", .dtype = DType::int64, .rows = 2, .cols = 5}) == false);
  CHECK_THROWS_AS(b.create({.name = "emb", .dtype = DType::int64, .rows = 4, .cols = 3}),
                  ShapeError);

  // A handle moved elsewhere keeps working.
  MmapStorage moved = std::move(b);
  CHECK(moved.spec("emb").rows == 2);
}

TEST_CASE("create() of an existing tensor keeps its mapping (no page faulted in again)",
          "[storage]") {
  // Counted, not timed: rewriting every row of a 16 MiB tensor through a fresh mapping
  // takes one minor fault per 4 KiB page (4096); through the kept one, none.
  test::TempDir tmp;
  MmapStorage s = MmapStorage::create_dir(tmp / "shm");
  const TensorSpec spec{.name = "emb", .dtype = DType::float32, .rows = 4096, .cols = 1024};
  REQUIRE(s.create(spec));
  std::vector<std::int64_t> all(4096);
  std::iota(all.begin(), all.end(), 0);
  const std::vector<float> ones(4096 * 1024, 1.0f);
  s.write_rows("emb", all, bytes_of(ones));  // every page touched once
  const auto minor_faults = [] {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
  };
  CHECK_FALSE(s.create(spec));  // exists: nothing created
  const auto before = minor_faults();
  s.write_rows("emb", all, bytes_of(ones));
  CHECK(minor_faults() - before < 1024);
  CHECK(read_all<float>(s, "emb") == ones);
}

TEST_CASE("attaching needs an existing storage folder", "[storage]") {
  test::TempDir tmp;
  CHECK_THROWS_MATCHES(MmapStorage::attach(tmp / "nope"), IoError, test::WhatContains({"nope"}));
  fs::create_directories(tmp / "plain");
  CHECK_THROWS_MATCHES(MmapStorage::attach(tmp / "plain"), IoError, test::WhatContains({".locks"}));
  // Opening (not attaching) an empty folder turns it into a storage.
  MmapStorage made(tmp / "plain");
  CHECK(made.list().empty());
  CHECK_NOTHROW(MmapStorage::attach(tmp / "plain"));
}

TEST_CASE("processes attached to one folder add to overlapping rows without losing updates",
          "[storage]") {
  test::TempDir tmp;
  const fs::path dir = tmp / "m0";
  MmapStorage s(dir);
  constexpr std::int64_t rows = 48, cols = 24;
  constexpr int procs = 3, rounds = 4000;
  REQUIRE(s.create({.name = "acc", .dtype = DType::int64, .rows = rows, .cols = cols}));
  REQUIRE(s.create({.name = "accf", .dtype = DType::float64, .rows = rows, .cols = cols}));

  // Process p (the parent is procs) adds p + 1 to every element of each listed row.
  auto run = [&](MmapStorage& st, int p) {
    for (int k = 0; k < rounds; ++k) {
      const auto batch = add_batch(k);
      const std::vector<std::int64_t> in(batch.size() * cols, p + 1);
      const std::vector<double> fin(batch.size() * cols, p + 1);
      st.add_rows("acc", batch, bytes_of(in));
      st.add_rows("accf", batch, bytes_of(fin));
    }
  };
  Children children(procs, [&](int p) {
    MmapStorage mine = MmapStorage::attach(dir);
    run(mine, p);
    return 0;
  });
  children.go();
  run(s, procs);
  const auto codes = children.wait(std::chrono::seconds(120));
  CHECK(codes == std::vector<int>(procs, 0));

  std::vector<std::int64_t> expected(rows * cols, 0);
  const std::int64_t per_listing = (procs + 1) * (procs + 2) / 2;  // 1 + 2 + ... + (procs + 1)
  for (int k = 0; k < rounds; ++k)
    for (std::int64_t r : add_batch(k))
      for (std::int64_t c = 0; c < cols; ++c) expected[r * cols + c] += per_listing;
  CHECK(read_all<std::int64_t>(s, "acc") == expected);
  const auto f = read_all<double>(s, "accf");
  CHECK(std::equal(f.begin(), f.end(), expected.begin(),
                   [](double x, std::int64_t y) { return x == static_cast<double>(y); }));
}

TEST_CASE("rows written by other processes are never read torn", "[storage]") {
  test::TempDir tmp;
  const fs::path dir = tmp / "m0";
  MmapStorage s(dir);
  // 8 KiB rows: a copy without the seqlock would often overlap a writer's copy.
  constexpr std::int64_t rows = 8, cols = 1024;
  constexpr int writers = 2, generations = 3000;
  REQUIRE(s.create({.name = "pattern", .dtype = DType::int64, .rows = rows, .cols = cols}));

  // A row is consistent when all its elements are equal and either 0 or a written value.
  auto check_rows = [&](const std::vector<std::int64_t>& out) {
    int bad = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t* row = out.data() + r * cols;
      const std::int64_t v = row[0];
      if (!std::all_of(row, row + cols, [v](std::int64_t x) { return x == v; })) ++bad;
      if (v != 0 && !(v / 1000000 >= 1 && v / 1000000 <= writers && v % 1000000 < generations))
        ++bad;
    }
    return bad;
  };
  std::vector<std::int64_t> all(rows);
  std::iota(all.begin(), all.end(), 0);

  Children children(writers, [&](int w) {
    MmapStorage mine = MmapStorage::attach(dir);
    std::vector<std::int64_t> in(2 * cols);
    std::vector<std::int64_t> out(rows * cols);
    for (int g = 0; g < generations; ++g) {
      std::fill(in.begin(), in.end(), (w + 1) * 1000000 + g);
      mine.write_rows("pattern", std::vector<std::int64_t>{g % rows, (g * 3 + w) % rows},
                      bytes_of(in));
      if (g % 8 == 0) {
        mine.read_rows("pattern", all, std::as_writable_bytes(std::span(out)));
        if (check_rows(out) != 0) return 2;
      }
    }
    return 0;
  });
  children.go();
  std::vector<std::int64_t> out(rows * cols);
  int torn = 0;
  for (int k = 0; k < generations; ++k) {
    s.read_rows("pattern", all, std::as_writable_bytes(std::span(out)));
    torn += check_rows(out);
  }
  const auto codes = children.wait(std::chrono::seconds(120));
  CHECK(codes == std::vector<int>(writers, 0));
  CHECK(torn == 0);
  s.read_rows("pattern", all, std::as_writable_bytes(std::span(out)));
  CHECK(check_rows(out) == 0);
}

TEST_CASE("processes racing to create one tensor: exactly one creates, all see its data",
          "[storage]") {
  test::TempDir tmp;
  const fs::path dir = tmp / "m0";
  MmapStorage s(dir);
  constexpr int procs = 4;
  const TensorSpec spec{.name = "features", .dtype = DType::int32, .rows = 64, .cols = 16};
  Children children(procs, [&](int p) {
    MmapStorage mine = MmapStorage::attach(dir);
    const std::vector<std::int32_t> fill(64 * 16, p + 1);
    const bool created = mine.create(spec, bytes_of(fill));
    // Every process then reads the same, uniform tensor.
    const auto got = read_all<std::int32_t>(mine, "features");
    const bool uniform = std::all_of(got.begin(), got.end(), [&](auto x) { return x == got[0]; });
    if (!uniform || got[0] < 1 || got[0] > procs) return 3;
    return created ? 10 + got[0] : 20 + got[0];
  });
  children.go();
  const auto codes = children.wait(std::chrono::seconds(60));
  REQUIRE(s.contains("features"));
  const auto data = read_all<std::int32_t>(s, "features");
  const int winner = data[0];
  int creators = 0;
  for (int p = 0; p < procs; ++p) {
    CHECK((codes[p] == 10 + winner || codes[p] == 20 + winner));
    if (codes[p] == 10 + winner) {
      ++creators;
      CHECK(winner == p + 1);
    }
  }
  CHECK(creators == 1);
  // No temporary files are left behind.
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("a tensor created by a child process after the parent attached becomes visible",
          "[storage]") {
  test::TempDir tmp;
  const fs::path dir = tmp / "m0";
  MmapStorage s(dir);
  REQUIRE(s.create({.name = "old", .dtype = DType::float32, .rows = 2, .cols = 2}));
  CHECK(s.contains("old"));
  Children children(1, [&](int) {
    MmapStorage mine = MmapStorage::attach(dir);
    mine.create({.name = "late", .dtype = DType::float32, .rows = 2, .cols = 2},
                bytes_of(std::vector<float>{1, 2, 3, 4}));
    return mine.remove("old") ? 0 : 4;
  });
  children.go();
  CHECK(children.wait(std::chrono::seconds(60)) == std::vector<int>{0});
  CHECK(s.contains("late"));
  CHECK(read_all<float>(s, "late") == std::vector<float>{1, 2, 3, 4});
  CHECK_FALSE(s.contains("old"));
  const auto names = s.list();
  REQUIRE(names.size() == 1);
  CHECK(names[0].name == "late");
}

}  // namespace test_storage_mmap_storage

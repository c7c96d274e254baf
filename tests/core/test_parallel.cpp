#include <catch2/catch.hpp>

#include <atomic>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/parallel.hpp"

namespace test_core_parallel {

using namespace distgraph;

TEST_CASE("parallel_chunks covers the range exactly once with contiguous chunks", "[core]") {
  for (std::int64_t n : {0, 1, 7, 100000, 1000003}) {
    for (unsigned threads : {1u, 2u, 5u}) {
      std::vector<int> hits(static_cast<std::size_t>(n), 0);
      parallel_chunks(0, n, threads, [&](unsigned, std::int64_t b, std::int64_t e) {
        for (auto i = b; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
      }, 1000);
      CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
    }
  }
}

TEST_CASE("parallel_chunks rethrows an exception from a worker", "[core]") {
  CHECK_THROWS_AS(parallel_chunks(0, 1 << 20, 4,
                                  [](unsigned c, std::int64_t, std::int64_t) {
                                    if (c == 2) throw std::runtime_error("boom");
                                  }, 1),
                  std::runtime_error);
}

TEST_CASE("buffer slices share the owner and clone copies", "[core]") {
  Buffer<int> b(std::vector<int>{1, 2, 3, 4, 5});
  auto s = b.slice(1, 3);
  REQUIRE(s.size() == 3);
  CHECK(s[0] == 2);
  s[0] = 20;
  CHECK(b[1] == 20);
  auto c = b.clone();
  c[1] = 7;
  CHECK(b[1] == 20);
  CHECK(std::accumulate(c.begin(), c.end(), 0) == 1 + 7 + 3 + 4 + 5);
}

}  // namespace test_core_parallel

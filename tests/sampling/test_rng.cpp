#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <vector>

#include "distgraph/sampling/rng.hpp"

namespace test_sampling_rng {

using namespace distgraph;

namespace {

std::vector<std::uint64_t> draws(const SampleKey& key, std::int64_t node, int n = 8) {
  SampleRng rng(hash_key(key), node);
  std::vector<std::uint64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(rng.next());
  return out;
}

}  // namespace

TEST_CASE("a sample stream depends only on the key and the node", "[sampling]") {
  const SampleKey key{.seed = 7, .epoch = 2, .rank = 3, .batch = 11, .layer = 1};
  CHECK(draws(key, 42) == draws(key, 42));
  CHECK(draws(key, 42) != draws(key, 43));
  CHECK(draws(key, 42) != draws({.seed = 8, .epoch = 2, .rank = 3, .batch = 11, .layer = 1}, 42));
  CHECK(draws(key, 42) != draws({.seed = 7, .epoch = 3, .rank = 3, .batch = 11, .layer = 1}, 42));
  CHECK(draws(key, 42) != draws({.seed = 7, .epoch = 2, .rank = 4, .batch = 11, .layer = 1}, 42));
  CHECK(draws(key, 42) != draws({.seed = 7, .epoch = 2, .rank = 3, .batch = 12, .layer = 1}, 42));
  CHECK(draws(key, 42) != draws(key.at_layer(0), 42));
  CHECK(key.at_layer(0).batch == 11);
}

TEST_CASE("sample key fields do not cancel when swapped", "[sampling]") {
  // A plain XOR of fields would give (epoch 1, batch 2) and (epoch 2, batch 1) one stream.
  std::set<std::uint64_t> hashes;
  for (std::int64_t a = 0; a < 8; ++a)
    for (std::int64_t b = 0; b < 8; ++b)
      hashes.insert(hash_key({.seed = 1, .epoch = a, .rank = 0, .batch = b, .layer = 0}));
  CHECK(hashes.size() == 64);
}

TEST_CASE("below stays in range and uniform values lie in their intervals", "[sampling]") {
  SampleRng rng(hash_key({}), 0);
  for (std::uint64_t n : {1ull, 2ull, 3ull, 10ull, 1000003ull, (1ull << 40) + 5}) {
    for (int i = 0; i < 1000; ++i) CHECK(rng.below(n) < n);
  }
  for (int i = 0; i < 10000; ++i) {
    const double u = rng.uniform(), w = rng.uniform_open();
    CHECK((u >= 0.0 && u < 1.0));
    CHECK((w > 0.0 && w <= 1.0));
  }
}

TEST_CASE("below(n) hits every value about equally often", "[sampling]") {
  SampleRng rng(hash_key({.seed = 3}), 5);
  std::vector<int> hist(7, 0);
  const int trials = 70000;
  for (int i = 0; i < trials; ++i) ++hist[rng.below(7)];
  double stat = 0;
  for (int h : hist) stat += (h - trials / 7.0) * (h - trials / 7.0) / (trials / 7.0);
  CHECK(stat < 35.0);  // chi-square, 6 degrees of freedom: P(stat > 35) < 1e-5
}

}  // namespace test_sampling_rng

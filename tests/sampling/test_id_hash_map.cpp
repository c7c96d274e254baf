#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <random>

#include "distgraph/sampling/id_hash_map.hpp"

namespace test_sampling_id_hash_map {

using distgraph::detail::IdHashMap;

TEST_CASE("id hash map agrees with std::map through growth and reset", "[sampling]") {
  IdHashMap map(4);
  std::map<std::int64_t, std::int64_t> ref;
  std::mt19937_64 rng(1);
  for (int round = 0; round < 2; ++round) {
    for (std::int64_t i = 0; i < 20000; ++i) {
      // Clustered keys (as relabeled IDs are) and scattered ones.
      const std::int64_t key = i % 2 ? i / 2 : static_cast<std::int64_t>(rng() >> 2);
      const std::int64_t want = ref.emplace(key, i).first->second;
      REQUIRE(map.insert(key, i) == want);
    }
    CHECK(map.size() == ref.size());
    for (const auto& [k, v] : ref) REQUIRE(map.find(k) == v);
    CHECK(map.find(static_cast<std::int64_t>(1) << 62) == IdHashMap::absent);
    map.reset(10);
    ref.clear();
    CHECK(map.size() == 0);
    CHECK(map.find(3) == IdHashMap::absent);
  }
}

}  // namespace test_sampling_id_hash_map

// RowLockTable: stripe mapping, sequence counting, and the deadline on a stuck stripe.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "distgraph/storage/row_locks.hpp"
#include "support/what_contains.hpp"

namespace test_storage_row_locks {

using namespace distgraph;
using detail::row_lock_stripes;
using detail::RowLockTable;

TEST_CASE("row locks map every stripe once and neighbouring rows to different cache lines",
          "[storage]") {
  std::vector<std::uint64_t> counters(row_lock_stripes);
  const RowLockTable table(counters.data());
  std::set<const std::uint64_t*> seen;
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(row_lock_stripes); ++r) {
    const std::uint64_t* c = &table.counter(r, 0);
    REQUIRE(c >= counters.data());
    REQUIRE(c < counters.data() + row_lock_stripes);
    seen.insert(c);
    const auto line = [&](std::int64_t row) {
      return (&table.counter(row, 0) - counters.data()) / 8;
    };
    if (r > 0) REQUIRE(line(r) != line(r - 1));
  }
  CHECK(seen.size() == row_lock_stripes);
  // Rows wrap around the table, and the salt shifts a tensor's rows.
  CHECK(&table.counter(5, 0) == &table.counter(5 + row_lock_stripes, 0));
  CHECK(&table.counter(5, 3) == &table.counter(8, 0));
  CHECK(detail::stripe_salt("feat") == detail::stripe_salt("feat"));
  CHECK(detail::stripe_salt("feat") != detail::stripe_salt("label"));
}

TEST_CASE("a row write moves its counter from even to the next even value", "[storage]") {
  std::vector<std::uint64_t> counters(row_lock_stripes);
  const RowLockTable table(counters.data());
  std::uint64_t& c = table.counter(42, 7);
  bool odd_inside = false;
  table.write(42, 7, "tensor 't'", [&]() noexcept { odd_inside = (c & 1) == 1; });
  CHECK(odd_inside);
  CHECK(c == 2);
  std::byte src[8] = {std::byte{1}, std::byte{2}}, dst[8] = {};
  table.read(42, 7, dst, src, sizeof src, "tensor 't'");
  CHECK(dst[1] == std::byte{2});
  CHECK(c == 2);  // readers never write the counter
}

TEST_CASE("a stripe left odd by a dead writer makes readers and writers time out", "[storage]") {
  std::vector<std::uint64_t> counters(row_lock_stripes);
  const RowLockTable table(counters.data(), std::chrono::milliseconds(30));
  table.counter(9, 0) = 1;  // as if a writer died holding it
  std::byte src[4] = {}, dst[4] = {};
  CHECK_THROWS_MATCHES(table.read(9, 0, dst, src, sizeof src, "tensor 'stuck'"), TimeoutError,
                       test::WhatContains({"tensor 'stuck'", "30 ms"}));
  CHECK_THROWS_AS(table.write(9, 0, "tensor 'stuck'", []() noexcept {}), TimeoutError);
  // Other stripes are unaffected.
  table.read(10, 0, dst, src, sizeof src, "tensor 'stuck'");
}

}  // namespace test_storage_row_locks

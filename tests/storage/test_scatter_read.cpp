// scatter_rows and read_rows_into: rows that arrive grouped land in their request slots,
// whatever the row size, and slots nobody names stay as they were.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "distgraph/storage/in_memory_storage.hpp"
#include "distgraph/storage/scatter_read.hpp"

namespace test_storage_scatter_read {

using namespace distgraph;

namespace {

/// `count` slots out of `slots`: rising with gaps (one owner's share of a batch) or in
/// random order.
std::vector<std::size_t> pick_slots(std::size_t slots, std::size_t count, bool rising,
                                    std::mt19937_64& rng) {
  std::vector<std::size_t> all(slots);
  std::iota(all.begin(), all.end(), std::size_t{0});
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(count);
  if (rising) std::sort(all.begin(), all.end());
  return all;
}

}  // namespace

TEST_CASE("scatter_rows puts each row in its slot for every row size", "[storage]") {
  std::mt19937_64 rng(7);
  // Rows shorter than a cache line, straddling lines, and past the prefetch's 1 KiB.
  for (const std::size_t row_bytes : {1, 3, 63, 64, 100, 400, 1500}) {
    for (const bool rising : {true, false}) {
      const std::size_t slots = 300, count = 130;
      const auto at = pick_slots(slots, count, rising, rng);
      std::vector<std::byte> rows(count * row_bytes);
      for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = std::byte(i * 31 + 7);
      std::vector<std::byte> out(slots * row_bytes, std::byte{0xEE});
      scatter_rows(rows, at, out, row_bytes);
      std::vector<bool> named(slots, false);
      for (std::size_t i = 0; i < count; ++i) {
        named[at[i]] = true;
        CHECK(std::equal(out.begin() + static_cast<std::ptrdiff_t>(at[i] * row_bytes),
                         out.begin() + static_cast<std::ptrdiff_t>((at[i] + 1) * row_bytes),
                         rows.begin() + static_cast<std::ptrdiff_t>(i * row_bytes)));
      }
      for (std::size_t s = 0; s < slots; ++s)
        if (!named[s])
          CHECK(std::all_of(out.begin() + static_cast<std::ptrdiff_t>(s * row_bytes),
                            out.begin() + static_cast<std::ptrdiff_t>((s + 1) * row_bytes),
                            [](std::byte b) { return b == std::byte{0xEE}; }));
    }
  }
}

TEST_CASE("read_rows_into scatters a storage's rows into request slots", "[storage]") {
  InMemoryStorage s;
  const std::int64_t num_rows = 50, cols = 3;
  std::vector<float> values(static_cast<std::size_t>(num_rows * cols));
  std::iota(values.begin(), values.end(), 0.f);
  REQUIRE(
      s.create(TensorSpec{"x", DType::float32, num_rows, cols}, std::as_bytes(std::span(values))));
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * sizeof(float);
  const std::vector<std::int64_t> rows{49, 0, 17, 17, 3};
  const std::vector<std::size_t> at{6, 0, 2, 5, 1};
  std::vector<float> out(7 * static_cast<std::size_t>(cols), -1.f);
  read_rows_into(s, "x", rows, at, std::as_writable_bytes(std::span(out)), row_bytes);
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::int64_t c = 0; c < cols; ++c)
      CHECK(out[at[i] * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)] ==
            values[static_cast<std::size_t>(rows[i] * cols + c)]);
  // Slot 3 and 4 were named by no row.
  for (std::size_t k = 3 * static_cast<std::size_t>(cols); k < 5 * static_cast<std::size_t>(cols);
       ++k)
    CHECK(out[k] == -1.f);
}

}  // namespace test_storage_scatter_read

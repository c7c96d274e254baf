// Write generations (VersionedStorage): every change to a tensor moves its generation, in
// every handle of a shared folder, and reading does not.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "distgraph/storage/in_memory_storage.hpp"
#include "distgraph/storage/mmap_storage.hpp"
#include "support/temp_dir.hpp"

namespace test_storage_generations {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

/// Checks that `writer`'s writes, adds, creates and removes of "t" each move the generation
/// `reader` reports, and that reads do not.
template <class W, class R>
void check_generations(W& writer, const R& reader) {
  static_assert(VersionedStorage<W> && VersionedStorage<R>);
  const TensorSpec spec{"t", DType::float32, 8, 2};
  std::uint64_t seen = reader.generation("t");
  const auto moved = [&] {
    const std::uint64_t now = reader.generation("t");
    const bool changed = now != seen;
    seen = now;
    return changed;
  };
  REQUIRE(writer.create(spec));
  CHECK(moved());
  CHECK_FALSE(writer.create(spec));  // exists: nothing changed
  CHECK_FALSE(moved());
  const std::int64_t rows[2] = {1, 5};
  const std::vector<float> values{1, 2, 3, 4};
  writer.write_rows("t", rows, std::as_bytes(std::span(values)));
  CHECK(moved());
  std::vector<float> out(4);
  reader.read_rows("t", rows, std::as_writable_bytes(std::span(out)));
  CHECK(out == values);
  CHECK_FALSE(moved());
  writer.add_rows("t", rows, std::as_bytes(std::span(values)));
  CHECK(moved());
  // A refused write (a row out of range) changes nothing.
  const std::int64_t bad[1] = {99};
  CHECK_THROWS_AS(writer.write_rows("t", bad, std::as_bytes(std::span(values).first(2))),
                  IdOutOfRange);
  CHECK_FALSE(moved());
  REQUIRE(writer.remove("t"));
  CHECK(moved());
}

}  // namespace

TEST_CASE("InMemoryStorage: writes, adds, creates and removes move a tensor's generation",
          "[storage]") {
  InMemoryStorage s;
  check_generations(s, s);
}

TEST_CASE(
    "MmapStorage: a change through one handle of a folder moves the generation every other "
    "handle sees (the counters live in the shared .locks file)",
    "[storage]") {
  const TempDir tmp;
  MmapStorage a = MmapStorage::create_dir(tmp / "shm");
  const MmapStorage b = MmapStorage::attach(tmp / "shm");
  check_generations(a, b);
}

}  // namespace test_storage_generations

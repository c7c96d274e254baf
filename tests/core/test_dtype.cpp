#include <catch2/catch.hpp>

#include "distgraph/core/dtype.hpp"

namespace test_core_dtype {

using namespace distgraph;

TEST_CASE("every dtype round-trips through its NumPy type string and its name", "[core]") {
  for (DType t : all_dtypes) {
    INFO(dtype_name(t));
    auto parsed = dtype_from_npy_descr(dtype_npy_descr(t));
    REQUIRE(parsed.has_value());
    // NumPy has no bfloat16: its words are uint16 to NumPy, and "<u2" reads as uint16.
    CHECK(*parsed == (t == DType::bfloat16 ? DType::uint16 : t));
    CHECK(dtype_from_name(dtype_name(t)) == t);
    CHECK(dtype_size(t) == static_cast<std::size_t>(dtype_npy_descr(t)[2] - '0'));
  }
}

TEST_CASE("big-endian and unknown NumPy type strings are rejected", "[core]") {
  CHECK_FALSE(dtype_from_npy_descr(">f4").has_value());
  CHECK_FALSE(dtype_from_npy_descr("<c8").has_value());
  CHECK_FALSE(dtype_from_npy_descr("O").has_value());
  CHECK(dtype_from_npy_descr(">u1") == DType::uint8);
}

TEST_CASE("require_dtype names the subject and both dtypes", "[core]") {
  try {
    require_dtype("feat.npy", DType::float64, DType::float32);
    FAIL("no throw");
  } catch (const DTypeError& e) {
    CHECK(std::string(e.what()) == "feat.npy: dtype float64; expected float32");
    CHECK(e.subject() == "feat.npy");
  }
}

}  // namespace test_core_dtype

// Fuzz loops: corrupted and truncated .npy files either load or throw distgraph::Error.
#include <catch2/catch.hpp>
#include <cstdint>
#include <exception>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "distgraph/io/npy.hpp"
#include "support/temp_dir.hpp"

namespace test_bad_input_npy_fuzz {

using namespace distgraph;
namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Reads `path` and touches every converted element; returns "" on success or on
/// distgraph::Error, else a description of the foreign exception.
std::string try_read(const fs::path& path, bool mmap) {
  try {
    const auto a = read_npy(path, {.mmap = mmap});
    std::uint64_t sum = 0;
    for (auto b : a.bytes) sum += static_cast<unsigned>(b);
    try {
      if (a.header.dtype == DType::bool_ || a.header.dtype == DType::uint8)
        sum += a.to_bool().size();
      else if (a.header.dtype == DType::float32 || a.header.dtype == DType::float64 ||
               a.header.dtype == DType::float16)
        sum += a.to_float32().size();
      else
        sum += a.to_int64().size();
    } catch (const Error&) {
    }
    (void)sum;
    return "";
  } catch (const Error&) {
    return "";
  } catch (const std::exception& e) {
    return std::string("foreign exception: ") + e.what();
  } catch (...) {
    return "foreign exception of unknown type";
  }
}

/// A small valid file: int32 [3, 4], a 64-byte header then 48 bytes of data.
std::string valid_file(const fs::path& dir) {
  std::vector<std::int32_t> v(12);
  for (int i = 0; i < 12; ++i) v[static_cast<std::size_t>(i)] = i * 1000 - 5000;
  write_npy(dir / "seed.npy", v, {3, 4});
  return read_text(dir / "seed.npy");
}

}  // namespace

TEST_CASE("randomly corrupted headers either load or throw distgraph::Error", "[bad_input]") {
  distgraph::test::TempDir tmp;
  const std::string seed = valid_file(tmp.path());
  const std::size_t header_end = read_npy(tmp / "seed.npy").header.data_offset;
  // Bytes that steer the parser into its deeper branches, not only past the first check.
  const std::string tokens = "{}()[],:'\" 0123456789-LTrueFalsedescrshape<>|fiub\n\x93\xff";
  std::mt19937 rng(20240611);
  const auto path = tmp / "fuzz.npy";
  for (int iter = 0; iter < 5000; ++iter) {
    std::string bytes = seed;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      const std::size_t at = rng() % header_end;
      switch (rng() % 3) {
        case 0:
          bytes[at] = static_cast<char>(rng() & 0xff);
          break;
        case 1:
          bytes[at] = tokens[rng() % tokens.size()];
          break;
        default:
          bytes.erase(at, 1 + rng() % 4);
          break;
      }
    }
    write_text(path, bytes);
    const std::string problem = try_read(path, iter % 2 == 0);
    INFO("iteration " << iter);
    REQUIRE(problem.empty());
    // The parser on exactly the file's bytes: any over-read would be outside the vector.
    const std::vector<char> exact(bytes.begin(), bytes.end());
    try {
      parse_npy_header(std::as_bytes(std::span(exact)), "fuzz.npy");
    } catch (const Error&) {
    }
  }
}

TEST_CASE("every truncation of a valid file either loads or throws distgraph::Error",
          "[bad_input]") {
  distgraph::test::TempDir tmp;
  const std::string seed = valid_file(tmp.path());
  const auto path = tmp / "cut.npy";
  std::mt19937 rng(7);
  for (std::size_t len = 0; len <= seed.size(); ++len) {
    write_text(path, seed.substr(0, len));
    INFO("length " << len);
    for (bool mmap : {true, false}) {
      const auto problem = try_read(path, mmap);
      REQUIRE(problem.empty());
      if (len < seed.size()) CHECK_THROWS_AS(read_npy(path, {.mmap = mmap}), FormatError);
    }
  }
  // Truncated and then corrupted: random lengths with random tails.
  for (int iter = 0; iter < 1000; ++iter) {
    std::string bytes = seed.substr(0, rng() % (seed.size() + 1));
    if (!bytes.empty()) bytes[rng() % bytes.size()] = static_cast<char>(rng() & 0xff);
    write_text(path, bytes);
    REQUIRE(try_read(path, iter % 2 == 0).empty());
  }
}

}  // namespace test_bad_input_npy_fuzz

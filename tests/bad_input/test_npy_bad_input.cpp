// Malformed .npy files: each is rejected with the right exception type, naming file and fault.
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "distgraph/io/npy.hpp"
#include "support/temp_dir.hpp"

namespace test_bad_input_npy_bad_input {

using namespace distgraph;
namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
}

/// A .npy file with a hand-written header dict, data at a multiple of 64.
std::string make_npy(int major, const std::string& dict, const std::string& data) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string dict_with(const std::string& descr, const std::string& shape,
                      const std::string& order = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
}

/// Writes `bytes` to <tmp>/<name>, reads it with and without mmap, and requires exception E
/// both times with a message naming the file and containing `fault`.
template <class E>
void require_rejected(const distgraph::test::TempDir& tmp, const std::string& name,
                      const std::string& bytes, const std::string& fault) {
  const auto path = tmp / name;
  write_text(path, bytes);
  for (bool mmap : {true, false}) {
    INFO(name << (mmap ? " (mmap)" : " (read)"));
    try {
      read_npy(path, {.mmap = mmap});
      FAIL("no exception");
    } catch (const E& e) {
      CHECK_THAT(e.what(), Catch::Contains(path.string()) && Catch::Contains(fault));
    }
  }
}

const std::string twelve_floats(48, '\0');

}  // namespace

TEST_CASE("a file cut inside its header is reported as truncated", "[bad_input]") {
  distgraph::test::TempDir tmp;
  const auto full = make_npy(1, dict_with("<f4", "(3, 4)"), twelve_floats);
  require_rejected<FormatError>(tmp, "cut_header.npy", full.substr(0, 40),
                                "truncated: header says 118 bytes of header, file has 30");
  require_rejected<FormatError>(tmp, "cut_prefix.npy", full.substr(0, 8),
                                "truncated: file has 8 bytes");
  require_rejected<FormatError>(tmp, "empty.npy", "", "truncated: file has 0 bytes");
}

TEST_CASE("a file cut inside its data says how many bytes the header promised", "[bad_input]") {
  distgraph::test::TempDir tmp;
  const auto full = make_npy(1, dict_with("<f4", "(3, 4)"), twelve_floats);
  require_rejected<FormatError>(tmp, "cut_data.npy", full.substr(0, full.size() - 5),
                                "truncated: header says 48 bytes of data, file has 43");
}

TEST_CASE("a file without the NumPy magic is rejected", "[bad_input]") {
  distgraph::test::TempDir tmp;
  auto bytes = make_npy(1, dict_with("<f4", "(3, 4)"), twelve_floats);
  bytes[1] = 'M';
  require_rejected<FormatError>(tmp, "magic.npy", bytes, "bad magic");
  require_rejected<FormatError>(tmp, "text.npy", "hello", "bad magic");
}

TEST_CASE("an unknown format version is rejected", "[bad_input]") {
  distgraph::test::TempDir tmp;
  auto bytes = make_npy(1, dict_with("<f4", "(3, 4)"), twelve_floats);
  bytes[6] = 4;
  require_rejected<FormatError>(tmp, "v4.npy", bytes, "unsupported .npy format version 4.0");
  bytes[6] = 1;
  bytes[7] = 1;
  require_rejected<FormatError>(tmp, "v11.npy", bytes, "version 1.1");
}

TEST_CASE("a header that is not a Python dict literal is rejected", "[bad_input]") {
  distgraph::test::TempDir tmp;
  require_rejected<FormatError>(
      tmp, "colon.npy",
      make_npy(1, "{'descr' '<f4', 'fortran_order': False, 'shape': (3, 4), }", twelve_floats),
      "expected ':'");
  require_rejected<FormatError>(tmp, "brace.npy", make_npy(1, "['descr', '<f4']", twelve_floats),
                                "expected '{'");
  require_rejected<FormatError>(
      tmp, "unterminated.npy",
      make_npy(1, "{'descr': '<f4, 'fortran_order': False, 'shape': (3, 4), }", twelve_floats),
      "bad .npy header");
  require_rejected<FormatError>(tmp, "trailing.npy",
                                make_npy(1, dict_with("<f4", "(3, 4)") + " junk", twelve_floats),
                                "unexpected text 'junk'");
  require_rejected<FormatError>(
      tmp, "extra_key.npy",
      make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'extra': 1, }",
               twelve_floats),
      "unexpected key 'extra'");
  require_rejected<FormatError>(
      tmp, "dup_key.npy",
      make_npy(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (12,)}",
               twelve_floats),
      "duplicate key 'descr'");
  require_rejected<FormatError>(tmp, "order.npy",
                                make_npy(1, dict_with("<f4", "(3, 4)", "0"), twelve_floats),
                                "must be True or False");
  require_rejected<FormatError>(
      tmp, "one_tuple.npy", make_npy(1, dict_with("<f4", "(12)"), twelve_floats), "trailing comma");
}

TEST_CASE("a header missing a key names the key", "[bad_input]") {
  distgraph::test::TempDir tmp;
  require_rejected<FormatError>(
      tmp, "no_shape.npy", make_npy(1, "{'descr': '<f4', 'fortran_order': False}", twelve_floats),
      "header lacks the 'shape' key");
  require_rejected<FormatError>(
      tmp, "no_descr.npy", make_npy(1, "{'fortran_order': False, 'shape': (12,)}", twelve_floats),
      "header lacks the 'descr' key");
  require_rejected<FormatError>(tmp, "no_order.npy",
                                make_npy(1, "{'descr': '<f4', 'shape': (12,)}", twelve_floats),
                                "header lacks the 'fortran_order' key");
}

TEST_CASE("a non-numeric shape entry is rejected", "[bad_input]") {
  distgraph::test::TempDir tmp;
  require_rejected<FormatError>(tmp, "word.npy",
                                make_npy(1, dict_with("<f4", "(three, 4)"), twelve_floats),
                                "'shape' entries must be non-negative integers");
  require_rejected<FormatError>(tmp, "float.npy",
                                make_npy(1, dict_with("<f4", "(3.0, 4)"), twelve_floats),
                                "'shape' entries must be non-negative integers");
  require_rejected<FormatError>(
      tmp, "list.npy", make_npy(1, dict_with("<f4", "[3, 4]"), twelve_floats), "expected '('");
}

TEST_CASE("a negative dimension is rejected naming it", "[bad_input]") {
  distgraph::test::TempDir tmp;
  require_rejected<FormatError>(tmp, "negative.npy",
                                make_npy(1, dict_with("<f4", "(-3, 4)"), twelve_floats),
                                "negative dimension -3");
}

TEST_CASE("an absurd header length is rejected without reading past the file", "[bad_input]") {
  distgraph::test::TempDir tmp;
  auto v1 = make_npy(1, dict_with("<f4", "(3, 4)"), twelve_floats);
  v1[8] = '\xff';
  v1[9] = '\xff';
  require_rejected<FormatError>(tmp, "long_v1.npy", v1, "header says 65535 bytes of header");
  auto v2 = make_npy(2, dict_with("<f4", "(3, 4)"), twelve_floats);
  for (int i = 8; i < 12; ++i) v2[static_cast<std::size_t>(i)] = '\xff';
  require_rejected<FormatError>(tmp, "long_v2.npy", v2, "header length 4294967295 bytes");
}

TEST_CASE("a shape whose element count overflows is rejected", "[bad_input]") {
  distgraph::test::TempDir tmp;
  require_rejected<FormatError>(tmp, "overflow.npy",
                                make_npy(1, dict_with("<f4", "(4294967296, 4294967296)"), ""),
                                "overflows");
  require_rejected<FormatError>(tmp, "bytes_overflow.npy",
                                make_npy(1, dict_with("<f8", "(2305843009213693952,)"), ""),
                                "overflows");
  require_rejected<FormatError>(tmp, "huge_dim.npy",
                                make_npy(1, dict_with("<f4", "(99999999999999999999,)"), ""),
                                "too large");
  require_rejected<FormatError>(tmp, "huge_data.npy",
                                make_npy(1, dict_with("<f4", "(1000000000000,)"), twelve_floats),
                                "truncated: header says 4000000000000 bytes of data, file has 48");
}

TEST_CASE("complex, object and big-endian dtypes are rejected naming the type string",
          "[bad_input]") {
  distgraph::test::TempDir tmp;
  require_rejected<DTypeError>(tmp, "complex.npy",
                               make_npy(1, dict_with("<c8", "(6,)"), twelve_floats),
                               "unsupported dtype '<c8'");
  require_rejected<DTypeError>(tmp, "object.npy",
                               make_npy(1, dict_with("|O", "(6,)"), twelve_floats),
                               "unsupported dtype '|O'");
  require_rejected<DTypeError>(tmp, "big_endian.npy",
                               make_npy(1, dict_with(">f4", "(3, 4)"), twelve_floats),
                               "big-endian dtype '>f4'");
  require_rejected<DTypeError>(
      tmp, "structured.npy",
      make_npy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (12,), }",
               twelve_floats),
      "structured dtype");
}

TEST_CASE("a Fortran-order array is rejected saying only C order is supported", "[bad_input]") {
  distgraph::test::TempDir tmp;
  require_rejected<FormatError>(tmp, "fortran.npy",
                                make_npy(1, dict_with("<f4", "(3, 4)", "True"), twelve_floats),
                                "Fortran-order (column-major) array of shape (3, 4); only C "
                                "order is supported");
}

TEST_CASE("a bool array holding a byte other than 0 or 1 is rejected when read as bool",
          "[bad_input]") {
  distgraph::test::TempDir tmp;
  const auto path = tmp / "mask.npy";
  write_text(path, make_npy(1, dict_with("|b1", "(4,)"), std::string("\x01\x00\x07\x01", 4)));
  const auto a = read_npy(path);
  CHECK_THROWS_AS(a.as<bool>(), FormatError);
  CHECK_THROWS_WITH(a.to_bool(),
                    Catch::Contains(path.string()) && Catch::Contains("value 7 at index 2"));
}

TEST_CASE("a missing .npy file throws IoError naming it", "[bad_input]") {
  distgraph::test::TempDir tmp;
  const auto path = tmp / "nothing.npy";
  for (bool mmap : {true, false}) {
    try {
      read_npy(path, {.mmap = mmap});
      FAIL("no exception");
    } catch (const IoError& e) {
      CHECK(e.path() == path.string());
      CHECK_THAT(e.what(), Catch::Contains("No such file or directory"));
    }
  }
  CHECK_THROWS_AS(read_npy(tmp.path()), IoError);
}

TEST_CASE("a header parsed from memory never reads past the span it is given", "[bad_input]") {
  // parse_npy_header sees only the first k bytes of a valid file; every k must fail cleanly.
  const auto full = make_npy(1, dict_with("<i8", "(2,)"), std::string(16, '\1'));
  const std::vector<char> copy(full.begin(), full.end());
  for (std::size_t k = 0; k < full.size(); ++k) {
    INFO("length " << k);
    const std::vector<char> cut(copy.begin(), copy.begin() + static_cast<std::ptrdiff_t>(k));
    CHECK_THROWS_AS(parse_npy_header(std::as_bytes(std::span(cut)), "cut.npy"), FormatError);
  }
  CHECK(parse_npy_header(std::as_bytes(std::span(copy)), "ok.npy").num_elements() == 2);
}

}  // namespace test_bad_input_npy_bad_input

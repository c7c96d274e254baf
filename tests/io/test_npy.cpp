// .npy reading and writing: round trips, header versions, zero-copy mapping, conversions.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "distgraph/io/npy.hpp"
#include "support/temp_dir.hpp"

namespace test_io_npy {

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

/// A .npy file with a hand-written header dict, padded so the data starts at `remainder`
/// modulo `align` (0 modulo 64 as NumPy does).
std::string make_npy(int major, const std::string& dict, const std::string& data,
                     std::size_t align = 64, std::size_t remainder = 0) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % align != remainder) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

template <class T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

/// Deterministic element bytes for `dtype`; bool gets 0/1.
std::vector<std::byte> pattern(DType dtype, std::size_t n) {
  std::vector<std::byte> out(n * dtype_size(dtype));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = dtype == DType::bool_ ? std::byte(i % 3 == 0) : std::byte((i * 37 + 11) & 0xff);
  return out;
}

/// Path of the mapping holding `p` in /proc/self/maps and its permissions, or empty.
std::pair<std::string, std::string> mapping_of(const void* p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode >> path;
    const auto dash = range.find('-');
    const auto lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const auto hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (addr >= lo && addr < hi) return {path, perms};
  }
  return {};
}

/// A python3 with NumPy ("python3" or Debian's /usr/bin/python3), or empty.
std::string python_with_numpy() {
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    const std::string cmd = std::string(py) + " -c 'import numpy' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return {};
}

}  // namespace

TEST_CASE("every dtype round-trips through write_npy and read_npy at ranks 0 to 3", "[io]") {
  distgraph::test::TempDir tmp;
  const std::vector<std::vector<std::int64_t>> shapes = {{}, {5}, {2, 3}, {2, 3, 4}, {0}, {3, 0}};
  for (DType dtype : all_dtypes) {
    for (const auto& shape : shapes) {
      std::int64_t n = 1;
      for (auto d : shape) n *= d;
      const auto data = pattern(dtype, static_cast<std::size_t>(n));
      const auto path = tmp / "a.npy";
      write_npy(path, dtype, shape, data.data());
      for (bool mmap : {true, false}) {
        INFO(dtype_name(dtype) << " rank " << shape.size() << " mmap " << mmap);
        const auto a = read_npy(path, {.mmap = mmap});
        CHECK(a.header.dtype == dtype);
        CHECK(a.header.shape == shape);
        CHECK(a.header.major_version == 1);
        CHECK(a.header.data_offset % 64 == 0);
        CHECK(a.header.num_elements() == n);
        CHECK(a.path == path.string());
        REQUIRE(a.bytes.size() == data.size());
        if (!data.empty()) CHECK(std::memcmp(a.bytes.data(), data.data(), data.size()) == 0);
      }
    }
  }
}

TEST_CASE("written headers end in a newline and match NumPy's text exactly", "[io]") {
  const std::vector<std::int64_t> shape = {3, 4};
  const auto h = npy_header_bytes(DType::float32, shape);
  CHECK(h.size() == 128);
  CHECK(h.back() == '\n');
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  CHECK(h.substr(10, dict.size()) == dict);
  CHECK(h.find_first_not_of(' ', 10 + dict.size()) == h.size() - 1);
  const std::vector<std::int64_t> one = {7};
  CHECK(npy_header_bytes(DType::bool_, one).find("'shape': (7,), }") != std::string::npos);
  CHECK(npy_header_bytes(DType::int64, {}).find("'shape': (), }") != std::string::npos);
}

TEST_CASE("typed write_npy defaults to 1-D and rejects a shape that does not fit the data",
          "[io]") {
  distgraph::test::TempDir tmp;
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 4.0f, 5.0f, 6.0f};
  write_npy(tmp / "v.npy", v);
  std::vector<std::int64_t> shape;
  auto back = read_npy_as<float>(tmp / "v.npy", &shape);
  CHECK(shape == std::vector<std::int64_t>{6});
  CHECK(std::vector<float>(back.begin(), back.end()) == v);

  write_npy(tmp / "m.npy", std::span<const float>(v), {2, 3});
  read_npy_as<float>(tmp / "m.npy", &shape);
  CHECK(shape == std::vector<std::int64_t>{2, 3});

  CHECK_THROWS_AS(write_npy(tmp / "bad.npy", v, {4, 2}), ShapeError);
  CHECK_FALSE(fs::exists(tmp / "bad.npy"));
}

TEST_CASE("as<T> rejects another dtype naming the path and both dtypes", "[io]") {
  distgraph::test::TempDir tmp;
  write_npy(tmp / "d.npy", std::vector<double>{1.0, 2.0});
  const auto a = read_npy(tmp / "d.npy");
  try {
    a.as<float>();
    FAIL("no exception");
  } catch (const DTypeError& e) {
    CHECK(std::string(e.what()) == (tmp / "d.npy").string() + ": dtype float64; expected float32");
  }
  CHECK(a.as<double>()[1] == 2.0);
}

TEST_CASE("version 2.0 and 3.0 headers are read like version 1.0", "[io]") {
  distgraph::test::TempDir tmp;
  const std::vector<std::int32_t> v = {1, -2, 3, -4, 5, -6};
  const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
  for (int major : {1, 2, 3}) {
    INFO("version " << major);
    write_text(tmp / "x.npy", make_npy(major, dict, bytes_of(v)));
    for (bool mmap : {true, false}) {
      std::vector<std::int64_t> shape;
      const auto a = read_npy(tmp / "x.npy", {.mmap = mmap});
      CHECK(a.header.major_version == major);
      CHECK(a.header.data_offset == 128);
      CHECK(a.header.shape == std::vector<std::int64_t>{2, 3});
      const auto b = a.as<std::int32_t>();
      CHECK(std::vector<std::int32_t>(b.begin(), b.end()) == v);
    }
  }
}

TEST_CASE("header dicts parse in any key order, either quote, odd spacing, no trailing comma",
          "[io]") {
  const std::vector<std::int64_t> v = {10, 20, 30};
  for (const std::string dict : {
           "{'shape': (3,), 'fortran_order': False, 'descr': '<i8'}",
           "{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (3,)}",
           "{ 'fortran_order' :False ,\t'descr':'<i8','shape' : ( 3 , ) , }",
           "{'descr': '<i8',\n 'fortran_order': False,\n 'shape': (3L,), }",
       }) {
    INFO(dict);
    const auto file = make_npy(1, dict, bytes_of(v));
    const auto h = parse_npy_header(std::as_bytes(std::span(file)), "x.npy");
    CHECK(h.dtype == DType::int64);
    CHECK(h.shape == std::vector<std::int64_t>{3});
    CHECK_FALSE(h.fortran_order);
  }
}

TEST_CASE("a Fortran-order header is accepted when its layout equals C order", "[io]") {
  const std::vector<float> v = {1, 2, 3};
  const auto file =
      make_npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 3), }", bytes_of(v));
  const auto h = parse_npy_header(std::as_bytes(std::span(file)), "x.npy");
  CHECK(h.fortran_order);
  CHECK(h.shape == std::vector<std::int64_t>{1, 3});
}

TEST_CASE("a header too long for version 1.0 is written as version 2.0 and read back", "[io]") {
  distgraph::test::TempDir tmp;
  const std::vector<std::int64_t> shape(30000, 1);
  const std::uint8_t one = 42;
  write_npy(tmp / "wide.npy", DType::uint8, shape, &one);
  const auto a = read_npy(tmp / "wide.npy");
  CHECK(a.header.major_version == 2);
  CHECK(a.header.data_offset % 64 == 0);
  CHECK(a.header.data_offset > 65535);
  CHECK(a.header.shape == shape);
  CHECK(a.as<std::uint8_t>()[0] == 42);
}

TEST_CASE("a mapped read is zero-copy and writes through the buffer never reach the file", "[io]") {
  distgraph::test::TempDir tmp;
  const auto path = tmp / "z.npy";
  std::vector<float> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  write_npy(path, v);
  const std::string before = read_text(path);

  auto buf = read_npy_as<float>(path);
  const auto [mapped_path, perms] = mapping_of(buf.data());
  CHECK(mapped_path == fs::canonical(path).string());
  CHECK(perms.substr(0, 4) == "rw-p");
  buf[0] = -1.0f;
  buf[999] = -1.0f;
  CHECK(buf[0] == -1.0f);
  CHECK(read_text(path) == before);
  CHECK(read_npy_as<float>(path)[0] == 0.0f);

  auto owned = read_npy_as<float>(path, nullptr, {.mmap = false});
  CHECK(mapping_of(owned.data()).first != mapped_path);
  CHECK(owned[999] == 999.0f);
}

TEST_CASE("data at a misaligned offset is copied into aligned memory by as<T>", "[io]") {
  distgraph::test::TempDir tmp;
  const std::vector<std::int64_t> v = {1, -1, 1LL << 40};
  // Data offset 3 (mod 8): misaligned for int64.
  const auto file =
      make_npy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", bytes_of(v), 8, 3);
  write_text(tmp / "odd.npy", file);
  const auto a = read_npy(tmp / "odd.npy");
  REQUIRE(a.header.data_offset % 8 != 0);
  const auto b = a.as<std::int64_t>();
  CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % alignof(std::int64_t) == 0);
  CHECK(std::vector<std::int64_t>(b.begin(), b.end()) == v);
  const auto c = a.to_int64();
  CHECK(c[2] == (1LL << 40));
}

TEST_CASE("to_int64 widens every integer dtype and is zero-copy for int64", "[io]") {
  distgraph::test::TempDir tmp;
  write_npy(tmp / "i64.npy", std::vector<std::int64_t>{-5, 7});
  const auto a = read_npy(tmp / "i64.npy");
  CHECK(a.to_int64().data() == reinterpret_cast<const std::int64_t*>(a.bytes.data()));

  write_npy(tmp / "i32.npy", std::vector<std::int32_t>{-5, 2147483647});
  CHECK(read_npy_int64(tmp / "i32.npy")[1] == 2147483647);
  write_npy(tmp / "i8.npy", std::vector<std::int8_t>{-128, 127});
  CHECK(read_npy_int64(tmp / "i8.npy")[0] == -128);
  write_npy(tmp / "i16.npy", std::vector<std::int16_t>{-300});
  CHECK(read_npy_int64(tmp / "i16.npy")[0] == -300);
  write_npy(tmp / "u8.npy", std::vector<std::uint8_t>{255});
  CHECK(read_npy_int64(tmp / "u8.npy")[0] == 255);
  write_npy(tmp / "u16.npy", std::vector<std::uint16_t>{65535});
  CHECK(read_npy_int64(tmp / "u16.npy")[0] == 65535);
  write_npy(tmp / "u32.npy", std::vector<std::uint32_t>{4294967295u});
  CHECK(read_npy_int64(tmp / "u32.npy")[0] == 4294967295LL);
  write_npy(tmp / "u64.npy", std::vector<std::uint64_t>{1, 1ULL << 62});
  CHECK(read_npy_int64(tmp / "u64.npy")[1] == (1LL << 62));

  write_npy(tmp / "u64big.npy", std::vector<std::uint64_t>{1ULL << 63});
  CHECK_THROWS_AS(read_npy_int64(tmp / "u64big.npy"), DTypeError);
  write_npy(tmp / "f.npy", std::vector<float>{1});
  CHECK_THROWS_WITH(read_npy_int64(tmp / "f.npy"),
                    Catch::Contains("f.npy") && Catch::Contains("dtype float32"));
}

TEST_CASE("to_float32 converts float64 and float16, including subnormals and infinities", "[io]") {
  distgraph::test::TempDir tmp;
  write_npy(tmp / "f32.npy", std::vector<float>{0.5f});
  const auto a = read_npy(tmp / "f32.npy");
  CHECK(a.to_float32().data() == reinterpret_cast<const float*>(a.bytes.data()));

  write_npy(tmp / "f64.npy", std::vector<double>{0.1, -1e10});
  const auto d = read_npy_float32(tmp / "f64.npy");
  CHECK(d[0] == 0.1f);
  CHECK(d[1] == -1e10f);

  // 1, -2, 65504 (max), 2^-24 (smallest subnormal), 2^-14 (smallest normal), +inf, -0.
  const std::vector<std::uint16_t> halves = {0x3c00, 0xc000, 0x7bff, 0x0001,
                                             0x0400, 0x7c00, 0x8000, 0x7e00};
  const std::vector<std::int64_t> shape = {static_cast<std::int64_t>(halves.size())};
  write_npy(tmp / "f16.npy", DType::float16, shape, halves.data());
  const auto h = read_npy_float32(tmp / "f16.npy");
  CHECK(h[0] == 1.0f);
  CHECK(h[1] == -2.0f);
  CHECK(h[2] == 65504.0f);
  CHECK(h[3] == std::ldexp(1.0f, -24));
  CHECK(h[4] == std::ldexp(1.0f, -14));
  CHECK(std::isinf(h[5]));
  CHECK((h[6] == 0.0f && std::signbit(h[6])));
  CHECK(std::isnan(h[7]));

  write_npy(tmp / "i.npy", std::vector<std::int32_t>{1});
  CHECK_THROWS_AS(read_npy_float32(tmp / "i.npy"), DTypeError);
}

TEST_CASE("bfloat16 is written as '<u2' with a '# bfloat16' note and read back as bfloat16",
          "[io]") {
  distgraph::test::TempDir tmp;
  const std::vector<std::int64_t> shape = {2, 3};
  const auto h = npy_header_bytes(DType::bfloat16, shape);
  const std::string dict = "{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), } # bfloat16";
  CHECK(h.substr(10, dict.size()) == dict);
  CHECK(h.back() == '\n');
  CHECK(h.size() % 64 == 0);
  // 1, -2, 0.5, +inf, NaN, the smallest subnormal.
  const std::vector<std::uint16_t> words = {0x3f80, 0xc000, 0x3f00, 0x7f80, 0x7fc0, 0x0001};
  write_npy(tmp / "bf.npy", DType::bfloat16, shape, words.data());
  for (bool mmap : {true, false}) {
    const auto a = read_npy(tmp / "bf.npy", {.mmap = mmap});
    CHECK(a.header.dtype == DType::bfloat16);
    CHECK(a.header.shape == shape);
    const auto f = a.to_float32();
    CHECK(f[0] == 1.0f);
    CHECK(f[1] == -2.0f);
    CHECK(f[2] == 0.5f);
    CHECK(std::isinf(f[3]));
    CHECK(std::isnan(f[4]));
    CHECK(f[5] == std::ldexp(1.0f, -133));
  }
  // The same words without the note are uint16, as NumPy writes them.
  write_npy(tmp / "u2.npy", DType::uint16, shape, words.data());
  CHECK(read_npy(tmp / "u2.npy").header.dtype == DType::uint16);
  // The note belongs to '<u2' only.
  write_text(tmp / "bad.npy",
             make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } # bfloat16",
                      std::string(4, '\0')));
  CHECK_THROWS_AS(read_npy(tmp / "bad.npy"), FormatError);
  CHECK_THROWS_WITH(read_npy(tmp / "bad.npy"), Catch::Matchers::Contains("bad.npy") &&
                                                   Catch::Matchers::Contains("expected '<u2'"));
  // Any other comment is still an error.
  write_text(tmp / "other.npy",
             make_npy(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (1,), } # float16",
                      std::string(2, '\0')));
  CHECK_THROWS_AS(read_npy(tmp / "other.npy"), FormatError);
}

TEST_CASE("to_bool reads bool and 0/1 uint8 masks without copying", "[io]") {
  distgraph::test::TempDir tmp;
  const std::vector<std::uint8_t> bytes = {0, 1, 1, 0};
  write_npy(tmp / "u8.npy", bytes);
  const auto a = read_npy(tmp / "u8.npy");
  const auto m = a.to_bool();
  CHECK(reinterpret_cast<const void*>(m.data()) == a.bytes.data());
  CHECK((!m[0] && m[1] && m[2] && !m[3]));

  const bool flags[] = {true, false, true};
  write_npy(tmp / "b.npy", std::span<const bool>(flags));
  const auto b = read_npy_bool(tmp / "b.npy");
  CHECK((b.size() == 3 && b[0] && !b[1] && b[2]));

  write_npy(tmp / "i.npy", std::vector<std::int64_t>{1});
  CHECK_THROWS_AS(read_npy_bool(tmp / "i.npy"), DTypeError);
}

TEST_CASE("write_npy replaces a file atomically and leaves no temporary file behind", "[io]") {
  distgraph::test::TempDir tmp;
  write_npy(tmp / "r.npy", std::vector<std::int32_t>{1, 2, 3});
  write_npy(tmp / "r.npy", std::vector<std::int32_t>{4});
  CHECK(read_npy_as<std::int32_t>(tmp / "r.npy").size() == 1);
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(tmp.path())) ++files;
  CHECK(files == 1);
}

TEST_CASE("write_npy into a missing folder throws IoError naming the file", "[io]") {
  distgraph::test::TempDir tmp;
  const auto path = tmp / "no" / "such" / "x.npy";
  CHECK_THROWS_WITH(write_npy(path, std::vector<float>{1}),
                    Catch::Contains(path.string()) && Catch::Contains("No such file"));
}

TEST_CASE("files written by write_npy load in NumPy with the same values", "[io][numpy]") {
  const std::string py = python_with_numpy();
  if (py.empty()) {
    WARN("SKIPPED: python3-numpy not available");
    return;
  }
  distgraph::test::TempDir tmp;
  // Each array holds arange(n) cast to its dtype (bool: i % 2), in the given shape.
  struct Case {
    DType dtype;
    std::vector<std::int64_t> shape;
  };
  const std::vector<Case> cases = {
      {DType::float32, {2, 3}}, {DType::float64, {4}},   {DType::int8, {2, 2, 2}},
      {DType::int16, {5}},      {DType::int32, {3, 1}},  {DType::int64, {}},
      {DType::uint8, {6}},      {DType::uint16, {1, 2}}, {DType::uint32, {3}},
      {DType::uint64, {0, 4}},  {DType::bool_, {7}},     {DType::float16, {3}}};
  std::string script = "import numpy as np, sys\nd = sys.argv[1]\n";
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const auto& [dtype, shape] = cases[c];
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    std::vector<std::byte> data(static_cast<std::size_t>(n) * dtype_size(dtype));
    for (std::int64_t i = 0; i < n; ++i) {
      auto* p = data.data() + i * static_cast<std::int64_t>(dtype_size(dtype));
      switch (dtype) {
        case DType::float32: {
          float x = static_cast<float>(i);
          std::memcpy(p, &x, 4);
          break;
        }
        case DType::float64: {
          double x = static_cast<double>(i);
          std::memcpy(p, &x, 8);
          break;
        }
        case DType::float16: {
          const std::uint16_t halves[] = {0x0000, 0x3c00, 0x4000};  // 0, 1, 2
          std::memcpy(p, &halves[i], 2);
          break;
        }
        case DType::bool_:
          *p = std::byte(i % 2);
          break;
        default:
          std::memcpy(p, &i, dtype_size(dtype));
          break;  // little-endian low bytes
      }
    }
    const std::string file = "a" + std::to_string(c) + ".npy";
    write_npy(tmp / file, dtype, shape, data.data());
    std::string shape_py = "(";
    for (auto d : shape) shape_py += std::to_string(d) + ",";
    shape_py += ")";
    const std::string np_type = dtype == DType::bool_ ? "bool" : std::string(dtype_name(dtype));
    const std::string expected =
        dtype == DType::bool_ ? "(np.arange(" + std::to_string(n) + ") % 2).astype(bool)"
                              : "np.arange(" + std::to_string(n) + ").astype(np." + np_type + ")";
    script += "a = np.load(d + '/" + file + "', allow_pickle=False)\n";
    script += "assert a.dtype == np.dtype('" + np_type + "'), ('" + file + "', a.dtype)\n";
    script += "assert a.shape == " + shape_py + ", ('" + file + "', a.shape)\n";
    script += "assert (a == " + expected + ".reshape(" + shape_py + ")).all(), '" + file + "'\n";
  }
  write_text(tmp / "check.py", script);
  const std::string cmd = py + " " + (tmp / "check.py").string() + " " + tmp.path().string();
  CHECK(std::system(cmd.c_str()) == 0);
}

TEST_CASE("bfloat16 files load in NumPy as the uint16 words they hold", "[io][numpy]") {
  const std::string py = python_with_numpy();
  if (py.empty()) {
    WARN("SKIPPED: python3-numpy not available");
    return;
  }
  distgraph::test::TempDir tmp;
  const std::vector<std::uint16_t> words = {0x3f80, 0xc000, 0x3f00, 0x7f80};
  const std::vector<std::int64_t> shape = {2, 2};
  write_npy(tmp / "bf.npy", DType::bfloat16, shape, words.data());
  // Widened by hand the NumPy way (words << 16 viewed as float32): 1, -2, 0.5, inf.
  write_text(tmp / "check.py",
             "import numpy as np, sys\n"
             "a = np.load(sys.argv[1] + '/bf.npy', allow_pickle=False)\n"
             "assert a.dtype == np.uint16 and a.shape == (2, 2), (a.dtype, a.shape)\n"
             "f = (a.astype(np.uint32) << 16).view(np.float32)\n"
             "assert f.tolist() == [[1.0, -2.0], [0.5, float('inf')]], f\n");
  const std::string cmd = py + " " + (tmp / "check.py").string() + " " + tmp.path().string();
  CHECK(std::system(cmd.c_str()) == 0);
}

TEST_CASE("files written by NumPy are read, and Fortran-order and big-endian ones rejected",
          "[io][numpy]") {
  const std::string py = python_with_numpy();
  if (py.empty()) {
    WARN("SKIPPED: python3-numpy not available");
    return;
  }
  distgraph::test::TempDir tmp;
  write_text(tmp / "make.py", R"(import numpy as np, sys
d = sys.argv[1]
np.save(d + '/f32.npy', np.arange(12, dtype=np.float32).reshape(3, 4))
np.save(d + '/i64.npy', np.arange(-3, 3, dtype=np.int64))
np.save(d + '/i32.npy', np.array([[1, 2], [3, 4]], dtype=np.int32))
np.save(d + '/b.npy', np.array([True, False, True]))
np.save(d + '/scalar.npy', np.float64(2.5))
np.save(d + '/f16.npy', np.array([0.5, -1.5, 65504, 6e-8], dtype=np.float16))
np.save(d + '/fortran.npy', np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
np.save(d + '/be.npy', np.arange(3, dtype='>f4'))
for v in (2, 3):
    with open(d + '/v%d.npy' % v, 'wb') as f:
        np.lib.format.write_array(f, np.arange(5, dtype=np.uint16), version=(v, 0))
)");
  const std::string cmd = py + " " + (tmp / "make.py").string() + " " + tmp.path().string();
  REQUIRE(std::system(cmd.c_str()) == 0);

  std::vector<std::int64_t> shape;
  const auto f = read_npy_as<float>(tmp / "f32.npy", &shape);
  CHECK(shape == std::vector<std::int64_t>{3, 4});
  CHECK(f[11] == 11.0f);
  const auto i = read_npy_as<std::int64_t>(tmp / "i64.npy");
  CHECK((i.size() == 6 && i[0] == -3 && i[5] == 2));
  CHECK(read_npy_int64(tmp / "i32.npy")[3] == 4);
  const auto b = read_npy_bool(tmp / "b.npy");
  CHECK((b[0] && !b[1] && b[2]));
  const auto s = read_npy_as<double>(tmp / "scalar.npy", &shape);
  CHECK(shape.empty());
  CHECK(s[0] == 2.5);
  const auto h = read_npy_float32(tmp / "f16.npy");
  CHECK(h[0] == 0.5f);
  CHECK(h[1] == -1.5f);
  CHECK(h[2] == 65504.0f);
  CHECK(h[3] == Approx(5.96e-8).epsilon(0.01));  // a float16 subnormal
  for (int v : {2, 3}) {
    const auto a = read_npy(tmp / ("v" + std::to_string(v) + ".npy"));
    CHECK(a.header.major_version == v);
    CHECK(a.as<std::uint16_t>()[4] == 4);
  }
  CHECK_THROWS_WITH(read_npy(tmp / "fortran.npy"),
                    Catch::Contains("fortran.npy") && Catch::Contains("only C order"));
  CHECK_THROWS_AS(read_npy(tmp / "fortran.npy"), FormatError);
  CHECK_THROWS_WITH(read_npy(tmp / "be.npy"),
                    Catch::Contains("be.npy") && Catch::Contains("'>f4'"));
  CHECK_THROWS_AS(read_npy(tmp / "be.npy"), DTypeError);
}

}  // namespace test_io_npy

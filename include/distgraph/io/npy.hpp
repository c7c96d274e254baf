// NumPy .npy arrays: strict header parsing, zero-copy mmap reads, converting reads, atomic writes.
#pragma once

#include <algorithm>
#include <bit>
#include <cctype>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/dtype.hpp"
#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/core/half.hpp"
#include "distgraph/io/mapped_file.hpp"
#include "distgraph/io/posix_file.hpp"

namespace distgraph {

/// Largest header dict accepted when reading, in bytes. NumPy writes well under 1 KiB for
/// any plain dtype; the cap bounds the parser's work (and the shape vector) on garbage.
inline constexpr std::size_t npy_max_header_bytes = std::size_t{1} << 20;

/// The note after the header dict that marks "<u2" data as bfloat16 (NumPy has no
/// bfloat16; Python reads the note as a comment, so numpy.load sees uint16).
inline constexpr std::string_view npy_bfloat16_note = "# bfloat16";

/// The parsed header of a `.npy` file. Only C-order, little-endian plain dtypes get here.
struct NpyHeader {
  /// bfloat16 only for "<u2" data followed by npy_bfloat16_note; plain "<u2" is uint16.
  DType dtype = DType::float32;
  std::vector<std::int64_t> shape;
  /// True only for Fortran-order files whose layout equals C order (at most one
  /// dimension above 1); other Fortran-order files are rejected.
  bool fortran_order = false;
  int major_version = 1;
  /// Offset of the first data byte from the start of the file.
  std::size_t data_offset = 0;

  /// Product of the shape (1 for rank 0). The parser guarantees it does not overflow.
  std::int64_t num_elements() const noexcept {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  std::size_t data_bytes() const noexcept {
    return static_cast<std::size_t>(num_elements()) * dtype_size(dtype);
  }
};

namespace detail {

/// `s` with non-printable bytes as \xNN, cut to `max_chars`, for error messages.
inline std::string printable(std::string_view s, std::size_t max_chars = 64) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

/// Python tuple syntax: "()", "(3,)", "(2, 3)"; long shapes are cut after 8 entries.
inline std::string shape_string(std::span<const std::int64_t> shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i == 8) {
      s += ", ... " + std::to_string(shape.size() - 8) + " more";
      break;
    }
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

/// Element count of `shape`, or nullopt if an entry is negative or the byte size of
/// `count * item_bytes` would overflow int64.
inline std::optional<std::int64_t> checked_num_elements(std::span<const std::int64_t> shape,
                                                        std::size_t item_bytes) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<std::int64_t>(item_bytes), &bytes)) return std::nullopt;
  return n;
}

/// Where the header dict lies: after the magic, version and length field.
struct NpyPrefix {
  int major_version = 1;
  std::size_t prefix_bytes = 10;
  std::size_t header_bytes = 0;
};

inline constexpr char npy_magic[] = "\x93NUMPY";
inline constexpr std::size_t npy_magic_bytes = 6;

/// Checks magic, version and header length against `file_size` (of which `head` holds
/// the first bytes: at least min(file_size, 12)). Throws FormatError naming `path`.
inline NpyPrefix parse_npy_prefix(std::span<const std::byte> head, std::uint64_t file_size,
                                  const std::string& path) {
  auto byte_at = [&](std::size_t i) { return static_cast<unsigned char>(head[i]); };
  const std::size_t have = std::min<std::size_t>(head.size(), npy_magic_bytes);
  for (std::size_t i = 0; i < have; ++i)
    if (byte_at(i) != static_cast<unsigned char>(npy_magic[i]))
      throw FormatError(path, "not a .npy file: bad magic; expected \\x93NUMPY");
  if (file_size < 10)
    throw FormatError(path, "truncated: file has " + std::to_string(file_size) +
                                " bytes; a .npy header needs at least 10");
  NpyPrefix p;
  p.major_version = byte_at(6);
  const int minor = byte_at(7);
  if (!(p.major_version >= 1 && p.major_version <= 3) || minor != 0)
    throw FormatError(path, "unsupported .npy format version " + std::to_string(p.major_version) +
                                "." + std::to_string(minor) + "; expected 1.0, 2.0 or 3.0");
  if (p.major_version == 1) {
    p.prefix_bytes = 10;
    p.header_bytes = byte_at(8) | (std::size_t{byte_at(9)} << 8);
  } else {
    if (file_size < 12)
      throw FormatError(path, "truncated: file has " + std::to_string(file_size) +
                                  " bytes; a version " + std::to_string(p.major_version) +
                                  ".0 header needs at least 12");
    p.prefix_bytes = 12;
    p.header_bytes = byte_at(8) | (std::size_t{byte_at(9)} << 8) |
                     (std::size_t{byte_at(10)} << 16) | (std::size_t{byte_at(11)} << 24);
  }
  if (p.header_bytes > npy_max_header_bytes)
    throw FormatError(path, "header length " + std::to_string(p.header_bytes) +
                                " bytes exceeds the limit; expected at most " +
                                std::to_string(npy_max_header_bytes));
  if (p.prefix_bytes + p.header_bytes > file_size)
    throw FormatError(path, "truncated: header says " + std::to_string(p.header_bytes) +
                                " bytes of header, file has " +
                                std::to_string(file_size - p.prefix_bytes));
  return p;
}

/// Recursive-descent parser for the header's Python dict literal. It accepts exactly the
/// keys 'descr', 'fortran_order' and 'shape' in any order, with Python whitespace, either
/// quote, a trailing comma, and after the closing brace nothing but whitespace and
/// at most npy_bfloat16_note.
class NpyDictParser {
 public:
  NpyDictParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  struct Result {
    std::string descr;
    bool fortran_order = false;
    std::vector<std::int64_t> shape;
    bool bfloat16_note = false;  ///< the dict is followed by npy_bfloat16_note
  };

  Result parse() {
    Result r;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{', "at the start of the header dict");
    if (!eat('}')) {
      while (true) {
        const std::string_view key = string_literal("a dict key");
        expect(':', "after key '" + printable(key) + "'");
        if (key == "descr") {
          if (have_descr) fail("duplicate key 'descr'");
          skip_ws();
          if (i_ < s_.size() && s_[i_] == '[')
            throw DTypeError(path_, "structured dtype " + printable(s_.substr(i_), 40) +
                                        " is not supported; expected a plain bool, integer "
                                        "or float type");
          r.descr = std::string(string_literal("the 'descr' value"));
          have_descr = true;
        } else if (key == "fortran_order") {
          if (have_order) fail("duplicate key 'fortran_order'");
          r.fortran_order = python_bool();
          have_order = true;
        } else if (key == "shape") {
          if (have_shape) fail("duplicate key 'shape'");
          r.shape = shape_tuple();
          have_shape = true;
        } else {
          fail("unexpected key '" + printable(key) +
               "'; expected only 'descr', 'fortran_order' and 'shape'");
        }
        if (eat(',')) {
          if (eat('}')) break;
          continue;
        }
        expect('}', "or ',' after the value of '" + std::string(key) + "'");
        break;
      }
    }
    skip_ws();
    if (s_.substr(i_).starts_with(npy_bfloat16_note)) {
      i_ += npy_bfloat16_note.size();
      r.bfloat16_note = true;
      skip_ws();
    }
    if (i_ != s_.size()) {
      std::string_view rest = s_.substr(i_);
      while (is_ws(rest.back())) rest.remove_suffix(1);
      fail("unexpected text '" + printable(rest, 20) + "' after the header dict");
    }
    if (!have_descr) fail("header lacks the 'descr' key");
    if (!have_order) fail("header lacks the 'fortran_order' key");
    if (!have_shape) fail("header lacks the 'shape' key");
    return r;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(path_,
                      "bad .npy header: " + what + " (header offset " + std::to_string(i_) + ")");
  }
  static bool is_ws(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  }
  static bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
  void skip_ws() noexcept {
    while (i_ < s_.size() && is_ws(s_[i_])) ++i_;
  }
  bool eat(char c) noexcept {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c, const std::string& where) {
    if (!eat(c)) fail(std::string("expected '") + c + "' " + where + next_token());
  }
  std::string next_token() const {
    if (i_ >= s_.size()) return ", found the end of the header";
    return ", found '" + printable(s_.substr(i_, 12), 12) + "'";
  }
  std::string_view string_literal(const char* what) {
    skip_ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"'))
      fail(std::string("expected a quoted string as ") + what + next_token());
    const char quote = s_[i_++];
    const std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] != quote) {
      if (s_[i_] == '\\') fail("escape sequences in strings are not supported");
      if (s_[i_] == '\n') fail("unterminated string");
      ++i_;
    }
    if (i_ >= s_.size()) fail("unterminated string");
    return s_.substr(start, i_++ - start);
  }
  bool python_bool() {
    skip_ws();
    const std::string_view rest = s_.substr(i_);
    for (auto [word, value] :
         {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}}) {
      if (rest.starts_with(word)) {
        const std::size_t end = i_ + word.size();
        if (end < s_.size() &&
            (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_'))
          break;
        i_ = end;
        return value;
      }
    }
    fail("'fortran_order' must be True or False" + next_token());
  }
  std::vector<std::int64_t> shape_tuple() {
    expect('(', "to open the 'shape' tuple");
    std::vector<std::int64_t> dims;
    if (eat(')')) return dims;
    while (true) {
      dims.push_back(dimension());
      if (eat(',')) {
        if (eat(')')) break;
        continue;
      }
      if (eat(')')) {
        // Python reads "(3)" as the int 3, which NumPy rejects as a shape.
        if (dims.size() == 1) fail("a 1-element shape needs a trailing comma, as in (3,)");
        break;
      }
      fail("expected ',' or ')' in 'shape'" + next_token());
    }
    return dims;
  }
  std::int64_t dimension() {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == '-') {
      std::size_t j = i_ + 1;
      while (j < s_.size() && is_digit(s_[j]) && j - i_ < 24) ++j;
      fail("negative dimension " + printable(s_.substr(i_, j - i_)) +
           " in 'shape'; expected non-negative integers");
    }
    if (i_ >= s_.size() || !is_digit(s_[i_]))
      fail("'shape' entries must be non-negative integers" + next_token());
    std::int64_t v = 0;
    const std::size_t start = i_;
    while (i_ < s_.size() && is_digit(s_[i_])) {
      const int d = s_[i_] - '0';
      if (v > (std::numeric_limits<std::int64_t>::max() - d) / 10)
        fail("dimension " + printable(s_.substr(start, 24), 24) + " is too large");
      v = v * 10 + d;
      ++i_;
    }
    // Python 2 NumPy wrote long integers with an 'L' suffix.
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;
    if (i_ < s_.size() &&
        (std::isalpha(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '.'))
      fail("'shape' entries must be non-negative integers" + next_token());
    return v;
  }

  std::string_view s_;
  const std::string& path_;
  std::size_t i_ = 0;
};

/// Parses the dict of a file whose prefix is `prefix`; `dict` is the header text.
inline NpyHeader parse_npy_dict(std::string_view dict, const NpyPrefix& prefix,
                                std::uint64_t file_size, const std::string& path) {
  auto r = NpyDictParser(dict, path).parse();
  auto dtype = dtype_from_npy_descr(r.descr);
  if (r.bfloat16_note) {
    if (dtype != DType::uint16)
      throw FormatError(path, "bad .npy header: '" + std::string(npy_bfloat16_note) +
                                  "' after descr '" + printable(r.descr) + "'; expected '<u2'");
    dtype = DType::bfloat16;
  }
  if (!dtype) {
    const bool big_endian = !r.descr.empty() && r.descr[0] == '>';
    throw DTypeError(path, std::string(big_endian ? "big-endian " : "unsupported ") + "dtype '" +
                               printable(r.descr) +
                               "'; expected a little-endian bool, integer or float type "
                               "('|b1', '<i8', '<f4', ...)");
  }
  if (r.fortran_order &&
      std::count_if(r.shape.begin(), r.shape.end(), [](std::int64_t d) { return d > 1; }) > 1)
    throw FormatError(path, "Fortran-order (column-major) array of shape " + shape_string(r.shape) +
                                "; only C order is supported");
  const auto n = checked_num_elements(r.shape, dtype_size(*dtype));
  if (!n)
    throw FormatError(path, "shape " + shape_string(r.shape) + " of " +
                                std::string(dtype_name(*dtype)) +
                                " overflows; expected at most 2^63 bytes of data");
  NpyHeader h;
  h.dtype = *dtype;
  h.shape = std::move(r.shape);
  h.fortran_order = r.fortran_order;
  h.major_version = prefix.major_version;
  h.data_offset = prefix.prefix_bytes + prefix.header_bytes;
  const std::uint64_t need = static_cast<std::uint64_t>(*n) * dtype_size(*dtype);
  const std::uint64_t have = file_size - h.data_offset;
  if (need > have)
    throw FormatError(path, "truncated: header says " + std::to_string(need) +
                                " bytes of data, file has " + std::to_string(have));
  return h;
}

/// Index of the first byte other than 0 and 1, or npos.
inline std::size_t find_non_boolean(std::span<const std::byte> bytes) noexcept {
  constexpr std::size_t block = 4096;
  for (std::size_t b = 0; b < bytes.size(); b += block) {
    const std::size_t e = std::min(bytes.size(), b + block);
    unsigned acc = 0;
    for (std::size_t i = b; i < e; ++i) acc |= static_cast<unsigned>(bytes[i]);
    if (acc > 1)
      for (std::size_t i = b; i < e; ++i)
        if (static_cast<unsigned>(bytes[i]) > 1) return i;
  }
  return std::string::npos;
}

}  // namespace detail

/// Parses and validates the header of the `.npy` file whose bytes are `file_bytes`
/// (versions 1.0, 2.0 and 3.0). Checks magic, version, header length, the dict literal,
/// dtype, C order, shape overflow and that the data fits in the file. Never reads
/// outside `file_bytes`. Throws FormatError or DTypeError whose text starts with `path`.
inline NpyHeader parse_npy_header(std::span<const std::byte> file_bytes, const std::string& path) {
  const auto prefix = detail::parse_npy_prefix(file_bytes, file_bytes.size(), path);
  const std::string_view dict(
      reinterpret_cast<const char*>(file_bytes.data()) + prefix.prefix_bytes, prefix.header_bytes);
  return detail::parse_npy_dict(dict, prefix, file_bytes.size(), path);
}

/// An array read from a `.npy` file: its header and its data bytes, which view the file's
/// mapping (or an owned copy). Copies share the data.
struct NpyArray {
  NpyHeader header;
  Buffer<std::byte> bytes;
  std::string path;

  /// The data as T without converting. Zero-copy when the data is aligned for T (always
  /// for files NumPy or write_npy wrote); otherwise an owned copy. bool data is checked to
  /// hold only 0 and 1. Throws DTypeError "<path>: dtype float64; expected float32" when
  /// T does not match the stored dtype, FormatError for a non-0/1 bool byte.
  template <class T>
  Buffer<T> as() const {
    static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>);
    require_dtype(path, header.dtype, dtype_of<T>);
    if constexpr (std::is_same_v<T, bool>) check_boolean();
    return view_as<T>();
  }

  /// Integer data widened to int64: int64 zero-copy; int8/16/32, uint8/16/32 converted;
  /// uint64 converted when every value fits. Throws DTypeError for bool, float and
  /// uint64 values above INT64_MAX.
  Buffer<std::int64_t> to_int64() const {
    switch (header.dtype) {
      case DType::int64:
        return as<std::int64_t>();
      case DType::int32:
        return widen<std::int32_t, std::int64_t>();
      case DType::int16:
        return widen<std::int16_t, std::int64_t>();
      case DType::int8:
        return widen<std::int8_t, std::int64_t>();
      case DType::uint32:
        return widen<std::uint32_t, std::int64_t>();
      case DType::uint16:
        return widen<std::uint16_t, std::int64_t>();
      case DType::uint8:
        return widen<std::uint8_t, std::int64_t>();
      case DType::uint64: {
        const auto src = as<std::uint64_t>();
        for (auto v : src)
          if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            throw DTypeError(path, "dtype uint64 holds " + std::to_string(v) +
                                       ", which does not fit; expected int64 values");
        return widen<std::uint64_t, std::int64_t>();
      }
      default:
        throw DTypeError(path, "dtype " + std::string(dtype_name(header.dtype)) +
                                   "; expected an integer dtype (int64, int32, ...)");
    }
  }

  /// Float data as float32: float32 zero-copy; float64 rounded to nearest; float16 and
  /// bfloat16 widened exactly. Throws DTypeError for other dtypes.
  Buffer<float> to_float32() const {
    switch (header.dtype) {
      case DType::float32:
        return as<float>();
      case DType::float64:
        return widen<double, float>();
      case DType::float16:
      case DType::bfloat16: {
        std::vector<float> out(static_cast<std::size_t>(header.num_elements()));
        convert_to_float32(header.dtype, bytes.span(), out);
        return Buffer<float>(std::move(out));
      }
      default:
        throw DTypeError(path, "dtype " + std::string(dtype_name(header.dtype)) +
                                   "; expected float32, float64, float16 or bfloat16");
    }
  }

  /// A mask: bool or uint8 data whose bytes are all 0 or 1, zero-copy. Throws DTypeError
  /// for other dtypes and FormatError naming the first bad value and its index.
  Buffer<bool> to_bool() const {
    static_assert(sizeof(bool) == 1);
    if (header.dtype != DType::bool_ && header.dtype != DType::uint8)
      throw DTypeError(path, "dtype " + std::string(dtype_name(header.dtype)) +
                                 "; expected bool or uint8 (0/1)");
    check_boolean();
    return Buffer<bool>(
        bytes.owner(), reinterpret_cast<bool*>(const_cast<std::byte*>(bytes.data())), bytes.size());
  }

 private:
  /// The data bytes as T, without checking the dtype (see as<T>).
  template <class T>
  Buffer<T> view_as() const {
    const auto n = static_cast<std::size_t>(header.num_elements());
    auto* p = const_cast<std::byte*>(bytes.data());
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0)
      return Buffer<T>(bytes.owner(), reinterpret_cast<T*>(p), n);
    // shared_ptr<T[]>, not std::vector: vector<bool> has no contiguous data().
    auto copy = std::make_shared<T[]>(n);
    if (n > 0) std::memcpy(copy.get(), p, n * sizeof(T));
    return Buffer<T>(copy, copy.get(), n);
  }
  template <class From, class To>
  Buffer<To> widen() const {
    // as<From>() aligns the data (copying only for a misaligned file) before converting.
    const auto src = as<From>();
    std::vector<To> out(src.size());
    for (std::size_t i = 0; i < src.size(); ++i) out[i] = static_cast<To>(src[i]);
    return Buffer<To>(std::move(out));
  }
  void check_boolean() const {
    const std::size_t bad = detail::find_non_boolean(bytes.span());
    if (bad != std::string::npos)
      throw FormatError(path, "value " + std::to_string(static_cast<unsigned>(bytes[bad])) +
                                  " at index " + std::to_string(bad) +
                                  " in a mask; expected only 0 and 1");
  }
};

/// How read_npy gets the data.
struct NpyReadOptions {
  /// Map the file (zero-copy, pages loaded on first touch) instead of reading it into
  /// owned memory.
  bool mmap = true;
};

/// Reads a `.npy` file. Mapped by default: the returned bytes view the file's private
/// mapping, which stays alive as long as any Buffer made from it. Throws IoError (missing,
/// unreadable), FormatError (malformed, truncated, Fortran order), DTypeError
/// (unsupported dtype), each naming the path. Thread-safe.
inline NpyArray read_npy(const std::filesystem::path& path, NpyReadOptions options = {}) {
  const std::string name = path.string();
  NpyArray a;
  a.path = name;
  if (options.mmap) {
    MappedFile file(path);
    a.header = parse_npy_header(file.bytes(), name);
    a.bytes =
        Buffer<std::byte>(file.owner(), file.data() + a.header.data_offset, a.header.data_bytes());
    return a;
  }
  auto [fd, file_size] = detail::open_regular_file(path);
  std::byte lead[12] = {};
  const auto lead_bytes = static_cast<std::size_t>(std::min<std::uint64_t>(file_size, 12));
  detail::pread_all(fd.get(), {lead, lead_bytes}, 0, name);
  const auto prefix = detail::parse_npy_prefix({lead, lead_bytes}, file_size, name);
  // Both lengths below were checked against the file size (and the header cap) first.
  std::string dict(prefix.header_bytes, '\0');
  detail::pread_all(fd.get(), std::as_writable_bytes(std::span(dict)), prefix.prefix_bytes, name);
  a.header = detail::parse_npy_dict(dict, prefix, file_size, name);
  // 8-byte words align the data for every dtype.
  const std::size_t n_bytes = a.header.data_bytes();
  auto words = std::make_shared<std::vector<std::uint64_t>>((n_bytes + 7) / 8);
  auto* data = reinterpret_cast<std::byte*>(words->data());
  detail::pread_all(fd.get(), {data, n_bytes}, a.header.data_offset, name);
  a.bytes = Buffer<std::byte>(std::move(words), data, n_bytes);
  return a;
}

/// Reads a `.npy` file as T (exact dtype match, see NpyArray::as); stores its shape in
/// `*shape_out` when given. Throws as read_npy and NpyArray::as.
template <class T>
Buffer<T> read_npy_as(const std::filesystem::path& path,
                      std::vector<std::int64_t>* shape_out = nullptr, NpyReadOptions options = {}) {
  auto a = read_npy(path, options);
  if (shape_out != nullptr) *shape_out = a.header.shape;
  return a.template as<T>();
}

/// Reads an integer `.npy` file as int64 (see NpyArray::to_int64).
inline Buffer<std::int64_t> read_npy_int64(const std::filesystem::path& path,
                                           std::vector<std::int64_t>* shape_out = nullptr,
                                           NpyReadOptions options = {}) {
  auto a = read_npy(path, options);
  if (shape_out != nullptr) *shape_out = a.header.shape;
  return a.to_int64();
}

/// Reads a float `.npy` file as float32 (see NpyArray::to_float32).
inline Buffer<float> read_npy_float32(const std::filesystem::path& path,
                                      std::vector<std::int64_t>* shape_out = nullptr,
                                      NpyReadOptions options = {}) {
  auto a = read_npy(path, options);
  if (shape_out != nullptr) *shape_out = a.header.shape;
  return a.to_float32();
}

/// Reads a bool or 0/1 uint8 `.npy` file as bool (see NpyArray::to_bool).
inline Buffer<bool> read_npy_bool(const std::filesystem::path& path,
                                  std::vector<std::int64_t>* shape_out = nullptr,
                                  NpyReadOptions options = {}) {
  auto a = read_npy(path, options);
  if (shape_out != nullptr) *shape_out = a.header.shape;
  return a.to_bool();
}

/// The bytes a `.npy` file of this dtype and shape starts with: magic, version, length and
/// the dict, padded with spaces and a final '\n' so the data starts at a multiple of 64
/// (NumPy's rule). bfloat16 is written as "<u2" with npy_bfloat16_note after the dict,
/// which this reader turns back into bfloat16. Version 1.0 when the header fits 65535 bytes,
/// else 2.0. Throws ShapeError naming `subject` for a negative or overflowing shape.
inline std::string npy_header_bytes(DType dtype, std::span<const std::int64_t> shape,
                                    const std::string& subject = "npy header") {
  if (!detail::checked_num_elements(shape, dtype_size(dtype)))
    throw ShapeError(subject, "shape " + detail::shape_string(shape) +
                                  " has negative or overflowing dimensions; expected "
                                  "non-negative sizes whose product fits in 2^63 bytes");
  std::string dict =
      "{'descr': '" + std::string(dtype_npy_descr(dtype)) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) dict += ", ";
    dict += std::to_string(shape[i]);
  }
  dict += shape.size() == 1 ? ",), }" : "), }";
  if (dtype == DType::bfloat16) dict += " " + std::string(npy_bfloat16_note);
  constexpr std::size_t align = 64;
  const bool v1 = (10 + dict.size() + 1 + align - 1) / align * align - 10 <= 0xffff;
  const std::size_t prefix = v1 ? 10 : 12;
  const std::size_t total = (prefix + dict.size() + 1 + align - 1) / align * align;
  const std::size_t header_len = total - prefix;
  std::string out(detail::npy_magic, detail::npy_magic_bytes);
  out += static_cast<char>(v1 ? 1 : 2);
  out += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(total - out.size() - 1, ' ');
  out += '\n';
  return out;
}

/// Writes `data` (row-major, num_elements(shape) elements of `dtype`; may be null when
/// that is 0) as a `.npy` file NumPy can read. Atomic: readers see the old file or the
/// complete new one. Throws ShapeError for a bad shape and IoError naming `path` when any
/// write, fsync, close or rename fails.
inline void write_npy(const std::filesystem::path& path, DType dtype,
                      std::span<const std::int64_t> shape, const void* data) {
  const std::string header = npy_header_bytes(dtype, shape, path.string());
  const auto n = static_cast<std::size_t>(*detail::checked_num_elements(shape, dtype_size(dtype)));
  write_file_durably(
      path, {std::as_bytes(std::span(header)),
             std::span(static_cast<const std::byte*>(data), n * dtype_size(dtype))});
}

/// Writes `data` with `shape` (empty: 1-D of data.size(); use the DType overload for a
/// rank-0 array). Throws ShapeError when the shape does not hold data.size() elements,
/// IoError as above.
template <class T>
void write_npy(const std::filesystem::path& path, std::span<const T> data,
               std::vector<std::int64_t> shape = {}) {
  if (shape.empty()) shape.push_back(static_cast<std::int64_t>(data.size()));
  const auto n = detail::checked_num_elements(shape, sizeof(T));
  if (!n || static_cast<std::size_t>(*n) != data.size())
    throw ShapeError(path.string(), "shape " + detail::shape_string(shape) + " does not hold " +
                                        std::to_string(data.size()) + " elements");
  write_npy(path, dtype_of<T>, shape, data.data());
}

/// Writes a contiguous range (std::vector, Buffer, array) like the span overload.
template <std::ranges::contiguous_range R>
requires(!std::same_as<std::remove_cvref_t<R>,
                       std::span<const std::ranges::range_value_t<
                           R>>>) void write_npy(const std::filesystem::path& path, const R& data,
                                                std::vector<std::int64_t> shape = {}) {
  using T = std::ranges::range_value_t<R>;
  write_npy<T>(path, std::span<const T>(std::ranges::data(data), std::ranges::size(data)),
               std::move(shape));
}

}  // namespace distgraph

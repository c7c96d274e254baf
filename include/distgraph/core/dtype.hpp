// Element types of tensors and arrays, with their sizes, names and NumPy type strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "distgraph/core/error.hpp"

namespace distgraph {

/// Element type of a tensor or `.npy` array. float16 (IEEE binary16) and bfloat16 (the
/// high half of a float32) are stored as raw 16-bit words; core/half.hpp converts them.
/// The numeric values cross the wire (docs/WIRE.md): new types go at the end.
enum class DType : std::uint8_t {
  float32,
  float64,
  float16,
  int8,
  int16,
  int32,
  int64,
  uint8,
  uint16,
  uint32,
  uint64,
  bool_,
  bfloat16,
};

inline constexpr DType all_dtypes[] = {DType::float32, DType::float64, DType::float16, DType::int8,
                                       DType::int16,   DType::int32,   DType::int64,   DType::uint8,
                                       DType::uint16,  DType::uint32,  DType::uint64,  DType::bool_,
                                       DType::bfloat16};

/// Bytes per element.
constexpr std::size_t dtype_size(DType t) noexcept {
  switch (t) {
    case DType::float64:
    case DType::int64:
    case DType::uint64:
      return 8;
    case DType::float32:
    case DType::int32:
    case DType::uint32:
      return 4;
    case DType::float16:
    case DType::bfloat16:
    case DType::int16:
    case DType::uint16:
      return 2;
    case DType::int8:
    case DType::uint8:
    case DType::bool_:
      return 1;
  }
  return 0;
}

/// Lower-case name as NumPy prints it ("float32", "bool").
constexpr std::string_view dtype_name(DType t) noexcept {
  switch (t) {
    case DType::float32:
      return "float32";
    case DType::float64:
      return "float64";
    case DType::float16:
      return "float16";
    case DType::int8:
      return "int8";
    case DType::int16:
      return "int16";
    case DType::int32:
      return "int32";
    case DType::int64:
      return "int64";
    case DType::uint8:
      return "uint8";
    case DType::uint16:
      return "uint16";
    case DType::uint32:
      return "uint32";
    case DType::uint64:
      return "uint64";
    case DType::bool_:
      return "bool";
    case DType::bfloat16:
      return "bfloat16";
  }
  return "?";
}

/// Little-endian NumPy type string ("<f4", "|b1"). NumPy has no bfloat16: its words are
/// written as uint16 ("<u2"), and whatever reads the file learns the dtype elsewhere (a
/// partition config, the header's `# bfloat16` note; docs/FORMATS.md).
constexpr std::string_view dtype_npy_descr(DType t) noexcept {
  switch (t) {
    case DType::float32:
      return "<f4";
    case DType::float64:
      return "<f8";
    case DType::float16:
      return "<f2";
    case DType::int8:
      return "|i1";
    case DType::int16:
      return "<i2";
    case DType::int32:
      return "<i4";
    case DType::int64:
      return "<i8";
    case DType::uint8:
      return "|u1";
    case DType::uint16:
      return "<u2";
    case DType::uint32:
      return "<u4";
    case DType::uint64:
      return "<u8";
    case DType::bool_:
      return "|b1";
    case DType::bfloat16:
      return "<u2";
  }
  return "?";
}

/// Parses a NumPy type string; accepts '<', '|' and, for one-byte types, '='.
/// Returns nullopt for big-endian or unsupported types (the caller names the file).
/// "<u2" is uint16, never bfloat16 (see dtype_npy_descr).
inline std::optional<DType> dtype_from_npy_descr(std::string_view s) noexcept {
  if (s.size() < 3) return std::nullopt;
  const char order = s[0];
  const std::string_view code = s.substr(1);
  const bool one_byte = code == "i1" || code == "u1" || code == "b1";
  if (!(order == '<' || order == '|' || (order == '=' && one_byte) || (order == '>' && one_byte)))
    return std::nullopt;
  for (DType t : all_dtypes)
    if (t != DType::bfloat16 && dtype_npy_descr(t).substr(1) == code) return t;
  return std::nullopt;
}

/// Parses a dtype name ("float32"); nullopt if unknown.
inline std::optional<DType> dtype_from_name(std::string_view s) noexcept {
  for (DType t : all_dtypes)
    if (dtype_name(t) == s) return t;
  return std::nullopt;
}

template <class T>
struct dtype_of_t;
template <>
struct dtype_of_t<float> {
  static constexpr DType value = DType::float32;
};
template <>
struct dtype_of_t<double> {
  static constexpr DType value = DType::float64;
};
template <>
struct dtype_of_t<std::int8_t> {
  static constexpr DType value = DType::int8;
};
template <>
struct dtype_of_t<std::int16_t> {
  static constexpr DType value = DType::int16;
};
template <>
struct dtype_of_t<std::int32_t> {
  static constexpr DType value = DType::int32;
};
template <>
struct dtype_of_t<std::int64_t> {
  static constexpr DType value = DType::int64;
};
template <>
struct dtype_of_t<std::uint8_t> {
  static constexpr DType value = DType::uint8;
};
template <>
struct dtype_of_t<std::uint16_t> {
  static constexpr DType value = DType::uint16;
};
template <>
struct dtype_of_t<std::uint32_t> {
  static constexpr DType value = DType::uint32;
};
template <>
struct dtype_of_t<std::uint64_t> {
  static constexpr DType value = DType::uint64;
};
template <>
struct dtype_of_t<bool> {
  static constexpr DType value = DType::bool_;
};

/// The DType of C++ type T (bool is one byte, as in NumPy).
template <class T>
inline constexpr DType dtype_of = dtype_of_t<std::remove_cv_t<T>>::value;

/// Throws DTypeError unless `actual == expected`, naming `subject`.
inline void require_dtype(const std::string& subject, DType actual, DType expected) {
  if (actual != expected)
    throw DTypeError(subject, "dtype " + std::string(dtype_name(actual)) + "; expected " +
                                  std::string(dtype_name(expected)));
}

}  // namespace distgraph

// HeadWriter and HeadReader: little-endian scalars and length-prefixed strings in a message
// head or any other length-checked byte block (a sampler's parameters, for one).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"

namespace distgraph {

/// Appends little-endian scalars and length-prefixed strings to a message head.
class HeadWriter {
 public:
  template <class T>
  HeadWriter& put(T v) {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>);
    static_assert(std::endian::native == std::endian::little, "big-endian hosts unsupported");
    const auto at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
    return *this;
  }
  HeadWriter& put_string(std::string_view s) {
    put(static_cast<std::uint32_t>(s.size()));
    const auto at = bytes_.size();
    bytes_.resize(at + s.size());
    if (!s.empty()) std::memcpy(bytes_.data() + at, s.data(), s.size());
    return *this;
  }
  /// A length-prefixed block of bytes (u32 length, then the bytes).
  HeadWriter& put_bytes(std::span<const std::byte> b) {
    put(static_cast<std::uint32_t>(b.size()));
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

/// Reads what HeadWriter wrote, checking every length against the bytes present. A
/// short or malformed head throws ProtocolError naming `subject` (the message type).
class HeadReader {
 public:
  HeadReader(std::span<const std::byte> bytes, std::string subject)
      : bytes_(bytes), subject_(std::move(subject)) {}

  template <class T>
  T get() {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>);
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string get_string(std::size_t max_len = 4096) {
    const auto n = get<std::uint32_t>();
    if (n > max_len)
      throw ProtocolError(subject_ + ": string of " + std::to_string(n) + " bytes; the limit is " +
                          std::to_string(max_len));
    need(n);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return s;
  }
  /// A block put_bytes wrote, as a view into the head; ProtocolError above `max_len`.
  std::span<const std::byte> get_bytes(std::size_t max_len) {
    const auto n = get<std::uint32_t>();
    if (n > max_len)
      throw ProtocolError(subject_ + ": block of " + std::to_string(n) + " bytes; the limit is " +
                          std::to_string(max_len));
    need(n);
    const auto b = bytes_.subspan(at_, n);
    at_ += n;
    return b;
  }
  /// Throws unless every byte was consumed (trailing garbage is a malformed request).
  void finish() const {
    if (at_ != bytes_.size())
      throw ProtocolError(subject_ + ": " + std::to_string(bytes_.size() - at_) +
                          " unexpected trailing bytes in the head");
  }

 private:
  void need(std::size_t n) const {
    if (bytes_.size() - at_ < n)
      throw ProtocolError(subject_ + ": head ends after " + std::to_string(bytes_.size()) +
                          " bytes; expected at least " + std::to_string(at_ + n));
  }
  std::span<const std::byte> bytes_;
  std::size_t at_ = 0;
  std::string subject_;
};

}  // namespace distgraph

// The wire frame: a 32-byte little-endian header and the Message payload codec (docs/WIRE.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/transport/message.hpp"

namespace distgraph {

/// "DGRF" as the first four bytes on the wire (read as a little-endian u32).
inline constexpr std::uint32_t frame_magic = 0x46524744u;
/// The protocol version this build speaks; a peer with another version is refused.
inline constexpr std::uint16_t protocol_version = 1;
inline constexpr std::size_t frame_header_bytes = 32;
/// Default limit on a frame's payload (both directions); configurable per endpoint.
inline constexpr std::uint64_t default_max_frame_bytes = std::uint64_t{256} << 20;
/// Most parts one message may carry.
inline constexpr std::uint32_t max_message_parts = 64;
/// Header flag: this frame answers the request with the same ID.
inline constexpr std::uint16_t frame_flag_reply = 1;

/// The decoded fixed header of a frame.
struct FrameHeader {
  MsgType type = MsgType::ping;
  std::uint64_t request_id = 0;
  Status status = Status::ok;
  std::uint16_t flags = 0;
  std::uint64_t payload_bytes = 0;

  bool is_reply() const noexcept { return (flags & frame_flag_reply) != 0; }
};

namespace detail {

inline void store_le(std::byte* p, std::uint64_t v, int bytes) noexcept {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
inline std::uint64_t load_le(const std::byte* p, int bytes) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= std::uint64_t{std::to_integer<std::uint8_t>(p[i])} << (8 * i);
  return v;
}
constexpr std::uint64_t align8(std::uint64_t n) noexcept { return (n + 7) & ~std::uint64_t{7}; }

// Zero bytes the gather list points at for padding.
inline constexpr std::array<std::byte, 8> zero_pad{};

}  // namespace detail

/// Writes `h` into the 32 header bytes at `out`.
inline void encode_header(const FrameHeader& h, std::span<std::byte, frame_header_bytes> out) {
  std::byte* p = out.data();
  detail::store_le(p + 0, frame_magic, 4);
  detail::store_le(p + 4, protocol_version, 2);
  detail::store_le(p + 6, static_cast<std::uint16_t>(h.type), 2);
  detail::store_le(p + 8, h.request_id, 8);
  detail::store_le(p + 16, static_cast<std::uint16_t>(h.status), 2);
  detail::store_le(p + 18, h.flags, 2);
  detail::store_le(p + 20, 0, 4);
  detail::store_le(p + 24, h.payload_bytes, 8);
}

/// The request ID of a header whose magic is right (to address an error reply), else none.
inline std::optional<std::uint64_t> peek_request_id(
    std::span<const std::byte, frame_header_bytes> in) noexcept {
  if (detail::load_le(in.data(), 4) != frame_magic) return std::nullopt;
  return detail::load_le(in.data() + 8, 8);
}

/// Decodes and validates a header before anything is allocated for its payload. Throws
/// ProtocolError (bad magic, version, unknown flags, reserved bits set, payload shorter
/// than the 8-byte message prefix) or FrameTooLarge (payload above `max_frame_bytes`),
/// naming `subject` (e.g. "client 127.0.0.1:5000").
inline FrameHeader decode_header(std::span<const std::byte, frame_header_bytes> in,
                                 std::uint64_t max_frame_bytes,
                                 const std::string& subject = "frame") {
  const std::byte* p = in.data();
  const auto magic = static_cast<std::uint32_t>(detail::load_le(p, 4));
  if (magic != frame_magic)
    throw ProtocolError(subject + ": bad frame magic " + std::to_string(magic) + "; expected " +
                        std::to_string(frame_magic) + " (\"DGRF\")");
  const auto version = static_cast<std::uint16_t>(detail::load_le(p + 4, 2));
  if (version != protocol_version)
    throw ProtocolError(subject + ": protocol version " + std::to_string(version) +
                        "; this build speaks version " + std::to_string(protocol_version));
  FrameHeader h;
  h.type = static_cast<MsgType>(detail::load_le(p + 6, 2));
  h.request_id = detail::load_le(p + 8, 8);
  h.status = static_cast<Status>(detail::load_le(p + 16, 2));
  h.flags = static_cast<std::uint16_t>(detail::load_le(p + 18, 2));
  const auto reserved = detail::load_le(p + 20, 4);
  h.payload_bytes = detail::load_le(p + 24, 8);
  if ((h.flags & ~frame_flag_reply) != 0 || reserved != 0)
    throw ProtocolError(subject + ": unknown header flags " + std::to_string(h.flags) +
                        " or reserved bits " + std::to_string(reserved) + "; expected zero");
  if (h.payload_bytes > max_frame_bytes)
    throw FrameTooLarge(subject, h.payload_bytes, max_frame_bytes);
  if (h.payload_bytes < 8)
    throw ProtocolError(subject + ": payload of " + std::to_string(h.payload_bytes) +
                        " bytes; a message needs at least 8");
  return h;
}

/// Payload bytes `m` encodes to (docs/WIRE.md). Throws InvalidArgument for more than
/// max_message_parts parts or a head above 4 GiB.
inline std::uint64_t message_payload_bytes(const Message& m) {
  if (m.parts.size() > max_message_parts)
    throw InvalidArgument("message: " + std::to_string(m.parts.size()) + " parts; at most " +
                          std::to_string(max_message_parts) + " allowed");
  if (m.head.size() > 0xffffffffu)
    throw InvalidArgument("message: head of " + std::to_string(m.head.size()) +
                          " bytes; at most 4 GiB allowed");
  std::uint64_t n = 8 + 8 * m.parts.size() + m.head.size();
  for (auto part : m.parts) n = detail::align8(n) + part.size();
  return n;
}

/// A frame ready to send: `pieces` is the gather list (header and length prefix, head,
/// padding, then each part), pointing into `prefix`, static zeros and the message's own
/// memory; `message` keeps the parts alive until the frame is written. Moving an OutFrame
/// keeps every piece valid.
struct OutFrame {
  std::vector<std::byte> prefix;
  std::vector<std::span<const std::byte>> pieces;
  Message message;
  /// A server keeps the request's payload alive here until the reply is written, so a
  /// handler may answer with spans into its request.
  std::shared_ptr<const void> request_keep_alive;
  std::uint64_t total_bytes = 0;  ///< header plus payload
};

/// Builds the gather list for `h` and `m` without copying any part; sets the payload
/// length. Throws InvalidArgument as message_payload_bytes does.
inline OutFrame encode_frame(FrameHeader h, Message m) {
  OutFrame f;
  h.payload_bytes = message_payload_bytes(m);
  f.total_bytes = frame_header_bytes + h.payload_bytes;
  const std::size_t prefix_payload = 8 + 8 * m.parts.size();
  f.prefix.resize(frame_header_bytes + prefix_payload);
  encode_header(h, std::span<std::byte, frame_header_bytes>(f.prefix.data(), frame_header_bytes));
  std::byte* p = f.prefix.data() + frame_header_bytes;
  detail::store_le(p, m.head.size(), 4);
  detail::store_le(p + 4, m.parts.size(), 4);
  for (std::size_t i = 0; i < m.parts.size(); ++i)
    detail::store_le(p + 8 + 8 * i, m.parts[i].size(), 8);
  f.pieces.reserve(2 + 2 * m.parts.size());
  f.pieces.emplace_back(f.prefix.data(), f.prefix.size());
  std::uint64_t off = prefix_payload;
  auto add = [&](std::span<const std::byte> s) {
    if (!s.empty()) f.pieces.push_back(s);
    off += s.size();
  };
  add(m.head);
  for (auto part : m.parts) {
    add(std::span<const std::byte>(detail::zero_pad.data(), detail::align8(off) - off));
    add(part);
  }
  f.message = std::move(m);
  return f;
}

/// The frame's bytes in one buffer (for tests and raw clients; transports never flatten).
inline std::vector<std::byte> flatten(const OutFrame& f) {
  std::vector<std::byte> out;
  out.reserve(f.total_bytes);
  for (auto s : f.pieces) out.insert(out.end(), s.begin(), s.end());
  return out;
}

/// Decodes a Message whose spans point into `payload`, which `keep_alive` owns. Validates
/// every length: at most max_message_parts parts, no overflow, and the head, padding and
/// parts add up to exactly payload.size(). Throws ProtocolError naming `subject`. Parts are
/// 8-byte aligned when `payload` is.
inline Message decode_message(std::span<const std::byte> payload,
                              std::shared_ptr<const void> keep_alive,
                              const std::string& subject = "frame") {
  const std::uint64_t size = payload.size();
  auto fail = [&](const std::string& what) {
    throw ProtocolError(subject + ": " + what + "; payload is " + std::to_string(size) + " bytes");
  };
  if (size < 8) fail("message prefix truncated");
  const std::byte* p = payload.data();
  const std::uint64_t head_len = detail::load_le(p, 4);
  const std::uint64_t num_parts = detail::load_le(p + 4, 4);
  if (num_parts > max_message_parts)
    fail(std::to_string(num_parts) + " parts; at most " + std::to_string(max_message_parts));
  std::uint64_t off = 8 + 8 * num_parts;
  if (off > size) fail("part lengths truncated");
  if (head_len > size - off) fail("head of " + std::to_string(head_len) + " bytes overruns");
  Message m;
  m.head = payload.subspan(off, head_len);
  off += head_len;
  m.parts.reserve(num_parts);
  for (std::uint64_t i = 0; i < num_parts; ++i) {
    const std::uint64_t len = detail::load_le(p + 8 + 8 * i, 8);
    // off <= size <= SIZE_MAX, so align8 cannot overflow by more than 7 past size.
    off = detail::align8(off);
    if (off > size || len > size - off)
      fail("part " + std::to_string(i) + " of " + std::to_string(len) + " bytes overruns");
    m.parts.push_back(payload.subspan(off, len));
    off += len;
  }
  if (off != size)
    fail("message encodes " + std::to_string(off) + " bytes, " + std::to_string(size - off) +
         " left over");
  m.keep_alive = std::move(keep_alive);
  return m;
}

}  // namespace distgraph

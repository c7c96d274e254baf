// The hello exchange: nonces, HMAC proofs, TLS modes and the hello heads (docs/WIRE.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/transport/detail/tls_context.hpp"
#include "distgraph/transport/frame.hpp"
#include "distgraph/transport/tls.hpp"

namespace distgraph::detail {

using Nonce = std::array<std::byte, 32>;

/// 32 bytes from OpenSSL's CSPRNG.
inline Nonce random_nonce() {
  Nonce n;
  random_bytes(n);
  return n;
}

inline std::span<const std::byte> secret_bytes(std::string_view secret) noexcept {
  return std::as_bytes(std::span(secret.data(), secret.size()));
}

/// The client's proof: HMAC-SHA256(secret, server_nonce || client_nonce).
inline Digest client_proof(std::string_view secret, const Nonce& server_nonce,
                           const Nonce& client_nonce) {
  return hmac_sha256(secret_bytes(secret), server_nonce, client_nonce);
}
/// The server's proof (order swapped so one cannot be replayed as the other).
inline Digest server_proof(std::string_view secret, const Nonce& server_nonce,
                           const Nonce& client_nonce) {
  return hmac_sha256(secret_bytes(secret), client_nonce, server_nonce);
}

inline constexpr std::uint16_t hello_flag_secret = 1;  // server: required; client: proof sent
/// The sender's TLS mode (docs/WIRE.md, "Handshake"): a server's says what the client must
/// start before its hello; a client's, sent in clear only when the modes differ, tells the
/// server why the client gives up.
inline constexpr std::uint16_t hello_flag_tls_psk = 2;
inline constexpr std::uint16_t hello_flag_tls_certificates = 4;

inline std::uint16_t tls_hello_flags(TlsMode m) noexcept {
  return m == TlsMode::psk            ? hello_flag_tls_psk
         : m == TlsMode::certificates ? hello_flag_tls_certificates
                                      : 0;
}
/// The TLS mode of hello flags; throws ProtocolError naming `subject` when both are set.
inline TlsMode tls_mode_of_hello(std::uint16_t flags, const std::string& subject) {
  const bool psk = (flags & hello_flag_tls_psk) != 0;
  const bool certs = (flags & hello_flag_tls_certificates) != 0;
  if (psk && certs)
    throw ProtocolError(subject + ": hello asks for TLS with both a PSK and certificates");
  return psk ? TlsMode::psk : certs ? TlsMode::certificates : TlsMode::off;
}
inline constexpr std::size_t server_hello_bytes = 40;
inline constexpr std::size_t client_hello_bytes = 72;
/// A client hello frame's payload: the 8-byte message prefix and the head, no parts. The
/// least a server's pre-handshake frame limit (AsioServerOptions::max_hello_bytes) may be.
inline constexpr std::uint64_t client_hello_payload_bytes = 8 + client_hello_bytes;

/// Server hello head: u16 version | u16 flags | u32 reserved | nonce[32].
inline std::vector<std::byte> encode_server_hello(bool secret_required, TlsMode tls,
                                                  const Nonce& nonce) {
  std::vector<std::byte> h(server_hello_bytes);
  store_le(h.data(), protocol_version, 2);
  store_le(h.data() + 2, (secret_required ? hello_flag_secret : 0) | tls_hello_flags(tls), 2);
  std::memcpy(h.data() + 8, nonce.data(), nonce.size());
  return h;
}

struct ServerHello {
  bool secret_required = false;
  TlsMode tls = TlsMode::off;
  Nonce nonce{};
};

/// Parses a server hello head; throws ProtocolError naming `subject`.
inline ServerHello decode_server_hello(std::span<const std::byte> head,
                                       const std::string& subject) {
  if (head.size() != server_hello_bytes)
    throw ProtocolError(subject + ": server hello of " + std::to_string(head.size()) +
                        " bytes; expected " + std::to_string(server_hello_bytes));
  const auto version = load_le(head.data(), 2);
  if (version != protocol_version)
    throw ProtocolError(subject + ": server speaks protocol version " + std::to_string(version) +
                        "; this build speaks version " + std::to_string(protocol_version));
  ServerHello s;
  const auto flags = static_cast<std::uint16_t>(load_le(head.data() + 2, 2));
  s.secret_required = (flags & hello_flag_secret) != 0;
  s.tls = tls_mode_of_hello(flags, subject);
  std::memcpy(s.nonce.data(), head.data() + 8, s.nonce.size());
  return s;
}

/// Client hello head: u16 version | u16 flags | u32 reserved | nonce[32] | proof[32]
/// (zeros when the client has no secret).
inline std::vector<std::byte> encode_client_hello(const Nonce& nonce, const Digest* proof,
                                                  TlsMode tls) {
  std::vector<std::byte> h(client_hello_bytes);
  store_le(h.data(), protocol_version, 2);
  store_le(h.data() + 2, (proof ? hello_flag_secret : 0) | tls_hello_flags(tls), 2);
  std::memcpy(h.data() + 8, nonce.data(), nonce.size());
  if (proof) std::memcpy(h.data() + 40, proof->data(), proof->size());
  return h;
}

struct ClientHello {
  std::uint16_t version = 0;
  bool has_proof = false;
  TlsMode tls = TlsMode::off;
  Nonce nonce{};
  Digest proof{};
};

/// Parses a client hello head; throws ProtocolError naming `subject` when malformed (the
/// version is returned, not checked, so the server can say which one it got).
inline ClientHello decode_client_hello(std::span<const std::byte> head,
                                       const std::string& subject) {
  if (head.size() != client_hello_bytes)
    throw ProtocolError(subject + ": client hello of " + std::to_string(head.size()) +
                        " bytes; expected " + std::to_string(client_hello_bytes));
  ClientHello c;
  c.version = static_cast<std::uint16_t>(load_le(head.data(), 2));
  const auto flags = static_cast<std::uint16_t>(load_le(head.data() + 2, 2));
  c.has_proof = (flags & hello_flag_secret) != 0;
  c.tls = tls_mode_of_hello(flags, subject);
  std::memcpy(c.nonce.data(), head.data() + 8, c.nonce.size());
  std::memcpy(c.proof.data(), head.data() + 40, c.proof.size());
  return c;
}

}  // namespace distgraph::detail

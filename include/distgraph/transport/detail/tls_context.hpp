// OpenSSL for the transport: the TLS 1.3 contexts, a socket BIO, HMAC and random nonces.
#pragma once

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>

#include "distgraph/core/error.hpp"
#include "distgraph/transport/tls.hpp"

namespace distgraph::detail {

using Digest = std::array<std::byte, 32>;

/// The oldest OpenSSL's error queue entry as text ("" when empty); empties the queue, so
/// an error never leaks into the next call's report.
inline std::string openssl_error_text() {
  std::string text;
  while (const unsigned long e = ERR_get_error()) {
    if (!text.empty()) continue;
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    // "error:0A000086:SSL routines::certificate verify failed": keep the reason only.
    const std::string_view s(buf);
    const auto colon = s.rfind(':');
    text = std::string(colon == std::string_view::npos ? s : s.substr(colon + 1));
  }
  return text;
}

/// HMAC-SHA256 of `a || b` under `key` (OpenSSL).
inline Digest hmac_sha256(std::span<const std::byte> key, std::span<const std::byte> a,
                          std::span<const std::byte> b) {
  std::unique_ptr<EVP_MAC, decltype(&EVP_MAC_free)> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr),
                                                        &EVP_MAC_free);
  std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(
      mac ? EVP_MAC_CTX_new(mac.get()) : nullptr, &EVP_MAC_CTX_free);
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_utf8_string("digest", digest_name, 0), OSSL_PARAM_END};
  Digest out{};
  std::size_t n = 0;
  const auto* k = reinterpret_cast<const unsigned char*>(key.data());
  const bool ok =
      ctx && EVP_MAC_init(ctx.get(), k, key.size(), params) == 1 &&
      EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(a.data()), a.size()) == 1 &&
      EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(b.data()), b.size()) == 1 &&
      EVP_MAC_final(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &n, out.size()) == 1 &&
      n == out.size();
  if (!ok) throw Error("HMAC-SHA256 failed in OpenSSL: " + openssl_error_text());
  return out;
}

/// Equality in time independent of where the inputs differ (OpenSSL's CRYPTO_memcmp).
inline bool constant_time_equal(std::span<const std::byte> a,
                                std::span<const std::byte> b) noexcept {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

/// Fills `out` from OpenSSL's CSPRNG; throws Error when it cannot.
inline void random_bytes(std::span<std::byte> out) {
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size())) != 1)
    throw Error("no random bytes from OpenSSL: " + openssl_error_text());
}

/// The state of socket_bio_method()'s BIO: the descriptor and the records written but not
/// yet sent.
struct SocketBio {
  /// Records gather here until this many bytes wait (or a flush), so that a large frame
  /// goes out in a few large sends rather than one per 16 KiB record: per-send costs
  /// (syscall, qdisc, a veth or NIC's per-packet work) were a third of TLS's time.
  static constexpr std::size_t send_at = 64 * 1024;
  static constexpr std::size_t capacity = 4 * send_at;

  int fd = -1;
  std::unique_ptr<std::byte[]> out;
  std::size_t begin = 0, end = 0;  // unsent bytes: out[begin, end)

  std::size_t pending() const noexcept { return end - begin; }
  /// Sends what it can without blocking: 1 = nothing left, 0 = the socket is full, -1 = a
  /// send failed (errno says why).
  int flush() noexcept {
    while (begin < end) {
      const ssize_t r = ::send(fd, out.get() + begin, end - begin, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (r >= 0) {
        begin += static_cast<std::size_t>(r);
        continue;
      }
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
    begin = end = 0;
    return 1;
  }
};

/// A BIO on a non-blocking socket descriptor (SocketBio) that gathers records into larger
/// sends, never raises SIGPIPE (send with MSG_NOSIGNAL; OpenSSL's own socket BIO uses
/// write(), which would kill a process whose peer is gone) and never closes the
/// descriptor (the stream owns it). What it holds goes out when 64 KiB wait, on
/// BIO_flush (tls_flush), or when a write needs the room.
inline BIO_METHOD* socket_bio_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "distgraph socket");
    BIO_meth_set_create(m, [](BIO* b) {
      BIO_set_data(b, new (std::nothrow) SocketBio);
      BIO_set_init(b, 1);
      return BIO_get_data(b) != nullptr ? 1 : 0;
    });
    BIO_meth_set_destroy(m, [](BIO* b) {
      delete static_cast<SocketBio*>(BIO_get_data(b));
      BIO_set_data(b, nullptr);
      return 1;
    });
    BIO_meth_set_write(m, [](BIO* b, const char* data, int n) -> int {
      auto* s = static_cast<SocketBio*>(BIO_get_data(b));
      BIO_clear_retry_flags(b);
      const auto len = static_cast<std::size_t>(n);
      if (s->end + len > SocketBio::capacity) {
        const int f = s->flush();
        if (f < 0) return -1;
        if (s->pending() + len > SocketBio::capacity) {
          BIO_set_retry_write(b);
          return -1;
        }
        if (s->begin > 0) {
          std::memmove(s->out.get(), s->out.get() + s->begin, s->pending());
          s->end -= s->begin;
          s->begin = 0;
        }
      }
      if (!s->out) s->out.reset(new std::byte[SocketBio::capacity]);
      std::memcpy(s->out.get() + s->end, data, len);
      s->end += len;
      if (s->pending() >= SocketBio::send_at && s->flush() < 0) return -1;
      return n;
    });
    BIO_meth_set_read(m, [](BIO* b, char* data, int n) -> int {
      const int fd = static_cast<SocketBio*>(BIO_get_data(b))->fd;
      BIO_clear_retry_flags(b);
      ssize_t r = 0;
      do {
        r = ::recv(fd, data, static_cast<std::size_t>(n), MSG_DONTWAIT);
      } while (r < 0 && errno == EINTR);
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_read(b);
      return static_cast<int>(r);
    });
    BIO_meth_set_ctrl(m, [](BIO* b, int cmd, long, void*) -> long {
      auto* s = static_cast<SocketBio*>(BIO_get_data(b));
      if (cmd == BIO_CTRL_WPENDING) return static_cast<long>(s->pending());
      if (cmd != BIO_CTRL_FLUSH) return 0;
      BIO_clear_retry_flags(b);
      const int f = s->flush();
      if (f == 0) BIO_set_retry_write(b);
      return f;
    });
    return m;
  }();
  return method;
}

/// Sends what `ssl`'s socket BIO holds: 1 = all sent, 0 = the socket is full (wait until it
/// is writable, then call again), -1 = the send failed (errno).
inline int tls_flush(SSL* ssl) noexcept {
  BIO* b = SSL_get_wbio(ssl);
  const long r = BIO_flush(b);
  if (r == 1) return 1;
  return BIO_should_retry(b) ? 0 : -1;
}
/// Bytes of records written but not yet sent.
inline std::size_t tls_unsent(SSL* ssl) noexcept {
  return static_cast<std::size_t>(BIO_wpending(SSL_get_wbio(ssl)));
}

struct SslFree {
  void operator()(SSL* s) const noexcept { SSL_free(s); }
};
using SslPtr = std::unique_ptr<SSL, SslFree>;

/// Why an SSL call that returned `ret` failed, for an error message; empties the queue.
inline std::string tls_failure_text(SSL* ssl, int ret) {
  const int err = SSL_get_error(ssl, ret);
  std::string why = openssl_error_text();
  // X509_V_ERR_UNSPECIFIED is also the value before any certificate was checked (PSK).
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK && verify != X509_V_ERR_UNSPECIFIED) {
    const std::string v = X509_verify_cert_error_string(verify);
    why = why.empty() ? v : why + " (" + v + ")";
  }
  if (!why.empty()) return why;
  if (err == SSL_ERROR_ZERO_RETURN) return "peer closed the TLS session";
  if (err == SSL_ERROR_SYSCALL)
    return errno != 0 ? std::string(std::strerror(errno)) : "connection closed by peer";
  return "TLS error " + std::to_string(err);
}

/// After a handshake that succeeded: "" when it authenticated the peer as the mode requires,
/// else why not. In PSK mode the session must rest on the PSK: a peer that ignored it and
/// presented some certificate instead (a man in the middle who faked the server hello's
/// mode) would otherwise pass, as a PSK client verifies no certificate.
inline std::string tls_established_check(SSL* ssl);

/// One side's TLS 1.3 configuration (an SSL_CTX), shared by its connections. Built from
/// TlsOptions and the shared secret: certificates when a certificate is given, else a PSK
/// derived from the secret (HKDF-SHA256, identity "distgraph"). Session tickets and
/// resumption are off, and TLS 1.3 has no renegotiation: every connection does a full
/// handshake with fresh ephemeral keys, so a recorded session cannot be replayed.
class TlsContext {
 public:
  /// Throws InvalidArgument naming the option or file at fault (a missing key, a key that
  /// does not match its certificate, a CA file OpenSSL cannot read).
  TlsContext(TlsMode mode, bool server, const TlsOptions& tls, std::string_view secret)
      : mode_(mode),
        server_(server),
        ctx_(SSL_CTX_new(server ? TLS_server_method() : TLS_client_method())) {
    if (!ctx_) throw Error("cannot create an OpenSSL context: " + openssl_error_text());
    SSL_CTX* c = ctx_.get();
    SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION);
    SSL_CTX_set_max_proto_version(c, TLS1_3_VERSION);
    // AES-128-GCM first: the fastest with AES-NI, and the PSK's hash (SHA-256) fits it.
    SSL_CTX_set_ciphersuites(c, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384");
    SSL_CTX_set_num_tickets(c, 0);
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(c, SSL_OP_NO_TICKET | SSL_OP_IGNORE_UNEXPECTED_EOF);
    // Partial writes: SSL_write returns per record, like send(); a retry may pass the same
    // bytes from another address (the write queue rebuilds its chunk).
    SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // Read ahead into a 128 KiB buffer: several records per recv (the plaintext stream
    // reads 64 KiB at a time, and copies nothing after).
    SSL_CTX_set_read_ahead(c, 1);
    SSL_CTX_set_default_read_buffer_len(c, 128 * 1024);
    SSL_CTX_set_app_data(c, this);
    if (mode == TlsMode::certificates)
      load_certificates(tls);
    else
      derive_psk(secret, server);
  }
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  TlsMode mode() const noexcept { return mode_; }
  /// The context `ssl` was made from.
  static const TlsContext& of(SSL* ssl) {
    return *static_cast<const TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  }

  /// A new connection's SSL object on socket `fd` (non-blocking; the caller owns fd).
  SslPtr make_ssl(int fd) const {
    SslPtr ssl(SSL_new(ctx_.get()));
    BIO* bio = ssl ? BIO_new(socket_bio_method()) : nullptr;
    if (!bio) throw Error("cannot create a TLS connection: " + openssl_error_text());
    static_cast<SocketBio*>(BIO_get_data(bio))->fd = fd;
    SSL_set_bio(ssl.get(), bio, bio);
    if (server_)
      SSL_set_accept_state(ssl.get());
    else
      SSL_set_connect_state(ssl.get());
    return ssl;
  }

 private:
  static constexpr std::string_view psk_identity = "distgraph";

  void load_certificates(const TlsOptions& tls) {
    SSL_CTX* c = ctx_.get();
    if (tls.key_file.empty() || tls.ca_file.empty())
      throw InvalidArgument(
          "TLS with certificates needs all three of --tls-cert, --tls-key and --tls-ca; "
          "missing: " +
          std::string(tls.key_file.empty() ? "--tls-key" : "--tls-ca"));
    auto fail = [](const std::string& what, const std::filesystem::path& p) {
      throw InvalidArgument(p.string() + ": " + what + ": " + openssl_error_text());
    };
    if (SSL_CTX_use_certificate_chain_file(c, tls.cert_file.c_str()) != 1)
      fail("cannot load the certificate (PEM)", tls.cert_file);
    // OpenSSL checks here that the key is the certificate's.
    if (SSL_CTX_use_PrivateKey_file(c, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(c) != 1)
      fail("cannot use it as the private key (PEM) of the certificate " + tls.cert_file.string(),
           tls.key_file);
    if (SSL_CTX_load_verify_locations(c, tls.ca_file.c_str(), nullptr) != 1)
      fail("cannot load the CA certificate (PEM)", tls.ca_file);
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }

  // The PSK: HKDF-SHA256 of the secret, bound to this use by its salt and info, so the key
  // differs from anything else derived from the same secret.
  void derive_psk(std::string_view secret, bool server) {
    std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> kdf(
        EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr), &EVP_PKEY_CTX_free);
    static constexpr unsigned char salt[] = "distgraph tls 1.3 psk";
    static constexpr unsigned char info[] = "distgraph data plane v1";
    std::size_t n = psk_.size();
    const bool ok =
        kdf && EVP_PKEY_derive_init(kdf.get()) == 1 &&
        EVP_PKEY_CTX_set_hkdf_md(kdf.get(), EVP_sha256()) == 1 &&
        EVP_PKEY_CTX_set1_hkdf_salt(kdf.get(), salt, sizeof salt - 1) == 1 &&
        EVP_PKEY_CTX_set1_hkdf_key(kdf.get(), reinterpret_cast<const unsigned char*>(secret.data()),
                                   static_cast<int>(secret.size())) == 1 &&
        EVP_PKEY_CTX_add1_hkdf_info(kdf.get(), info, sizeof info - 1) == 1 &&
        EVP_PKEY_derive(kdf.get(), psk_.data(), &n) == 1 && n == psk_.size();
    if (!ok) throw Error("cannot derive the TLS key from the secret: " + openssl_error_text());
    if (server)
      SSL_CTX_set_psk_find_session_callback(ctx_.get(), &find_session);
    else
      SSL_CTX_set_psk_use_session_callback(ctx_.get(), &use_session);
  }

  // A session that carries the PSK, for AES-128-GCM-SHA256 (the PSK's hash).
  static SSL_SESSION* psk_session(SSL* ssl) {
    const auto* self = static_cast<const TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
    static constexpr unsigned char aes128gcm[] = {0x13, 0x01};
    const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, aes128gcm);
    SSL_SESSION* s = cipher ? SSL_SESSION_new() : nullptr;
    if (!s) return nullptr;
    if (SSL_SESSION_set1_master_key(s, self->psk_.data(), self->psk_.size()) != 1 ||
        SSL_SESSION_set_cipher(s, cipher) != 1 ||
        SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION) != 1) {
      SSL_SESSION_free(s);
      return nullptr;
    }
    return s;
  }
  static int use_session(SSL* ssl, const EVP_MD* md, const unsigned char** id, std::size_t* idlen,
                         SSL_SESSION** sess) {
    *sess = nullptr;
    *id = nullptr;
    *idlen = 0;
    // A retry with another hash (a server that chose AES-256): no PSK for it.
    if (md != nullptr && EVP_MD_get_type(md) != NID_sha256) return 1;
    *sess = psk_session(ssl);
    if (*sess == nullptr) return 0;
    *id = reinterpret_cast<const unsigned char*>(psk_identity.data());
    *idlen = psk_identity.size();
    return 1;
  }
  static int find_session(SSL* ssl, const unsigned char* id, std::size_t idlen,
                          SSL_SESSION** sess) {
    *sess = nullptr;
    if (std::string_view(reinterpret_cast<const char*>(id), idlen) != psk_identity) return 1;
    *sess = psk_session(ssl);
    return *sess != nullptr ? 1 : 0;
  }

  struct CtxFree {
    void operator()(SSL_CTX* c) const noexcept { SSL_CTX_free(c); }
  };
  TlsMode mode_;
  bool server_;
  std::unique_ptr<SSL_CTX, CtxFree> ctx_;
  std::array<unsigned char, 32> psk_{};
};

inline std::string tls_established_check(SSL* ssl) {
  if (TlsContext::of(ssl).mode() == TlsMode::psk && SSL_session_reused(ssl) != 1)
    return "the peer did not use the shared secret's key (it offered a certificate instead)";
  return "";
}

}  // namespace distgraph::detail

// TlsOptions: how a server or client protects its connections (TLS 1.3, docs/RUNTIME.md).
#pragma once

#include <filesystem>
#include <string>

#include "distgraph/core/error.hpp"

namespace distgraph {

/// How a connection is protected once both sides agree on it.
enum class TlsMode {
  off,           ///< plaintext: a trusted network only (--no-tls), or nothing to prove
  psk,           ///< TLS 1.3 with a key derived from the shared secret
  certificates,  ///< TLS 1.3, both sides present a certificate signed by the job's CA
};

/// TLS settings of a server (AsioServerOptions::tls) or client (AsioTransportOptions::tls).
/// By default a connection is encrypted whenever there is something to authenticate it
/// with: certificates when `cert_file` is set, else a PSK derived from the shared secret.
/// Only `enabled = false` (`--no-tls`) sends frames in clear with a secret; with neither a
/// secret nor certificates there is no authentication and no encryption (the open server
/// of a single machine's tests).
struct TlsOptions {
  /// false = plaintext even with a secret or certificates (--no-tls).
  bool enabled = true;
  /// This side's certificate chain (PEM), its private key (PEM) and the CA that signs the
  /// peers' certificates (PEM). All three, or none.
  std::filesystem::path cert_file{}, key_file{}, ca_file{};
};

/// Throws InvalidArgument unless `tls` names all three certificate files or none.
inline void check_tls_options(const TlsOptions& tls) {
  const int given = !tls.cert_file.empty() + !tls.key_file.empty() + !tls.ca_file.empty();
  if (given != 0 && given != 3)
    throw InvalidArgument(
        "TLS with certificates needs all three of the certificate, its key and the CA "
        "(--tls-cert, --tls-key, --tls-ca or DISTGRAPH_TLS_CERT, _KEY, _CA); " +
        std::to_string(given) + " given");
}

/// The mode `tls` and a shared secret give: off, psk or certificates.
inline TlsMode tls_mode(const TlsOptions& tls, const std::string& secret) noexcept {
  if (!tls.enabled) return TlsMode::off;
  if (!tls.cert_file.empty()) return TlsMode::certificates;
  return secret.empty() ? TlsMode::off : TlsMode::psk;
}

/// "off", "psk" or "certificates": what logs, errors and the launcher's report say.
inline const char* tls_mode_name(TlsMode m) noexcept {
  switch (m) {
    case TlsMode::psk:
      return "psk";
    case TlsMode::certificates:
      return "certificates";
    case TlsMode::off:
      break;
  }
  return "off";
}

}  // namespace distgraph

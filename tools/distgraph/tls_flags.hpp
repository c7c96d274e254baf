// The TLS flags `distgraph serve` and `distgraph launch` share (docs/RUNTIME.md, "TLS").
#pragma once

#include "cli.hpp"
#include "distgraph/runtime/environment.hpp"
#include "distgraph/transport/tls.hpp"

namespace distgraph::cli {

/// Declares --no-tls, --tls-cert, --tls-key and --tls-ca.
inline Args& add_tls_flags(Args& args) {
  return args
      .flag("no-tls",
            "send frames in clear, even with a secret: only on a network you trust "
            "(DISTGRAPH_NO_TLS=1)")
      .option("tls-cert",
              "this machine's certificate chain (PEM): TLS with certificates instead of a "
              "key derived from the secret (DISTGRAPH_TLS_CERT)")
      .option("tls-key", "the certificate's private key (PEM; DISTGRAPH_TLS_KEY)")
      .option("tls-ca", "the CA that signs every peer's certificate (PEM; DISTGRAPH_TLS_CA)");
}

/// The TLS settings of the environment (read_tls_environment), overridden by the flags.
/// Throws UsageError for a malformed TLS variable, --no-tls beside a certificate, or a
/// certificate without its key and CA.
inline TlsOptions tls_from_flags(const Args& args) {
  TlsOptions t;
  try {
    t = read_tls_environment();  // a malformed DISTGRAPH_NO_TLS is the user's to fix
  } catch (const InvalidArgument& e) {
    throw UsageError(e.what());
  }
  if (args.has("no-tls")) t.enabled = false;
  if (auto v = args.get("tls-cert")) t.cert_file = *v;
  if (auto v = args.get("tls-key")) t.key_file = *v;
  if (auto v = args.get("tls-ca")) t.ca_file = *v;
  const bool any = !t.cert_file.empty() || !t.key_file.empty() || !t.ca_file.empty();
  if (!t.enabled && any)
    throw UsageError(
        "--no-tls with TLS certificates: choose one (certificates: --tls-cert, "
        "--tls-key, --tls-ca, or DISTGRAPH_TLS_*)");
  try {
    check_tls_options(t);  // the library's own rule, as a usage error here
  } catch (const InvalidArgument& e) {
    throw UsageError(e.what());
  }
  return t;
}

}  // namespace distgraph::cli

// Test helpers: a throw-away certificate authority and certificates it signs, written as
// PEM files with OpenSSL's own API (no `openssl` program needed).
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "distgraph/transport/tls.hpp"

namespace distgraph::test {

/// A P-256 key, a certificate, and where both were written.
class TestCert {
 public:
  /// A self-signed CA named `name`, valid from now for a day.
  static TestCert authority(const std::filesystem::path& dir, const std::string& name) {
    TestCert c(dir, name);
    c.sign_as(nullptr, name, true, 0, 86400);
    return c;
  }
  /// A certificate for `name` signed by `ca`, valid from `from_s` to `to_s` seconds from
  /// now (both negative: expired).
  static TestCert signed_by(const TestCert& ca, const std::filesystem::path& dir,
                            const std::string& name, long from_s = 0, long to_s = 86400) {
    TestCert c(dir, name);
    c.sign_as(&ca, name, false, from_s, to_s);
    return c;
  }

  const std::filesystem::path& cert_file() const noexcept { return cert_file_; }
  const std::filesystem::path& key_file() const noexcept { return key_file_; }
  /// TLS options with this certificate and key, trusting `ca`.
  TlsOptions options(const TestCert& ca) const {
    return {.cert_file = cert_file_, .key_file = key_file_, .ca_file = ca.cert_file_};
  }

 private:
  struct KeyFree {
    void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
  };
  struct CertFree {
    void operator()(X509* x) const noexcept { X509_free(x); }
  };

  TestCert(const std::filesystem::path& dir, const std::string& name)
      : key_(EVP_EC_gen("P-256")),
        cert_(X509_new()),
        cert_file_(dir / (name + ".crt")),
        key_file_(dir / (name + ".key")) {
    if (!key_ || !cert_) throw std::runtime_error("TestCert: OpenSSL could not make a key");
  }

  void sign_as(const TestCert* ca, const std::string& name, bool is_ca, long from_s, long to_s) {
    X509* x = cert_.get();
    X509_set_version(x, 2);
    static long serial = 1;
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), from_s);
    X509_gmtime_adj(X509_getm_notAfter(x), to_s);
    X509_set_pubkey(x, key_.get());
    X509_NAME* subject = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
    X509_set_issuer_name(x, ca ? X509_get_subject_name(ca->cert_.get()) : subject);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, ca ? ca->cert_.get() : x, x, nullptr, nullptr, 0);
    auto add = [&](int nid, const char* value) {
      X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &v3, nid, value);
      if (!e) throw std::runtime_error("TestCert: bad extension");
      X509_add_ext(x, e, -1);
      X509_EXTENSION_free(e);
    };
    add(NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
    add(NID_key_usage, is_ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
    if (!is_ca) add(NID_ext_key_usage, "serverAuth,clientAuth");
    if (X509_sign(x, ca ? ca->key_.get() : key_.get(), EVP_sha256()) == 0)
      throw std::runtime_error("TestCert: signing failed");
    write(cert_file_, [&](FILE* f) { return PEM_write_X509(f, x); });
    write(key_file_, [&](FILE* f) {
      return PEM_write_PrivateKey(f, key_.get(), nullptr, nullptr, 0, nullptr, nullptr);
    });
  }
  template <class F>
  static void write(const std::filesystem::path& p, F&& f) {
    FILE* out = std::fopen(p.c_str(), "w");
    const bool ok = out && f(out) == 1;
    if (out) std::fclose(out);
    if (!ok) throw std::runtime_error("TestCert: cannot write " + p.string());
  }

  std::unique_ptr<EVP_PKEY, KeyFree> key_;
  std::unique_ptr<X509, CertFree> cert_;
  std::filesystem::path cert_file_, key_file_;
};

}  // namespace distgraph::test

// Test helpers: a blocking client that speaks frames by hand to a real server on 127.0.0.1,
// and a sink that collects a server's log lines.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "distgraph/transport/detail/handshake.hpp"
#include "distgraph/transport/frame.hpp"

namespace distgraph::test {

/// Collects server log lines and waits (bounded) for one containing a phrase.
struct LogSink {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> lines;
  std::function<void(std::string_view)> fn() {
    return [this](std::string_view l) {
      std::lock_guard lock(mu);
      lines.emplace_back(l);
      cv.notify_all();
    };
  }
  bool wait_for(const std::string& phrase,
                std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] {
      for (auto& l : lines)
        if (l.find(phrase) != std::string::npos) return true;
      return false;
    });
  }
};

/// A blocking POSIX client that speaks frames by hand, every read bounded by SO_RCVTIMEO.
class RawClient {
 public:
  explicit RawClient(std::uint16_t port,
                     std::chrono::seconds recv_timeout = std::chrono::seconds(5)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{static_cast<time_t>(recv_timeout.count()), 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const int one = 1;  // every send goes out at once, however small
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("RawClient: connect failed");
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  /// From here on every byte goes through TLS as `ctx`'s client side (call right after
  /// reading the server's hello). Throws std::runtime_error with OpenSSL's reason.
  void start_tls(const detail::TlsContext& ctx) {
    ssl_ = ctx.make_ssl(fd_);
    for (;;) {
      const int r = SSL_connect(ssl_.get());
      if (r == 1) return;
      if (!wait_for_ssl(r)) {
        const std::string why = detail::tls_failure_text(ssl_.get(), r);
        ssl_.reset();
        throw std::runtime_error("RawClient: TLS handshake failed: " + why);
      }
    }
  }
  bool tls() const noexcept { return ssl_ != nullptr; }

  void send_bytes(std::span<const std::byte> b) {
    std::size_t off = 0;
    while (off < b.size()) {
      if (ssl_) {
        const int n = SSL_write(ssl_.get(), b.data() + off, static_cast<int>(b.size() - off));
        if (n > 0)
          off += static_cast<std::size_t>(n);
        else if (!wait_for_ssl(n))
          throw std::runtime_error("RawClient: TLS send failed");
        continue;
      }
      const ssize_t n = ::send(fd_, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("RawClient: send failed");
      off += static_cast<std::size_t>(n);
    }
    // The socket BIO gathers records: send what it still holds.
    for (int f = ssl_ ? detail::tls_flush(ssl_.get()) : 1; f != 1;
         f = detail::tls_flush(ssl_.get())) {
      pollfd p{fd_, POLLOUT, 0};
      if (f < 0 || ::poll(&p, 1, 5000) != 1) throw std::runtime_error("RawClient: TLS send failed");
    }
  }
  void send_frame(const FrameHeader& h, Message m) {
    send_bytes(flatten(encode_frame(h, std::move(m))));
  }

  struct Frame {
    FrameHeader header;
    std::vector<std::byte> payload;
    std::string head_text() const {
      const Message m = decode_message(payload, nullptr);
      return std::string(reinterpret_cast<const char*>(m.head.data()), m.head.size());
    }
  };
  /// The next frame, or nullopt when the server closed the connection.
  std::optional<Frame> read_frame() {
    std::array<std::byte, frame_header_bytes> h;
    if (!read_exact(h.data(), h.size())) return std::nullopt;
    Frame f;
    f.header = decode_header(h, std::uint64_t{1} << 30);
    f.payload.resize(f.header.payload_bytes);
    if (!read_exact(f.payload.data(), f.payload.size())) throw std::runtime_error("truncated");
    return f;
  }
  /// Reads the server hello and answers it (with a proof of `secret` unless empty; first
  /// starting TLS with `tls` unless null); returns the hello reply.
  Frame handshake(std::string_view secret = {}, const detail::TlsContext* tls = nullptr) {
    auto hello = read_frame();
    REQUIRE(hello);
    REQUIRE(hello->header.type == MsgType::hello);
    if (tls) start_tls(*tls);
    send_frame({.type = MsgType::hello},
               Message::owning(client_hello(*hello, secret, tls ? tls->mode() : TlsMode::off)));
    auto reply = read_frame();
    REQUIRE(reply);
    return *reply;
  }
  /// The client hello head answering server hello `hello`, with a proof of `secret`
  /// unless it is empty, saying the client uses TLS mode `tls`.
  static std::vector<std::byte> client_hello(const Frame& hello, std::string_view secret,
                                             TlsMode tls = TlsMode::off) {
    const Message m = decode_message(hello.payload, nullptr);
    const auto server = detail::decode_server_hello(m.head, "server hello");
    const auto nonce = detail::random_nonce();
    if (secret.empty()) return detail::encode_client_hello(nonce, nullptr, tls);
    const auto proof = detail::client_proof(secret, server.nonce, nonce);
    return detail::encode_client_hello(nonce, &proof, tls);
  }

 private:
  // After an SSL call returned `r`: waits (bounded by the receive timeout) for what it
  // wants and returns true, or false when it failed.
  bool wait_for_ssl(int r) {
    const int err = SSL_get_error(ssl_.get(), r);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) return false;
    pollfd p{fd_, static_cast<short>(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
    if (::poll(&p, 1, 5000) != 1) throw std::runtime_error("RawClient: TLS peer silent for 5 s");
    return true;
  }

  bool read_exact(std::byte* p, std::size_t n) {
    std::size_t off = 0;
    while (ssl_ && off < n) {
      const int r = SSL_read(ssl_.get(), p + off, static_cast<int>(n - off));
      if (r > 0) {
        off += static_cast<std::size_t>(r);
        continue;
      }
      if (SSL_get_error(ssl_.get(), r) == SSL_ERROR_ZERO_RETURN) return false;
      if (!wait_for_ssl(r)) {
        ERR_clear_error();
        return false;  // the connection closed or a record was rejected
      }
    }
    while (off < n) {
      const ssize_t r = ::recv(fd_, p + off, n - off, 0);
      if (r == 0 || (r < 0 && errno == ECONNRESET)) return false;
      if (r < 0) throw std::runtime_error("RawClient: recv timed out or failed");
      off += static_cast<std::size_t>(r);
    }
    return true;
  }
  int fd_ = -1;
  detail::SslPtr ssl_;  // set by start_tls()
};

}  // namespace distgraph::test

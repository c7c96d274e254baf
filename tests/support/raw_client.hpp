// Test helpers: a blocking client that speaks frames by hand to a real server on 127.0.0.1,
// and a sink that collects a server's log lines.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
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

  void send_bytes(std::span<const std::byte> b) {
    std::size_t off = 0;
    while (off < b.size()) {
      const ssize_t n = ::send(fd_, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("RawClient: send failed");
      off += static_cast<std::size_t>(n);
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
  /// Reads the server hello and answers it (with a proof of `secret` unless empty);
  /// returns the hello reply.
  Frame handshake(std::string_view secret = {}) {
    auto hello = read_frame();
    REQUIRE(hello);
    REQUIRE(hello->header.type == MsgType::hello);
    send_frame({.type = MsgType::hello}, Message::owning(client_hello(*hello, secret)));
    auto reply = read_frame();
    REQUIRE(reply);
    return *reply;
  }
  /// The client hello head answering server hello `hello`, with a proof of `secret`
  /// unless it is empty.
  static std::vector<std::byte> client_hello(const Frame& hello, std::string_view secret) {
    const Message m = decode_message(hello.payload, nullptr);
    const auto server = detail::decode_server_hello(m.head, "server hello");
    const auto nonce = detail::random_nonce();
    if (secret.empty()) return detail::encode_client_hello(nonce, nullptr);
    const auto proof = detail::client_proof(secret, server.nonce, nonce);
    return detail::encode_client_hello(nonce, &proof);
  }

 private:
  bool read_exact(std::byte* p, std::size_t n) {
    std::size_t off = 0;
    while (off < n) {
      const ssize_t r = ::recv(fd_, p + off, n - off, 0);
      if (r == 0 || (r < 0 && errno == ECONNRESET)) return false;
      if (r < 0) throw std::runtime_error("RawClient: recv timed out or failed");
      off += static_cast<std::size_t>(r);
    }
    return true;
  }
  int fd_ = -1;
};

}  // namespace distgraph::test

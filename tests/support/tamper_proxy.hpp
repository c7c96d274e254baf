// Test helper: a man in the middle on 127.0.0.1 that forwards one TCP connection to a
// server, records what the client sent, and flips one byte on request.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "distgraph/transport/endpoint.hpp"

namespace distgraph::test {

/// Listens on 127.0.0.1:0 and forwards the first connection it accepts to 127.0.0.1:`target`
/// until either side closes or the proxy is destroyed (its thread stops by itself then, or
/// after `lifetime`). flip() arms a one-byte change in one direction.
class TamperProxy {
 public:
  enum class Direction { to_server, to_client };

  explicit TamperProxy(std::uint16_t target,
                       std::chrono::seconds lifetime = std::chrono::seconds(60))
      : target_(target) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listen_fd_, 4) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("TamperProxy: cannot listen on 127.0.0.1");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, end = std::chrono::steady_clock::now() + lifetime] { run(end); });
  }
  ~TamperProxy() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }
  TamperProxy(const TamperProxy&) = delete;
  TamperProxy& operator=(const TamperProxy&) = delete;

  Endpoint endpoint() const { return {"127.0.0.1", port_}; }

  /// XORs 0x01 into the byte `skip` bytes past what has gone `dir` so far.
  void flip(Direction dir, std::uint64_t skip) {
    std::lock_guard lock(mu_);
    const int d = static_cast<int>(dir);
    flip_at_[d] = forwarded_[d] + skip;
    armed_[d] = true;
  }
  /// Whether an armed flip has been done.
  bool flipped(Direction dir) const {
    std::lock_guard lock(mu_);
    return done_[static_cast<int>(dir)];
  }
  /// Every byte the client sent, in order.
  std::vector<std::byte> recorded() const {
    std::lock_guard lock(mu_);
    return recorded_;
  }
  /// Whether the forwarded connection has ended (either side closed).
  bool finished() const { return finished_; }

 private:
  static sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    return a;
  }

  void run(std::chrono::steady_clock::time_point end) {
    int client = -1;
    while (client < 0 && !stop_ && std::chrono::steady_clock::now() < end) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) == 1) client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    }
    if (client < 0) return;
    const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in a = loopback(target_);
    if (server < 0 || ::connect(server, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      ::close(client);
      if (server >= 0) ::close(server);
      finished_ = true;
      return;
    }
    const int one = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<std::byte> buf(64 * 1024);
    const int from[2] = {client, server}, to[2] = {server, client};
    while (!stop_ && std::chrono::steady_clock::now() < end) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(p, 2, 50) <= 0) continue;
      bool closed = false;
      for (int d = 0; d < 2 && !closed; ++d) {
        if (p[d].revents == 0) continue;
        const ssize_t n = ::recv(from[d], buf.data(), buf.size(), 0);
        if (n <= 0) {
          closed = true;
          break;
        }
        {
          std::lock_guard lock(mu_);
          const std::uint64_t at = forwarded_[d];
          if (armed_[d] && flip_at_[d] >= at && flip_at_[d] < at + static_cast<std::uint64_t>(n)) {
            buf[flip_at_[d] - at] ^= std::byte{1};
            armed_[d] = false;
            done_[d] = true;
          }
          forwarded_[d] += static_cast<std::uint64_t>(n);
          if (d == 0) recorded_.insert(recorded_.end(), buf.begin(), buf.begin() + n);
        }
        for (ssize_t off = 0; off < n;) {
          const ssize_t w =
              ::send(to[d], buf.data() + off, static_cast<std::size_t>(n - off), MSG_NOSIGNAL);
          if (w <= 0) {
            closed = true;
            break;
          }
          off += w;
        }
      }
      if (closed) break;
    }
    ::close(client);
    ::close(server);
    finished_ = true;
  }

  std::uint16_t target_, port_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false}, finished_{false};
  mutable std::mutex mu_;
  std::uint64_t forwarded_[2] = {0, 0}, flip_at_[2] = {0, 0};
  bool armed_[2] = {false, false}, done_[2] = {false, false};
  std::vector<std::byte> recorded_;
  std::thread thread_;
};

}  // namespace distgraph::test

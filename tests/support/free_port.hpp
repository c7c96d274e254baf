// Test helpers: free TCP ports on 127.0.0.1, held until servers take them; a loopback
// ip_config written on such ports; whether anything listens on a port.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace distgraph::test {

/// `count` consecutive TCP ports on 127.0.0.1, each held by a bound (not listening) socket
/// until release(): parallel tests never pick the same ones, and connects to them are
/// refused meanwhile. A server binds them once release() is called. The one way the tests
/// find free ports.
class PortBlock {
 public:
  explicit PortBlock(int count = 1) {
    for (int attempt = 0; attempt < 200; ++attempt) {
      std::vector<int> fds;
      const int first = bind_port(0);
      if (first < 0) continue;
      const std::uint16_t base = local_port(first);
      fds.push_back(first);
      bool ok = base + count - 1 <= 65535;
      for (int i = 1; ok && i < count; ++i) {
        const int fd = bind_port(static_cast<std::uint16_t>(base + i));
        if (fd < 0)
          ok = false;
        else
          fds.push_back(fd);
      }
      if (ok) {
        base_ = base;
        fds_ = fds;
        return;
      }
      for (int fd : fds) ::close(fd);
    }
    throw std::runtime_error("PortBlock: no run of free ports found");
  }
  ~PortBlock() { release(); }
  PortBlock(PortBlock&& other) noexcept : base_(other.base_), fds_(std::exchange(other.fds_, {})) {}
  PortBlock& operator=(PortBlock&& other) noexcept {
    if (this != &other) {
      release();
      base_ = other.base_;
      fds_ = std::exchange(other.fds_, {});
    }
    return *this;
  }
  PortBlock(const PortBlock&) = delete;
  PortBlock& operator=(const PortBlock&) = delete;

  /// The first port of the block (the only one of a PortBlock(1)).
  std::uint16_t base() const noexcept { return base_; }
  /// Unbinds every port, so servers can listen on them.
  void release() noexcept {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
  }

 private:
  static int bind_port(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    // No SO_REUSEADDR: Linux lets two sockets that both set it bind one port while neither
    // listens, so another block (or a server) could take a port this one holds.
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  static std::uint16_t local_port(int fd) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
  }
  std::uint16_t base_ = 0;
  std::vector<int> fds_;
};

/// The ports of an ip_config written by write_loopback_ip_config, held until release()
/// (or until this goes away), so that nothing else takes them before the servers do.
struct LoopbackIpConfig {
  std::vector<std::uint16_t> bases;  ///< machine m listens on bases[m] and the ports after it
  std::vector<PortBlock> blocks;     ///< one per machine

  /// Frees every machine's ports for its servers.
  void release() noexcept {
    for (auto& b : blocks) b.release();
  }
};

/// Writes an ip_config of `machines` machines on 127.0.0.1 to `path`, machine m on a block
/// of `ports_per_machine` free ports (one per server), all distinct. The ports stay held
/// until the result's release() or its end. Throws std::runtime_error when the file cannot
/// be written.
inline LoopbackIpConfig write_loopback_ip_config(const std::filesystem::path& path, int machines,
                                                 int ports_per_machine) {
  LoopbackIpConfig config;
  std::string text;
  for (int m = 0; m < machines; ++m) {
    config.blocks.emplace_back(ports_per_machine);
    config.bases.push_back(config.blocks.back().base());
    text += "127.0.0.1 " + std::to_string(config.bases.back()) + "   # machine " +
            std::to_string(m) + "\n";
  }
  std::ofstream f(path, std::ios::trunc);
  f << text;
  if (!f.flush()) throw std::runtime_error("cannot write " + path.string());
  return config;
}

/// Whether a connection to 127.0.0.1:`port` is accepted (something listens there).
inline bool port_listening(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace distgraph::test

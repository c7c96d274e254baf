// A loopback cluster's files: an ip_config.txt of free 127.0.0.1 port blocks, one machine
// per partition, and a secret. What `distgraph train` and `distgraph infer` start without a
// cluster, and what benchmarks and tests of real server processes use.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/runtime/environment.hpp"
#include "distgraph/runtime/launcher.hpp"

namespace distgraph {

/// A port p with p .. p + count - 1 free on 127.0.0.1 (none in `taken`, which gets them).
/// Throws IoError when no such block turns up.
inline std::uint16_t free_port_block(int count, std::vector<std::uint16_t>& taken) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    const std::uint16_t p = detail::free_local_port();
    if (p == 0 || p + count > 65535) continue;
    bool ok = true;
    for (int k = 0; k < count && ok; ++k) {
      const auto q = static_cast<std::uint16_t>(p + k);
      for (auto t : taken) ok = ok && t != q;
      if (k > 0 && ok) {
        // free_local_port checked the first; bind-test the rest of the block.
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(q);
        ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        if (fd >= 0) ::close(fd);
      }
    }
    if (!ok) continue;
    for (int k = 0; k < count; ++k) taken.push_back(static_cast<std::uint16_t>(p + k));
    return p;
  }
  throw IoError("127.0.0.1", "no block of free ports for the loopback cluster");
}

/// A fresh random secret in `path`, readable by this user only. Throws IoError.
inline void write_secret(const std::filesystem::path& path) {
  std::random_device rd;
  std::string s;
  const char* hex = "0123456789abcdef";
  for (int i = 0; i < 64; ++i) s += hex[rd() % 16];
  std::filesystem::remove(path);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) throw IoError(path.string(), "cannot create the secret file");
  const bool ok = ::write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size());
  ::close(fd);
  if (!ok) throw IoError(path.string(), "cannot write the secret file");
}

/// Writes `dir`/ip_config.txt (machine i = partition i on 127.0.0.1, `servers` ports each)
/// and `dir`/secret, and returns launch options naming them with `part_config`, `servers`
/// and `trainers` per machine, and the environment's TLS settings (read_tls_environment:
/// TLS with a key from the secret unless DISTGRAPH_NO_TLS=1); the caller adds the
/// programs. Throws IoError, InvalidArgument for a malformed TLS variable.
inline LaunchOptions loopback_launch(const std::filesystem::path& dir,
                                     const std::filesystem::path& part_config,
                                     std::int64_t machines, std::int32_t servers,
                                     std::int32_t trainers) {
  std::vector<std::uint16_t> taken;
  std::string text = "# a loopback cluster: one machine per partition\n";
  for (std::int64_t m = 0; m < machines; ++m)
    text += "127.0.0.1 " + std::to_string(free_port_block(servers, taken)) + "\n";
  LaunchOptions lo;
  lo.ip_config = dir / "ip_config.txt";
  lo.secret_file = dir / "secret";
  {
    std::ofstream f(lo.ip_config, std::ios::trunc);
    f << text;
    if (!f.flush()) throw IoError(lo.ip_config.string(), "cannot write");
  }
  write_secret(lo.secret_file);
  // DISTGRAPH_NO_TLS and DISTGRAPH_TLS_*, which the processes inherit, hold for the
  // launcher's own connections too (else its shutdown would speak another mode).
  lo.tls = read_tls_environment();
  lo.part_config = part_config;
  lo.servers = servers;
  lo.trainers = trainers;
  return lo;
}

}  // namespace distgraph

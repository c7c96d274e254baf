// Endpoint: a server's host and TCP port, as listed in ip_config.txt.
#pragma once

#include <cstdint>
#include <string>

namespace distgraph {

/// Where a server listens. `host` is an IPv4/IPv6 literal or a name resolved at connect.
struct Endpoint {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;

  /// "127.0.0.1:30050" or "[::1]:30050".
  std::string to_string() const {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  }
};

}  // namespace distgraph

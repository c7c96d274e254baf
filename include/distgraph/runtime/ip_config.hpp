// ip_config.txt: the machines of a cluster, one "IP [PORT]" per line, as DGL writes it.
#pragma once

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/transport/endpoint.hpp"

namespace distgraph {

/// Port a machine's first server uses when its line gives none (DGL's default).
inline constexpr std::uint16_t default_server_port = 30050;

/// One machine of the cluster: its address and the port of its server 0 (server s
/// listens on port + s).
struct MachineEntry {
  std::string ip;
  std::uint16_t port = default_server_port;
  int line = 0;  ///< line number in the file, for messages
};

/// The machines of a cluster; machine i serves partition i.
struct IpConfig {
  std::filesystem::path path;
  std::vector<MachineEntry> machines;

  std::int32_t num_machines() const noexcept { return static_cast<std::int32_t>(machines.size()); }
  /// Endpoint of server `server_id` of machine `machine`.
  Endpoint server_endpoint(std::int32_t machine, std::int32_t server_id) const {
    const auto& m = machines.at(static_cast<std::size_t>(machine));
    return {m.ip, static_cast<std::uint16_t>(m.port + server_id)};
  }
  /// Every server, machine-major: index m * servers_per_machine + s.
  std::vector<Endpoint> all_servers(std::int32_t servers_per_machine) const {
    std::vector<Endpoint> out;
    for (std::int32_t m = 0; m < num_machines(); ++m)
      for (std::int32_t s = 0; s < servers_per_machine; ++s) out.push_back(server_endpoint(m, s));
    return out;
  }
};

/// True for an IPv4 or IPv6 literal.
inline bool is_ip_literal(const std::string& s) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, s.c_str(), buf) == 1 || ::inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

/// Parses ip_config text. Each non-blank line after removing a `#` comment is `IP` or
/// `IP PORT`. Throws FormatError "<file>:<line>: ..." for a bad address, a bad port
/// (not 1-65535, or too close to 65535 for `servers_per_machine` servers), an extra
/// field, a duplicate machine, two machines whose server port ranges overlap on one
/// address, or an empty file.
inline IpConfig parse_ip_config(const std::string& text, const std::filesystem::path& path,
                                std::int32_t servers_per_machine = 1) {
  IpConfig cfg;
  cfg.path = path;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  auto fail = [&](const std::string& what) {
    throw FormatError(path.string() + ":" + std::to_string(lineno), what);
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream fields(line);
    std::string ip, port_text, extra;
    if (!(fields >> ip)) continue;
    MachineEntry m{ip, default_server_port, lineno};
    if (!is_ip_literal(ip)) fail("'" + ip + "' is not an IPv4 or IPv6 address");
    if (fields >> port_text) {
      std::size_t used = 0;
      long port = -1;
      try {
        port = std::stol(port_text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != port_text.size() || port < 1 || port > 65535)
        fail("port '" + port_text + "'; expected an integer in [1, 65535]");
      if (port + servers_per_machine - 1 > 65535)
        fail("port " + port_text + " leaves no room for " + std::to_string(servers_per_machine) +
             " servers (ports port .. port + servers - 1)");
      m.port = static_cast<std::uint16_t>(port);
    }
    if (fields >> extra) fail("unexpected field '" + extra + "'; expected 'IP [PORT]'");
    for (const auto& other : cfg.machines)
      if (other.ip == m.ip && m.port < other.port + servers_per_machine &&
          other.port < m.port + servers_per_machine)
        fail(m.ip + " port " + std::to_string(m.port) + " collides with line " +
             std::to_string(other.line) + " (" + other.ip + " port " + std::to_string(other.port) +
             ", " + std::to_string(servers_per_machine) + " server(s) each)");
    cfg.machines.push_back(std::move(m));
  }
  if (cfg.machines.empty()) throw FormatError(path.string(), "no machines listed");
  return cfg;
}

/// Reads and parses `path` (see parse_ip_config). Throws IoError when unreadable.
inline IpConfig read_ip_config(const std::filesystem::path& path,
                               std::int32_t servers_per_machine = 1) {
  std::ifstream in(path);
  if (!in) throw IoError(path.string(), "cannot open the ip config");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_ip_config(ss.str(), path, servers_per_machine);
}

/// True when `ip` names this computer: loopback, or an address of one of its interfaces.
inline bool is_local_address(const std::string& ip) {
  in_addr a4{};
  in6_addr a6{};
  if (::inet_pton(AF_INET, ip.c_str(), &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127) return true;
  if (::inet_pton(AF_INET6, ip.c_str(), &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6)) return true;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (i->ifa_addr->sa_family == AF_INET)
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    else if (i->ifa_addr->sa_family == AF_INET6)
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, buf,
                  sizeof buf);
    found = ip == buf;
  }
  ::freeifaddrs(list);
  return found;
}

/// Machines of `ip` on this computer (is_local_address): how many of a job's machines
/// share its cores, all of them on a loopback cluster.
inline std::int32_t local_machine_count(const IpConfig& ip) {
  std::int32_t n = 0;
  for (const auto& m : ip.machines) n += is_local_address(m.ip) ? 1 : 0;
  return n;
}

}  // namespace distgraph

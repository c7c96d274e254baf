// Test helper: removes the shared-memory folders a cluster's main servers made, so that the
// suite leaves nothing in /dev/shm (a test that SIGKILLs a server leaves its folder, as a
// crashed job would; the next server on the same port would delete it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/runtime/server_process.hpp"

namespace distgraph::test {

/// Removes the storage folder of graph `name` for a machine listening on each of `ports`.
inline void remove_machine_storage(const std::string& name,
                                   const std::vector<std::uint16_t>& ports) {
  for (const auto port : ports) {
    std::error_code ec;
    std::filesystem::remove_all(machine_storage_dir(name, MachineEntry{"127.0.0.1", port, 0}), ec);
  }
}

/// The same for every machine of `ip`.
inline void remove_machine_storage(const std::string& name, const IpConfig& ip) {
  std::vector<std::uint16_t> ports;
  for (const auto& m : ip.machines) ports.push_back(m.port);
  remove_machine_storage(name, ports);
}

}  // namespace distgraph::test

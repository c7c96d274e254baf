// Who meets whom: the object collectives run on, their error, and the rendezvous options
// (PyTorch's MASTER_ADDR / RANK / WORLD_SIZE) that gloo and the trainers' ring share.
#pragma once

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <torch/version.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#if defined(TORCH_VERSION_MAJOR) && TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

#include "distgraph/core/error.hpp"

namespace distgraph {

#if defined(TORCH_VERSION_MAJOR) && TORCH_VERSION_MAJOR >= 2
/// The object collectives run on. Since libtorch 2.0 the gloo and NCCL groups are
/// c10d::Backend objects (a c10d::ProcessGroup wraps them for Python's dispatch); before,
/// they were c10d::ProcessGroup themselves. Both offer the same getRank, getSize,
/// allreduce, broadcast, allgather and barrier, which is all distgraph uses.
using CollectiveGroup = c10d::Backend;
#else
using CollectiveGroup = c10d::ProcessGroup;
#endif

/// A collective (all-reduce, broadcast, all-gather) failed or timed out: a peer died, left
/// or never joined. `what()` names the operation and this rank.
class CollectiveError : public Error {
 public:
  explicit CollectiveError(const std::string& what) : Error(what) {}
};

/// Where and how trainers meet (PyTorch's MASTER_ADDR / MASTER_PORT / RANK / WORLD_SIZE).
struct RendezvousOptions {
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 29500;  ///< rank 0 listens here; 0 picks a free port
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  /// Bounds the rendezvous and every later collective (no wait is forever).
  std::chrono::milliseconds timeout{60000};
  /// Address gloo binds for its connections and advertises to the other trainers ("" =
  /// the interface below, else the address the host's name resolves to, as PyTorch does).
  /// A launched trainer binds its machine's ip config address (gloo_binding_from_env).
  std::string hostname;
  /// Network interface for gloo (PyTorch's GLOO_SOCKET_IFNAME); used when hostname is "".
  std::string interface;
};

/// Fills rank, world_size, master address and port from PyTorch's environment variables
/// where set; the rest stays as given. Throws InvalidArgument for a malformed value.
inline RendezvousOptions rendezvous_from_env(RendezvousOptions base) {
  const auto num = [](const char* name, long long lo, long long hi, long long fallback) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    char* end = nullptr;
    const long long x = std::strtoll(v, &end, 10);
    if (*end != '\0' || x < lo || x > hi)
      throw InvalidArgument(std::string(name) + "='" + v + "': expected an integer in [" +
                            std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  };
  if (const char* a = std::getenv("MASTER_ADDR"); a != nullptr && *a != '\0') base.master_addr = a;
  base.master_port = static_cast<std::uint16_t>(num("MASTER_PORT", 0, 65535, base.master_port));
  base.world_size = static_cast<std::int32_t>(num("WORLD_SIZE", 1, 1 << 20, base.world_size));
  base.rank = static_cast<std::int32_t>(num("RANK", 0, base.world_size - 1, base.rank));
  if (const char* i = std::getenv("GLOO_SOCKET_IFNAME"); i != nullptr && *i != '\0')
    base.interface = i;
  return base;
}

namespace detail {

inline void check_rank(std::int32_t rank, std::int32_t world_size, const char* who) {
  if (world_size < 1)
    throw InvalidArgument(std::string(who) + ": world_size " + std::to_string(world_size) +
                          "; expected >= 1");
  if (rank < 0 || rank >= world_size)
    throw IdOutOfRange(std::string(who) + " rank", rank, 0, world_size);
}

/// Runs `op` and waits for its work, turning c10's exceptions into CollectiveError; a
/// group's own CollectiveError (the ring's) gets `what` in front, so one group's failures
/// still say which collective failed.
template <class Op>
void run_collective(const char* what, std::int32_t rank, std::chrono::milliseconds timeout,
                    Op&& op) {
  try {
    auto work = op();
    work->wait(timeout);
  } catch (const CollectiveError& e) {
    throw CollectiveError(std::string(what) + ": " + e.what());
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (const auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    throw CollectiveError(std::string(what) + " on trainer " + std::to_string(rank) + ": " + msg +
                          "; expected every trainer to join within " +
                          std::to_string(timeout.count()) + " ms");
  }
}

inline bool is_loopback_address(const std::string& a) {
  return a.rfind("127.", 0) == 0 || a == "::1" || a == "localhost";
}

/// The first address `name` resolves to, "" when it resolves to none.
inline std::string resolve_address(const std::string& name) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &list) != 0 || list == nullptr) return {};
  char buf[INET6_ADDRSTRLEN] = {};
  if (list->ai_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(list->ai_addr)->sin_addr, buf, sizeof buf);
  else if (list->ai_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(list->ai_addr)->sin6_addr, buf,
                sizeof buf);
  ::freeaddrinfo(list);
  return buf;
}

/// True when network interface `name` is a loopback interface (IFF_LOOPBACK).
inline bool is_loopback_interface(const std::string& name) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool loopback = false;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next)
    loopback = loopback || (name == i->ifa_name && (i->ifa_flags & IFF_LOOPBACK) != 0);
  ::freeifaddrs(list);
  return loopback;
}

}  // namespace detail

}  // namespace distgraph

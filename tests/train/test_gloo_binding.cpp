// Where a trainer's gloo group binds (gloo_binding): the ip config's address of its machine,
// and a clear refusal of a loopback choice when the job spans hosts. Nothing is bound here;
// 198.51.100.0/24 (TEST-NET-2) is never an address of this computer.
#include <torch/types.h>  // before Catch: c10's logging defines a CHECK that Catch's replaces

#include <catch2/catch.hpp>
#include <string>

#include "distgraph/runtime/ip_config.hpp"
#include "distgraph/train/allreduce.hpp"

namespace test_train_gloo_binding {

using namespace distgraph;

namespace {

RendezvousOptions rendezvous(const std::string& master) {
  RendezvousOptions o;
  o.master_addr = master;
  o.rank = 1;
  o.world_size = 2;
  return o;
}

}  // namespace

TEST_CASE("a loopback cluster's trainers bind their machine's loopback address", "[train][gloo]") {
  const IpConfig ip = parse_ip_config("127.0.0.1 30050\n127.0.0.1 30060\n", "ip_config.txt");
  const GlooBinding b = gloo_binding(rendezvous("127.0.0.1"), &ip, 1);
  CHECK(b.hostname == "127.0.0.1");
  CHECK(b.interface.empty());
  CHECK(b.other_host.empty());
}

TEST_CASE(
    "a trainer refuses a loopback binding when the job spans hosts, naming where it came "
    "from",
    "[train][gloo]") {
  const IpConfig ip = parse_ip_config("127.0.0.1 30050\n198.51.100.77 30050\n", "ip_config.txt");
  SECTION("its machine's ip config address is loopback") {
    CHECK_THROWS_WITH(gloo_binding(rendezvous("127.0.0.1"), &ip, 0),
                      Catch::Contains("machine 0's address 127.0.0.1 (ip_config.txt line 1) is a "
                                      "loopback address, but the job spans hosts (198.51.100.77 "
                                      "is another host)"));
  }
  SECTION("GLOO_SOCKET_IFNAME names the loopback interface") {
    RendezvousOptions o = rendezvous("198.51.100.77");
    o.interface = "lo";
    CHECK_THROWS_AS(gloo_binding(o, &ip, 0), CollectiveError);
    CHECK_THROWS_WITH(gloo_binding(o, &ip, 0),
                      Catch::Contains("GLOO_SOCKET_IFNAME=lo names a loopback interface"));
  }
}

TEST_CASE("a trainer whose machine's address is not this host's is told which line to fix",
          "[train][gloo]") {
  const IpConfig ip = parse_ip_config("198.51.100.77 30050\n127.0.0.1 30050\n", "ip_config.txt");
  CHECK_THROWS_WITH(gloo_binding(rendezvous("198.51.100.77"), &ip, 0),
                    Catch::Contains("machine 0's address 198.51.100.77 (ip_config.txt line 1) is "
                                    "not an address of this host"));
}

TEST_CASE(
    "without an ip config a remote master makes the host name's address the choice, "
    "refused when it is loopback",
    "[train][gloo]") {
  // What this host's name resolves to decides; both outcomes are checked where they occur.
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string resolved = distgraph::detail::resolve_address(host);
  INFO("host name " << host << " resolves to '" << resolved << "'");
  if (distgraph::detail::is_loopback_address(resolved)) {
    CHECK_THROWS_WITH(gloo_binding(rendezvous("198.51.100.77"), nullptr, 0),
                      Catch::Contains("this host's name '" + std::string(host) + "' resolves to " +
                                      resolved + ", a loopback address, but the job spans hosts"));
  } else {
    const GlooBinding b = gloo_binding(rendezvous("198.51.100.77"), nullptr, 0);
    CHECK(b.hostname.empty());  // PyTorch's default device: the name's address
    CHECK(b.other_host == "198.51.100.77");
  }
  CHECK(gloo_binding(rendezvous("127.0.0.1"), nullptr, 0).hostname == "127.0.0.1");
}

}  // namespace test_train_gloo_binding

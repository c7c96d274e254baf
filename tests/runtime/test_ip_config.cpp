// The ip_config's view of this computer: which of its machines are local.
#include <catch2/catch.hpp>

#include "distgraph/runtime/ip_config.hpp"

namespace test_runtime_ip_config {

using namespace distgraph;

TEST_CASE("local_machine_count counts the ip_config's machines on this computer", "[launch]") {
  // Loopback addresses are this computer; 192.0.2.0/24 (TEST-NET-1) never is, and nothing
  // is sent anywhere: the interfaces' addresses are only listed.
  const IpConfig loop = parse_ip_config("127.0.0.1 30050\n127.0.0.2 30050\n::1 30060\n", "ip");
  CHECK(local_machine_count(loop) == 3);
  const IpConfig mixed = parse_ip_config("127.0.0.1 30050\n192.0.2.7 30050\n", "ip");
  CHECK(local_machine_count(mixed) == 1);
  CHECK(is_local_address("127.0.0.1"));
  CHECK_FALSE(is_local_address("192.0.2.7"));
}

}  // namespace test_runtime_ip_config

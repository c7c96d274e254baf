// Deprecated path: the header is distgraph/distributed/kv_client.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/distributed/kv_client.hpp"
#include "distgraph/distributed/kv_client.hpp"

// Deprecated path: the header is distgraph/distributed/node_split.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/distributed/node_split.hpp"
#include "distgraph/distributed/node_split.hpp"

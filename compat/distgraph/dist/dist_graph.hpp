// Deprecated path: the header is distgraph/distributed/dist_graph.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/distributed/dist_graph.hpp"
#include "distgraph/distributed/dist_graph.hpp"

// Deprecated path: the header is distgraph/distributed/graph_concepts.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/distributed/graph_concepts.hpp"
#include "distgraph/distributed/graph_concepts.hpp"

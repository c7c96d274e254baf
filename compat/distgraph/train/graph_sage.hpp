// Deprecated path: the header is distgraph/nn/graph_sage.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/graph_sage.hpp"
#include "distgraph/nn/graph_sage.hpp"

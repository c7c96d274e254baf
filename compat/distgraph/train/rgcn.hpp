// Deprecated path: the header is distgraph/nn/rgcn.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/rgcn.hpp"
#include "distgraph/nn/rgcn.hpp"

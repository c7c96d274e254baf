// Deprecated path: the header is distgraph/nn/gat.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/gat.hpp"
#include "distgraph/nn/gat.hpp"

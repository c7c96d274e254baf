// Deprecated path: the header is distgraph/nn/gcn_conv.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/gcn_conv.hpp"
#include "distgraph/nn/gcn_conv.hpp"

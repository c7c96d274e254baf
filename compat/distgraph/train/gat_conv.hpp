// Deprecated path: the header is distgraph/nn/gat_conv.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/gat_conv.hpp"
#include "distgraph/nn/gat_conv.hpp"

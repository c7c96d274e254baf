// Deprecated path: the header is distgraph/nn/sage_conv.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/sage_conv.hpp"
#include "distgraph/nn/sage_conv.hpp"

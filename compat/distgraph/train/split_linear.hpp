// Deprecated path: the header is distgraph/nn/split_linear.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/split_linear.hpp"
#include "distgraph/nn/split_linear.hpp"

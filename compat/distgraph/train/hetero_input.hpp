// Deprecated path: the header is distgraph/nn/hetero_input.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/hetero_input.hpp"
#include "distgraph/nn/hetero_input.hpp"

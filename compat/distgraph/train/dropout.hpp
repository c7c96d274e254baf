// Deprecated path: the header is distgraph/nn/dropout.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/dropout.hpp"
#include "distgraph/nn/dropout.hpp"

// Deprecated path: the header is distgraph/nn/node_model.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/node_model.hpp"
#include "distgraph/nn/node_model.hpp"

// Deprecated path: the header is distgraph/loaders/node_data_loader.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/loaders/node_data_loader.hpp"
#include "distgraph/loaders/node_data_loader.hpp"

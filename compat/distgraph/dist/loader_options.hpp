// Deprecated path: the header is distgraph/loaders/loader_options.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/loaders/loader_options.hpp"
#include "distgraph/loaders/loader_options.hpp"

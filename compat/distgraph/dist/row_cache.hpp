// Deprecated path: the header is distgraph/distributed/row_cache.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/distributed/row_cache.hpp"
#include "distgraph/distributed/row_cache.hpp"

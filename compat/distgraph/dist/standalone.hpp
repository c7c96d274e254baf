// Deprecated path: the header is distgraph/distributed/standalone.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/distributed/standalone.hpp"
#include "distgraph/distributed/standalone.hpp"

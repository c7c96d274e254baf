// Deprecated path: the header is distgraph/tasks/link_prediction.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/tasks/link_prediction.hpp"
#include "distgraph/tasks/link_prediction.hpp"

// Deprecated path: the header is distgraph/tasks/run_log.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/tasks/run_log.hpp"
#include "distgraph/tasks/run_log.hpp"

// Deprecated path: the header is distgraph/tasks/training_run.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/tasks/training_run.hpp"
#include "distgraph/tasks/training_run.hpp"

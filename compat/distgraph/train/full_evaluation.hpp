// Deprecated path: the header is distgraph/tasks/full_evaluation.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/tasks/full_evaluation.hpp"
#include "distgraph/tasks/full_evaluation.hpp"

// Deprecated path: the header is distgraph/tasks/hetero_node_classification.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/tasks/hetero_node_classification.hpp"
#include "distgraph/tasks/hetero_node_classification.hpp"

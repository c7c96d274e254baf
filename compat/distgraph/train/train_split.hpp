// Deprecated path: the header is distgraph/tasks/train_split.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/tasks/train_split.hpp"
#include "distgraph/tasks/train_split.hpp"

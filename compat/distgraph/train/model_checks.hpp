// Deprecated path: the header is distgraph/nn/model_checks.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/model_checks.hpp"
#include "distgraph/nn/model_checks.hpp"

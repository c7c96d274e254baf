// Deprecated path: the header is distgraph/nn/typed_gather.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/typed_gather.hpp"
#include "distgraph/nn/typed_gather.hpp"

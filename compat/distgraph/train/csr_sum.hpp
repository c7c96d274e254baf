// Deprecated path: the header is distgraph/nn/csr_sum.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/csr_sum.hpp"
#include "distgraph/nn/csr_sum.hpp"

// Deprecated path: the header is distgraph/nn/hetero_block_tensors.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/nn/hetero_block_tensors.hpp"
#include "distgraph/nn/hetero_block_tensors.hpp"

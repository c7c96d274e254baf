// Deprecated path: the header is distgraph/infer/layerwise_inference.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/infer/layerwise_inference.hpp"
#include "distgraph/infer/layerwise_inference.hpp"

// Deprecated path: the header is distgraph/infer/trained_node_model.hpp now
// (API.md, "Renamed"); this one goes in the next release.
#pragma once

#pragma GCC warning "deprecated: include distgraph/infer/trained_node_model.hpp"
#include "distgraph/infer/trained_node_model.hpp"

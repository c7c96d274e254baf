// Checks every node model over blocks makes of its shape and dropout rates.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "distgraph/core/error.hpp"

namespace distgraph::detail {

/// Throws InvalidArgument naming `model` for a size below 1 or a dropout outside [0, 1).
inline void check_model_options(const std::string& model, std::int64_t in_feats,
                                std::int64_t hidden, std::int64_t num_classes,
                                std::int64_t num_layers, std::initializer_list<double> dropouts) {
  if (in_feats < 1 || hidden < 1 || num_classes < 1 || num_layers < 1)
    throw InvalidArgument(model + ": in_feats " + std::to_string(in_feats) + ", hidden " +
                          std::to_string(hidden) + ", num_classes " + std::to_string(num_classes) +
                          ", num_layers " + std::to_string(num_layers) + "; expected all >= 1");
  for (const double p : dropouts)
    if (!(p >= 0.0 && p < 1.0))
      throw InvalidArgument(model + ": dropout " + std::to_string(p) + "; expected [0, 1)");
}

}  // namespace distgraph::detail

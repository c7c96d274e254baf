// `--input rmat:SCALE[:EDGE_FACTOR]`: the R-MAT graphs `distgraph partition` generates.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "cli.hpp"
#include "distgraph/graph/generators.hpp"

namespace distgraph::cli {

/// The R-MAT options `spec` names (seed 0 becomes 1, as the generator's own default), or
/// nullopt when `spec` does not start with "rmat:". Throws UsageError for a malformed one.
inline std::optional<RmatOptions> parse_rmat_spec(const std::string& spec, std::uint64_t seed) {
  if (spec.rfind("rmat:", 0) != 0) return std::nullopt;
  RmatOptions r;
  const std::string rest = spec.substr(5);
  const auto colon = rest.find(':');
  try {
    r.scale = std::stoi(rest.substr(0, colon));
    if (colon != std::string::npos) r.edge_factor = std::stoi(rest.substr(colon + 1));
  } catch (const std::exception&) {
    throw UsageError("partition: --input '" + spec + "': expected rmat:SCALE[:EDGE_FACTOR]");
  }
  if (r.scale < 1 || r.scale > 30 || r.edge_factor < 1 || r.edge_factor > 1024)
    throw UsageError("partition: --input '" + spec +
                     "': scale must be in [1, 30] and edge factor in [1, 1024]");
  r.seed = seed == 0 ? 1 : seed;
  return r;
}

}  // namespace distgraph::cli

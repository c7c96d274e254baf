// SamplerSpec: a sampler as a request names it, by wire name and parameter block.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace distgraph {

/// Which sampler a sample_neighbors call runs, in the form that crosses the wire: the
/// sampler's `wire_name` (a stable name, unique within a composition's sampler set) and
/// its parameter block, which only that sampler encodes (its `spec(...)`) and decodes
/// (its `at_site`, length-checked). The default is uniform sampling without replacement.
struct SamplerSpec {
  std::string name = "uniform";
  std::vector<std::byte> params = {};

  friend bool operator==(const SamplerSpec&, const SamplerSpec&) = default;
};

/// The spec of a sampler that takes no parameters.
template <class S>
SamplerSpec sampler_spec() {
  return SamplerSpec{std::string(S::wire_name), {}};
}

}  // namespace distgraph

// Must not compile: sample_neighbors_local is given a sampler with the tag and sample() but
// no validate(), so it is not a Sampler. With DISTGRAPH_COMPILE_FAIL_FIXED it is one.
#include <cstdint>
#include <span>

#include "distgraph/sampling/sample_local.hpp"

namespace {

// Declarations are enough: nothing is linked, only compiled.
struct TrustingSampler {
  using policy_category = distgraph::sampler_tag;

#ifdef DISTGRAPH_COMPILE_FAIL_FIXED
  void validate(const distgraph::LocalGraphView& g) const;
#endif
  void sample(const distgraph::LocalGraphView& g, std::span<const std::int64_t> local_seeds,
              std::int64_t fanout, const distgraph::SampleKey& key, distgraph::Picks& picks) const;
};

}  // namespace

distgraph::Frontier sample(const distgraph::LocalGraphView& view,
                           std::span<const std::int64_t> seeds) {
  return distgraph::sample_neighbors_local(view, seeds, 10, distgraph::SampleKey{},
                                           TrustingSampler{});
}

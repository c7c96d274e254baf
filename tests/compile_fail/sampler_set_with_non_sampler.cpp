// Must not compile: a sampler set is extended with a type that has the tag and sample() but
// no validate(), and the first error must be the one-line reason Sampler.md promises ("not
// a Sampler"). With DISTGRAPH_COMPILE_FAIL_FIXED it is a DistributedSampler.
#include <cstdint>
#include <span>

#include "distgraph/sampling/sampler_set.hpp"

namespace {

// Declarations are enough: nothing is linked, only compiled.
struct LowestDegreeFirst {
  using policy_category = distgraph::sampler_tag;
  static constexpr const char* wire_name = "lowest_degree_first";

#ifdef DISTGRAPH_COMPILE_FAIL_FIXED
  void validate(const distgraph::LocalGraphView& g) const;
#endif
  void sample(const distgraph::LocalGraphView& g, std::span<const std::int64_t> local_seeds,
              std::int64_t fanout, const distgraph::SampleKey& key, distgraph::Picks& picks) const;
  static LowestDegreeFirst at_site(distgraph::HeadReader& params, distgraph::SamplerSite& site);
};

}  // namespace

using Samplers = distgraph::BuiltinSamplers::with<LowestDegreeFirst>;
static_assert(Samplers::contains("lowest_degree_first"));

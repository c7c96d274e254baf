// SamplerSet: the compile-time list of samplers a composition's servers and trainers share.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "distgraph/core/error.hpp"
#include "distgraph/sampling/concepts.hpp"
#include "distgraph/sampling/full_neighbor_sampler.hpp"
#include "distgraph/sampling/labor_sampler.hpp"
#include "distgraph/sampling/per_relation_sampler.hpp"
#include "distgraph/sampling/sampler_spec.hpp"
#include "distgraph/sampling/uniform_replace_sampler.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "distgraph/sampling/weighted_sampler.hpp"

namespace distgraph {

namespace detail {
template <std::size_t N>
constexpr bool distinct_names(const std::array<std::string_view, N>& names) {
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = i + 1; j < N; ++j)
      if (names[i] == names[j]) return false;
  return true;
}
}  // namespace detail

template <DistributedSampler... S>
struct SamplerSet;

namespace detail {
// A type named in SamplerSet<...>::with, checked one requirement at a time so that a type
// that misses one fails with one line saying which (docs/concepts/Sampler.md), not with
// the concept's whole conjunction.
template <class S>
struct CheckedSampler {
  static_assert(TaggedSampler<S>,
                "not a Sampler: opt in with `using policy_category = distgraph::sampler_tag;`");
  static_assert(!TaggedSampler<S> || Sampler<S>,
                "not a Sampler: it needs a copy constructor, `validate(const LocalGraphView&) "
                "const` and `sample(view, local_seeds, fanout, key, picks) const`");
  static_assert(!Sampler<S> || DistributedSampler<S>,
                "not a DistributedSampler: it needs `static constexpr wire_name` and "
                "`static S at_site(HeadReader& params, SamplerSite& site)`");
  static constexpr bool ok = DistributedSampler<S>;
};
// The set with More appended, once every one of them is checked (the set alone otherwise:
// the static_asserts above have said why, and nothing else need fail after them).
template <bool Ok, class Set, class... More>
struct AppendSamplers {
  using type = Set;
};
template <DistributedSampler... S, class... More>
struct AppendSamplers<true, SamplerSet<S...>, More...> {
  using type = SamplerSet<S..., More...>;
};
}  // namespace detail

/// The samplers a composition can run, known at compile time on both ends of the wire: a
/// request names one by its wire name and the server dispatches over this list (no closed
/// enum, no virtual call per seed). `SamplerSet<A, B>::with<C>` appends user samplers.
template <DistributedSampler... S>
struct SamplerSet {
 private:
  using first_t = std::tuple_element_t<0, std::tuple<S...>>;

 public:
  static constexpr std::array<std::string_view, sizeof...(S)> names{
      std::string_view(S::wire_name)...};
  static_assert(detail::distinct_names(names), "SamplerSet: two samplers share a wire_name");

  /// This set with `More...` appended; a type that is not a DistributedSampler fails to
  /// compile with one line naming the requirement it misses.
  template <class... More>
  using with =
      typename detail::AppendSamplers<(detail::CheckedSampler<More>::ok && ...), SamplerSet,
                                      More...>::type;

  /// Whether a sampler named `name` is in the set.
  static constexpr bool contains(std::string_view name) {
    for (auto n : names)
      if (n == name) return true;
    return false;
  }
  /// Whether every sampler of set `Other` is in this one.
  template <class Other>
  static bool includes() {
    for (auto n : Other::names)
      if (!contains(n)) return false;
    return true;
  }
  /// "[uniform, full, ...]", for messages.
  static std::string describe() {
    std::string out = "[";
    for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + std::string(names[i]);
    return out + "]";
  }

  /// Rebuilds the sampler `spec` names at `site` from its parameters and calls
  /// `f(sampler)`. Throws ProtocolError naming `who` when the set has no such sampler or
  /// its parameters are malformed (the server's bad_request).
  template <class F>
  static auto visit(const SamplerSpec& spec, SamplerSite& site, F&& f,
                    const std::string& who = "sample_neighbors")
      -> decltype(f(std::declval<const first_t&>())) {
    return visit_from<0>(spec, site, f, who);
  }

 private:
  static ProtocolError unknown(const SamplerSpec& spec, const std::string& who) {
    return ProtocolError(who + ": sampler '" + spec.name + "' is not in this sampler set " +
                         describe() +
                         "; build servers and trainers with the same composition (distgraph "
                         "launch --server-program)");
  }
  template <class One>
  static One rebuild(const SamplerSpec& spec, SamplerSite& site) {
    HeadReader params(spec.params, "sampler '" + spec.name + "' parameters");
    One s = One::at_site(params, site);
    params.finish();
    return s;
  }
  template <std::size_t I, class F>
  static auto visit_from(const SamplerSpec& spec, SamplerSite& site, F& f, const std::string& who)
      -> decltype(f(std::declval<const first_t&>())) {
    if constexpr (I == sizeof...(S)) {
      throw unknown(spec, who);
    } else {
      using One = std::tuple_element_t<I, std::tuple<S...>>;
      if (spec.name == One::wire_name) return f(rebuild<One>(spec, site));
      return visit_from<I + 1>(spec, site, f, who);
    }
  }
};

/// The samplers distgraph ships: uniform, uniform_replace, full, weighted, per_relation,
/// labor.
using BuiltinSamplers = SamplerSet<UniformSampler, UniformReplaceSampler, FullNeighborSampler,
                                   WeightedSampler, PerRelationSampler, LaborSampler>;

/// Whether T is a SamplerSet.
template <class T>
inline constexpr bool is_sampler_set_v = false;
template <class... S>
inline constexpr bool is_sampler_set_v<SamplerSet<S...>> = true;

}  // namespace distgraph

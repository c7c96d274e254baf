// WeightedSampler: neighbour edges picked with probability proportional to an edge weight.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/sampling/concepts.hpp"
#include "distgraph/sampling/local_graph_view.hpp"
#include "distgraph/sampling/rng.hpp"
#include "distgraph/sampling/sampler_spec.hpp"

namespace distgraph {

/// Parameters of WeightedSampler.
struct WeightedOptions {
  bool replace = false;  ///< draw with replacement (exactly fanout picks per non-empty row)
};

/// Neighbour sampling biased by an unnormalised edge probability (DGL's
/// `sample_neighbors(prob=...)`). `probs[i]` belongs to the edge at position i of the
/// view's indices/edge_ids arrays (local edge position, not edge ID: positions are what
/// a row scan reads sequentially; gather a per-edge-ID feature through the view's
/// edge_ids once to get it). Edges with probability 0 are never picked.
///
/// Without replacement a seed gets min(fanout, positive edges) distinct edges by
/// exponential keys: each positive edge draws Exp(p_i) and the fanout smallest win, which
/// is Efraimidis & Spirakis' weighted random sampling A-ES (Inf. Proc. Letters 2006) in
/// log form. With replacement each of the fanout draws is a binary search in the row's
/// prefix sums. Either way O(degree) per seed plus O(fanout log degree). Fanout -1 (and,
/// without replacement, fanout >= positive edges) takes every positive edge in row order.
/// Copies share the probability array; thread-safe.
class WeightedSampler {
 public:
  using policy_category = sampler_tag;
  /// How requests name it (DistributedSampler). Its parameters: the name of a float32
  /// edge data tensor holding one probability per edge, and whether to draw with
  /// replacement; each partition lays the tensor out by its own edge positions.
  static constexpr std::string_view wire_name = "weighted";
  /// The request form: probabilities from edge data `prob` (e.g. "p" for edata "p").
  static SamplerSpec spec(const std::string& prob, bool replace = false) {
    HeadWriter w;
    w.put_string(prob).put(static_cast<std::uint8_t>(replace ? 1 : 0));
    return SamplerSpec{std::string(wire_name), w.take()};
  }
  /// Rebuilt where the partition lives, from its copy of edge data `prob` (cached per site
  /// and options, and rebuilt after a push to the tensor: SamplerSite::cached). Throws
  /// ProtocolError for malformed parameters, NotFound / DTypeError for a missing or non-float32
  /// tensor.
  static WeightedSampler at_site(HeadReader& params, SamplerSite& site) {
    const std::string prob = params.get_string(256);
    const std::uint8_t replace = params.get<std::uint8_t>();
    if (replace > 1)
      throw ProtocolError("weighted sampler: replace flag " + std::to_string(replace) +
                          "; expected 0 or 1");
    auto made = site.cached("weighted:" + prob + (replace ? "#r" : "#n"), [&] {
      WeightedOptions wo;
      wo.replace = replace == 1;
      return std::static_pointer_cast<const void>(
          std::make_shared<const WeightedSampler>(site.edge_values_by_position(prob), wo));
    });
    return *static_cast<const WeightedSampler*>(made.get());
  }

  /// Takes the probabilities (one per edge position). Throws InvalidArgument naming the
  /// first position whose probability is negative, NaN or infinite. O(edges), once.
  explicit WeightedSampler(Buffer<float> probs, WeightedOptions opts = {})
      : probs_(std::move(probs)), opts_(opts) {
    for (std::size_t i = 0; i < probs_.size(); ++i)
      if (!(probs_[i] >= 0.0f) || std::isinf(probs_[i]))
        throw InvalidArgument("edge probability at position " + std::to_string(i) + " is " +
                              std::to_string(probs_[i]) + "; expected finite and >= 0");
  }
  explicit WeightedSampler(std::vector<float> probs, WeightedOptions opts = {})
      : WeightedSampler(Buffer<float>(std::move(probs)), opts) {}

  const Buffer<float>& probs() const noexcept { return probs_; }
  const WeightedOptions& options() const noexcept { return opts_; }

  /// Throws ShapeError unless there is one probability per edge position of `g`. O(1).
  void validate(const LocalGraphView& g) const {
    if (static_cast<std::int64_t>(probs_.size()) != g.num_edges())
      throw ShapeError("edge probabilities", "length " + std::to_string(probs_.size()) +
                                                 "; expected " + std::to_string(g.num_edges()) +
                                                 " (one per edge position of the view)");
  }

  /// Appends the picks of each seed in `local_seeds` to `picks` (see Sampler). Does not
  /// throw except std::bad_alloc.
  void sample(const LocalGraphView& g, std::span<const std::int64_t> local_seeds,
              std::int64_t fanout, const SampleKey& key, Picks& picks) const {
    const std::uint64_t key_hash = hash_key(key);
    std::vector<std::pair<double, std::int64_t>> keyed;  // (key, position), reused per seed
    std::vector<double> prefix;
    for (const std::int64_t v : local_seeds) {
      const std::int64_t begin = g.row_begin(v), degree = g.degree(v);
      const float* p = probs_.data() + begin;
      std::int64_t positive = 0;
      for (std::int64_t i = 0; i < degree; ++i) positive += p[i] > 0.0f;
      if (fanout < 0 || (!opts_.replace && fanout >= positive) || positive == 0) {
        picks.counts.push_back(positive);
        for (std::int64_t i = 0; i < degree; ++i)
          if (p[i] > 0.0f) picks.positions.push_back(begin + i);
        continue;
      }
      picks.counts.push_back(fanout);
      SampleRng rng(key_hash, g.global_node(v));
      if (opts_.replace)
        draw_with_replacement(rng, p, begin, degree, fanout, prefix, picks);
      else
        draw_distinct(rng, p, begin, degree, fanout, keyed, picks);
    }
  }

 private:
  /// The `fanout` positive edges with the smallest Exp(p_i) keys; 0 < fanout < positive.
  static void draw_distinct(SampleRng& rng, const float* p, std::int64_t begin, std::int64_t degree,
                            std::int64_t fanout,
                            std::vector<std::pair<double, std::int64_t>>& keyed, Picks& picks) {
    keyed.clear();
    for (std::int64_t i = 0; i < degree; ++i)
      if (p[i] > 0.0f) keyed.emplace_back(-std::log(rng.uniform_open()) / p[i], begin + i);
    // Ties (probability ~2^-53) fall back to the position, so the result is deterministic.
    std::nth_element(keyed.begin(), keyed.begin() + (fanout - 1), keyed.end());
    for (std::int64_t i = 0; i < fanout; ++i)
      picks.positions.push_back(keyed[static_cast<std::size_t>(i)].second);
  }

  /// `fanout` independent draws by binary search in the row's prefix sums; fanout > 0 and
  /// the row has a positive edge.
  static void draw_with_replacement(SampleRng& rng, const float* p, std::int64_t begin,
                                    std::int64_t degree, std::int64_t fanout,
                                    std::vector<double>& prefix, Picks& picks) {
    prefix.resize(static_cast<std::size_t>(degree));
    double total = 0;
    std::int64_t last_positive = 0;
    for (std::int64_t i = 0; i < degree; ++i) {
      total += p[i];
      prefix[static_cast<std::size_t>(i)] = total;
      if (p[i] > 0.0f) last_positive = i;
    }
    for (std::int64_t k = 0; k < fanout; ++k) {
      // The first prefix above x: prefix[i-1] <= x < prefix[i] forces p[i] > 0. Rounding
      // can push x * total up to total; that draw goes to the last positive edge.
      const double x = rng.uniform() * total;
      const auto i = std::upper_bound(prefix.begin(), prefix.end(), x) - prefix.begin();
      picks.positions.push_back(begin + std::min<std::int64_t>(i, last_positive));
    }
  }

  Buffer<float> probs_;
  WeightedOptions opts_;
};

static_assert(DistributedSampler<WeightedSampler>);

}  // namespace distgraph

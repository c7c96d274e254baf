// custom_sampler: a sampler defined only here (each seed's `fanout` in-edges of largest
// weight), put in a composition, and one program that is both the servers and the
// trainers of a job: `custom_sampler PART_CONFIG` standalone, or
// `distgraph launch --server-program custom_sampler ... -- custom_sampler PART_CONFIG`.
// Rank 0 prints every pick and a digest of them; the same in both modes. Every trainer
// checks its picks against the rule (exit 1 when one breaks it).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "distgraph/runtime/initialize.hpp"

namespace {

/// A deterministic weight per edge, from its (global) edge ID.
float weight_of(std::int64_t eid) {
  std::uint64_t x = static_cast<std::uint64_t>(eid) * 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  return static_cast<float>(x % 1'000'003) / 1e6f;
}

/// The `fanout` in-edges of largest weight per seed (ties by position): none of the
/// built-in samplers does this. Its parameter block names the edge data with the weights.
class TopWeightSampler {
 public:
  using policy_category = distgraph::sampler_tag;
  static constexpr std::string_view wire_name = "top_weight";

  /// The request form: weights from edge data `weights`.
  static distgraph::SamplerSpec spec(const std::string& weights) {
    distgraph::HeadWriter w;
    w.put_string(weights);
    return {std::string(wire_name), w.take()};
  }
  /// Rebuilt where the partition lives: its weights laid out by edge position, read once
  /// per site from the partition's storage.
  static TopWeightSampler at_site(distgraph::HeadReader& params, distgraph::SamplerSite& site) {
    const std::string name = params.get_string(256);
    auto w = site.cached("top_weight:" + name, [&] {
      return std::static_pointer_cast<const void>(
          std::make_shared<const distgraph::Buffer<float>>(site.edge_values_by_position(name)));
    });
    return TopWeightSampler(*static_cast<const distgraph::Buffer<float>*>(w.get()));
  }
  explicit TopWeightSampler(distgraph::Buffer<float> w) : w_(std::move(w)) {}

  void validate(const distgraph::LocalGraphView& g) const {
    if (static_cast<std::int64_t>(w_.size()) != g.num_edges())
      throw distgraph::ShapeError("top_weight weights", "one per edge position expected");
  }
  void sample(const distgraph::LocalGraphView& g, std::span<const std::int64_t> seeds,
              std::int64_t fanout, const distgraph::SampleKey&, distgraph::Picks& picks) const {
    std::vector<std::int64_t> row;
    for (const auto v : seeds) {
      const auto begin = g.row_begin(v), degree = g.degree(v);
      const auto k = fanout < 0 ? degree : std::min(fanout, degree);
      row.resize(static_cast<std::size_t>(degree));
      std::iota(row.begin(), row.end(), begin);
      std::partial_sort(row.begin(), row.begin() + k, row.end(), [&](auto a, auto b) {
        const float wa = w_[static_cast<std::size_t>(a)], wb = w_[static_cast<std::size_t>(b)];
        return wa != wb ? wa > wb : a < b;
      });
      picks.counts.push_back(k);
      picks.positions.insert(picks.positions.end(), row.begin(), row.begin() + k);
    }
  }

 private:
  distgraph::Buffer<float> w_;
};
static_assert(distgraph::DistributedSampler<TopWeightSampler>);

/// The composition: the defaults, plus our sampler in the set servers and trainers share.
struct TopWeightPolicies : distgraph::DefaultPolicies {
  using sampler_set = distgraph::BuiltinSamplers::with<TopWeightSampler>;
};

}  // namespace

int main(int argc, char** argv) try {
  distgraph::InitOptions opts;
  if (argc > 1) opts.part_config = argv[1];
  auto ctx = distgraph::initialize<TopWeightPolicies>(opts);
  if (ctx.is_server()) return 0;  // this process served the job and has been shut down

  auto g = ctx.graph();
  auto w = g.create_edata<float>("w", 1);
  std::vector<std::int64_t> edges(static_cast<std::size_t>(g.num_edges()));
  std::iota(edges.begin(), edges.end(), 0);
  if (ctx.rank() == 0) {
    std::vector<float> values(edges.size());
    for (std::size_t e = 0; e < edges.size(); ++e) values[e] = weight_of(edges[e]);
    w.push(edges, values);
  }
  ctx.barrier("weights");

  // Every node, on every trainer: each one's picks must be the same wherever it runs.
  std::vector<std::int64_t> seeds(static_cast<std::size_t>(g.num_nodes()));
  std::iota(seeds.begin(), seeds.end(), 0);
  constexpr std::int64_t fanout = 3;
  const auto picks = g.sample_neighbors(seeds, fanout, {}, TopWeightSampler::spec("w"));
  const auto all =
      g.sample_neighbors(seeds, -1, {}, distgraph::sampler_spec<distgraph::FullNeighborSampler>());
  // The rule: per seed, the picks are its min(fanout, degree) heaviest in-edges.
  std::map<std::int64_t, std::vector<std::int64_t>> by_seed, row_of;
  for (std::size_t i = 0; i < picks.eid.size(); ++i) by_seed[picks.dst[i]].push_back(picks.eid[i]);
  for (std::size_t i = 0; i < all.eid.size(); ++i) row_of[all.dst[i]].push_back(all.eid[i]);
  for (auto& [v, row] : row_of) {
    std::sort(row.begin(), row.end(), [](auto a, auto b) {
      return weight_of(a) != weight_of(b) ? weight_of(a) > weight_of(b) : a < b;
    });
    row.resize(std::min<std::size_t>(row.size(), fanout));
    auto got = by_seed[v];
    auto want = row;
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    if (got != want) {
      std::fprintf(stderr, "custom_sampler: node %lld picks break the rule\n",
                   static_cast<long long>(v));
      return 1;
    }
  }
  std::uint64_t digest = 1469598103934665603ull;
  for (const auto& [v, row] : by_seed) {
    auto sorted = row;
    std::sort(sorted.begin(), sorted.end());
    for (auto e : sorted)
      digest = (digest ^ static_cast<std::uint64_t>(v * 1000003 + e)) * 1099511628211ull;
  }
  if (ctx.rank() == 0) {
    std::printf("trainers %d, picks %zu, digest %llu, rule holds\n", ctx.world_size(),
                picks.eid.size(), static_cast<unsigned long long>(digest));
    std::fflush(stdout);
  }
  ctx.barrier("done");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "custom_sampler: %s\n", e.what());
  return 1;
}

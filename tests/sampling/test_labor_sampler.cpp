// LaborSampler (LABOR-0): inclusion probabilities, Poisson variance, shared variates, keys.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "distgraph/sampling/labor_sampler.hpp"
#include "distgraph/sampling/multi_layer.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/sampler_set.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "support/sampling_graphs.hpp"

namespace test_sampling_labor_sampler {

using namespace distgraph;
using namespace distgraph::test;

namespace {

/// z of the false-positive rate the chi-square bounds use (1e-6, one-sided).
constexpr double z_bound = 4.7534;

/// `count` distinct node IDs of [0, n), in random order.
std::vector<std::int64_t> distinct_nodes(std::int64_t n, std::size_t count, std::uint64_t seed) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), std::mt19937_64(seed));
  all.resize(count);
  return all;
}

/// A symmetric SBM graph (8 classes, no features) of `n` nodes and mean degree `degree`.
Graph sbm_graph(std::int64_t n, double degree) {
  SbmOptions o;
  o.num_nodes = n;
  o.avg_degree = degree;
  o.feat_dim = 0;
  o.seed = 3;
  o.num_threads = 1;
  return build_graph(sbm(o).edges, BuildOptions{.num_threads = 1});
}

std::size_t distinct_sources(const Frontier& f) {
  return std::set<std::int64_t>(f.src.begin(), f.src.end()).size();
}

/// (dst, src, eid) of every picked edge, sorted: the picks as a set, whatever their order.
std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> edge_set(const Frontier& f) {
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> e;
  for (std::size_t i = 0; i < f.src.size(); ++i) e.emplace_back(f.dst[i], f.src[i], f.eid[i]);
  std::sort(e.begin(), e.end());
  return e;
}

/// A SamplerSite over one view, counting the tables it is asked to make.
class ViewSite final : public SamplerSite {
 public:
  explicit ViewSite(LocalGraphView v) : view_(v) {}
  const LocalGraphView& view() const override { return view_; }
  std::int32_t part_id() const override { return 0; }
  std::span<const std::int32_t> edge_types_by_position() const override { return {}; }
  std::int32_t num_edge_types() const override { return 1; }
  Buffer<float> edge_values_by_position(const std::string& name) override {
    throw NotFound("edge data '" + name + "'", "not held by this test site");
  }
  std::shared_ptr<const void> cached(
      const std::string& key, const std::function<std::shared_ptr<const void>()>& make) override {
    auto& slot = cache_[key];
    if (!slot) {
      slot = make();
      ++made;
    }
    return slot;
  }
  int made = 0;

 private:
  LocalGraphView view_;
  std::map<std::string, std::shared_ptr<const void>> cache_;
};

LaborSampler labor_at(SamplerSite& site) {
  HeadReader r(std::vector<std::byte>{}, "sampler 'labor' parameters");
  return LaborSampler::at_site(r, site);
}

/// log of the Binomial(n, p) probability of k.
double binomial_log_pmf(std::int64_t n, std::int64_t k, double p) {
  const auto nd = static_cast<double>(n), kd = static_cast<double>(k);
  return std::lgamma(nd + 1) - std::lgamma(kd + 1) - std::lgamma(nd - kd + 1) + kd * std::log(p) +
         (nd - kd) * std::log1p(-p);
}

}  // namespace

TEST_CASE("labor sampler takes each in-edge of a seed with probability fanout / degree",
          "[sampling]") {
  // Independent Bernoulli(p) trials per leaf: (o - e)^2 / (e (1 - p)) summed over the
  // leaves is chi-square with `leaves` degrees of freedom (no total is fixed: LABOR's
  // pick count varies).
  const auto statistic = [](std::int64_t leaves, std::int64_t fanout, int trials) {
    const Graph g = in_star(leaves);
    std::int64_t picked = 0;
    const auto counts = pick_counts(g, 0, LaborSampler{}, fanout, trials, [&](const Frontier& f) {
      const std::set<std::int64_t> distinct(f.src.begin(), f.src.end());
      REQUIRE(distinct.size() == f.src.size());
      for (const std::int64_t d : f.dst) REQUIRE(d == 0);
      picked += f.num_edges();
    });
    const double p = static_cast<double>(fanout) / static_cast<double>(leaves);
    std::map<std::int64_t, double> expected;
    for (std::int64_t v = 1; v <= leaves; ++v) expected[v] = trials * p;
    // Expected picks per seed equal the fanout: total picks against trials * fanout, with
    // the binomial's standard deviation.
    const double mean_sd = std::sqrt(static_cast<double>(trials) * fanout * (1 - p));
    CHECK(std::abs(static_cast<double>(picked) - static_cast<double>(trials) * fanout) <
          z_bound * mean_sd);
    return chi_square(counts, expected) / (1 - p);
  };
  SECTION("small fanout") {
    const double stat = statistic(100, 10, 20000);
    CHECK(stat < chi_square_critical(100));
    CHECK(stat > 0);
  }
  SECTION("fanout close to the degree") {
    CHECK(statistic(12, 10, 20000) < chi_square_critical(12));
  }
  SECTION("an inexact ratio (3 of 7)") { CHECK(statistic(7, 3, 20000) < chi_square_critical(7)); }
}

TEST_CASE("labor sampler Poisson-samples one seed's edges: binomial count and Poisson variance",
          "[sampling]") {
  // From one seed's point of view LABOR-0 is Poisson sampling with pi = k/d: the count is
  // Binomial(d, k/d), and the Horvitz-Thompson mean of values h_u over the picks,
  // sum h_u / (d pi), is unbiased with variance (1/k - 1/d) (1/d) sum h_u^2 (Balin &
  // Catalyurek, section 3). Sampling exactly k (UniformSampler) would give count variance
  // 0 and a far smaller estimator variance here, so both checks can fail.
  constexpr std::int64_t leaves = 60, fanout = 6;
  constexpr int trials = 30000;
  const Graph g = in_star(leaves);
  const double p = static_cast<double>(fanout) / leaves;
  const auto h = [](std::int64_t u) { return 1.0 + static_cast<double>(u % 7); };
  double mean_h = 0, sum_h2 = 0;
  for (std::int64_t u = 1; u <= leaves; ++u) {
    mean_h += h(u) / leaves;
    sum_h2 += h(u) * h(u);
  }
  std::map<std::int64_t, std::int64_t> count_hist;
  std::vector<double> estimates;
  estimates.reserve(trials);
  pick_counts(g, 0, LaborSampler{}, fanout, trials, [&](const Frontier& f) {
    ++count_hist[f.num_edges()];
    double sum = 0;
    for (const std::int64_t u : f.src) sum += h(u);
    estimates.push_back(sum / (leaves * p));
  });

  SECTION("the pick count is Binomial(d, k/d)") {
    // Chi-square over count bins, merged from the left until a bin expects >= 5; a tail
    // expecting < 5 joins the last bin.
    std::vector<double> pmf(leaves + 1);
    for (std::int64_t c = 0; c <= leaves; ++c)
      pmf[static_cast<std::size_t>(c)] = std::exp(binomial_log_pmf(leaves, c, p));
    std::vector<std::pair<double, double>> bins;  // (expected, observed)
    double exp_acc = 0, obs_acc = 0;
    for (std::int64_t c = 0; c <= leaves; ++c) {
      exp_acc += trials * pmf[static_cast<std::size_t>(c)];
      obs_acc += static_cast<double>(count_hist[c]);
      if (exp_acc >= 5) {
        bins.emplace_back(exp_acc, obs_acc);
        exp_acc = obs_acc = 0;
      }
    }
    bins.back().first += exp_acc;
    bins.back().second += obs_acc;
    REQUIRE(bins.size() >= 8);
    double stat = 0;
    for (const auto& [e, o] : bins) stat += (o - e) * (o - e) / e;
    CHECK(stat < chi_square_critical(static_cast<double>(bins.size() - 1)));
  }
  SECTION("the Horvitz-Thompson mean is unbiased with the Poisson variance") {
    const double want_var = (1.0 / fanout - 1.0 / leaves) * sum_h2 / leaves;
    double mean = 0;
    for (const double x : estimates) mean += x / trials;
    double m2 = 0, m4 = 0;
    for (const double x : estimates) {
      m2 += (x - mean) * (x - mean) / trials;
      m4 += std::pow(x - mean, 4) / trials;
    }
    CHECK(std::abs(mean - mean_h) < z_bound * std::sqrt(want_var / trials));
    // The sample variance's standard error is sqrt((m4 - m2^2) / n).
    INFO("variance " << m2 << ", Poisson sampling's " << want_var);
    CHECK(std::abs(m2 - want_var) < z_bound * std::sqrt((m4 - m2 * m2) / trials));
    // Neighbour sampling's (k without replacement) would be (sigma^2 / k)(d - k)/(d - 1):
    // 0.58 here against LABOR's 2.94, far outside the bound above.
  }
}

TEST_CASE("labor sampler shares each source's variate across the seeds of a layer", "[sampling]") {
  // Seed 0 has in-edges from sources 2..41 (degree 40), seed 1 from 2..21 (degree 20).
  // With fanout 5 a shared source is kept by seed 0 with p0 = 1/8 and by seed 1 with
  // p1 = 1/4; one variate decides both, so seed 0's shared picks are always among seed
  // 1's, and a source is picked by both with probability min(p0, p1) = 1/8 (independent
  // sampling: 1/32).
  std::vector<std::int64_t> src, dst;
  for (std::int64_t u = 2; u <= 41; ++u) {
    src.push_back(u);
    dst.push_back(0);
  }
  for (std::int64_t u = 2; u <= 21; ++u) {
    src.push_back(u);
    dst.push_back(1);
  }
  const Graph g = graph_of(42, std::move(src), std::move(dst));
  const std::vector<std::int64_t> seeds{0, 1};
  constexpr int trials = 4000;
  std::int64_t both = 0;
  for (int t = 0; t < trials; ++t) {
    const Frontier f = sample_neighbors_local(in_edges_view(g), seeds, 5, {.seed = 3, .batch = t},
                                              LaborSampler{}, {.num_threads = 1});
    std::set<std::int64_t> of0, of1;
    for (std::size_t i = 0; i < f.src.size(); ++i) (f.dst[i] == 0 ? of0 : of1).insert(f.src[i]);
    for (const std::int64_t u : of0)
      if (u <= 21) {
        REQUIRE(of1.count(u) == 1);  // nested: r_u < 1/8 implies r_u < 1/4
        ++both;
      }
  }
  const double n = 20.0 * trials, p = 1.0 / 8;
  CHECK(std::abs(static_cast<double>(both) - n * p) < z_bound * std::sqrt(n * p * (1 - p)));
}

TEST_CASE("labor sampler picks far fewer distinct sources than uniform sampling, as many edges",
          "[sampling]") {
  // Sources shared by many seeds of a batch (dense rows, a batch of half the nodes) are
  // where LABOR saves: a source whose seeds each keep it with probability p is picked
  // with probability about max p, not 1 - (1 - p)^seeds.
  const Graph g = sbm_graph(2000, 40);
  const auto view = in_edges_view(g);
  const auto seeds = distinct_nodes(g.num_nodes(), 1000, 4);
  for (const std::int64_t fanout : {5, 10}) {
    INFO("fanout " << fanout);
    const SampleKey key{.seed = 7, .epoch = 1, .batch = 2};
    const Frontier labor = sample_neighbors_local(view, seeds, fanout, key, LaborSampler{});
    const Frontier uniform = sample_neighbors_local(view, seeds, fanout, key, UniformSampler{});
    // Measured 0.17 (fanout 5) and 0.33 (fanout 10) of uniform's; a sampler with
    // independent draws per seed stays near 1.
    const auto l = distinct_sources(labor), u = distinct_sources(uniform);
    INFO("distinct sources: labor " << l << ", uniform " << u);
    CHECK(static_cast<double>(l) < 0.5 * static_cast<double>(u));

    // Edges: sum of min(fanout, degree) in expectation. Shared variates correlate the
    // seeds' counts, so the spread of a batch's total is measured over keys, not assumed.
    double want = 0;
    for (const std::int64_t v : seeds)
      want += static_cast<double>(std::min<std::int64_t>(fanout, g.in_degree(v)));
    constexpr int keys = 200;
    double sum = 0, sum2 = 0;
    for (int t = 0; t < keys; ++t) {
      const auto e = static_cast<double>(
          sample_neighbors_local(view, seeds, fanout, {.seed = 8, .batch = t}, LaborSampler{})
              .num_edges());
      sum += e;
      sum2 += e * e;
    }
    const double mean = sum / keys, sd = std::sqrt((sum2 - keys * mean * mean) / (keys - 1));
    INFO("edges per batch: mean " << mean << " (sd " << sd << "), expected " << want);
    CHECK(std::abs(mean - want) <= z_bound * sd / std::sqrt(double{keys}));
  }
  // Two layers [10, 25], as a loader samples them: fewer input nodes (measured 0.51).
  const Graph big = sbm_graph(20000, 40);
  const MultiLayerNeighborSampler<LaborSampler> labor2({10, 25});
  const MultiLayerNeighborSampler<UniformSampler> uniform2({10, 25});
  const auto batch = distinct_nodes(big.num_nodes(), 200, 5);
  const SampleKey key{.seed = 7};
  const auto l = labor2.sample_blocks(in_edges_view(big), batch, key).input_nodes.size();
  const auto u = uniform2.sample_blocks(in_edges_view(big), batch, key).input_nodes.size();
  INFO("input nodes: labor " << l << ", uniform " << u);
  CHECK(static_cast<double>(l) < 0.7 * static_cast<double>(u));
}

TEST_CASE("labor sampler picks the same edges for the same key, whatever the split", "[sampling]") {
  const Graph g = small_rmat(12, 8, 5);
  const auto view = in_edges_view(g);
  const auto seeds = random_nodes(g.num_nodes(), 20000, 9);
  const SampleKey key{.seed = 3, .epoch = 1, .rank = 2, .batch = 2, .layer = 1};
  const Frontier one =
      sample_neighbors_local(view, seeds, 5, key, LaborSampler{}, {.num_threads = 1});
  const Frontier four = sample_neighbors_local(view, seeds, 5, key, LaborSampler{},
                                               {.num_threads = 4, .min_seeds_per_thread = 64});
  CHECK(one.num_edges() > 20000);
  CHECK(one.src == four.src);
  CHECK(one.dst == four.dst);
  CHECK(one.eid == four.eid);

  SECTION("a seed's picks do not depend on the other seeds of the call") {
    const std::span<const std::int64_t> all(seeds);
    Frontier parts[2] = {sample_neighbors_local(view, all.first(7000), 5, key, LaborSampler{}),
                         sample_neighbors_local(view, all.subspan(7000), 5, key, LaborSampler{})};
    std::vector<std::int64_t> eid = parts[0].eid;
    eid.insert(eid.end(), parts[1].eid.begin(), parts[1].eid.end());
    CHECK(eid == one.eid);
  }
  SECTION("another key picks other edges; each key field counts") {
    for (const SampleKey other :
         {SampleKey{.seed = 4, .epoch = 1, .rank = 2, .batch = 2, .layer = 1},
          SampleKey{.seed = 3, .epoch = 2, .rank = 2, .batch = 2, .layer = 1},
          SampleKey{.seed = 3, .epoch = 1, .rank = 3, .batch = 2, .layer = 1},
          SampleKey{.seed = 3, .epoch = 1, .rank = 2, .batch = 3, .layer = 1},
          SampleKey{.seed = 3, .epoch = 1, .rank = 2, .batch = 2, .layer = 0}}) {
      const Frontier f = sample_neighbors_local(view, seeds, 5, other, LaborSampler{});
      CHECK(edge_set(f) != edge_set(one));
    }
  }
  SECTION("a relabeled copy of the graph with its rows shuffled picks the same edges") {
    // What a partition holds: other local IDs, the same global IDs, rows in another order.
    std::vector<std::int64_t> nid(static_cast<std::size_t>(g.num_nodes()));
    std::iota(nid.begin(), nid.end(), 0);
    std::mt19937_64 rng(5);
    std::shuffle(nid.begin(), nid.end(), rng);
    std::vector<std::int64_t> local(nid.size());
    for (std::size_t l = 0; l < nid.size(); ++l)
      local[static_cast<std::size_t>(nid[l])] = static_cast<std::int64_t>(l);
    std::vector<std::int64_t> indptr{0}, indices, eids;
    for (const std::int64_t v : nid) {
      std::vector<std::pair<std::int64_t, std::int64_t>> row;
      const auto nb = g.in_neighbors(v);
      const auto es = g.in.edges(v);
      for (std::size_t i = 0; i < nb.size(); ++i)
        row.emplace_back(local[static_cast<std::size_t>(nb[i])], es[i]);
      std::shuffle(row.begin(), row.end(), rng);
      for (const auto& [u, e] : row) {
        indices.push_back(u);
        eids.push_back(e);
      }
      indptr.push_back(static_cast<std::int64_t>(indices.size()));
    }
    const LocalGraphView relabeled{indptr, indices, eids, nid, EdgeDir::in};
    std::vector<std::int64_t> local_seeds(seeds.size());
    for (std::size_t i = 0; i < seeds.size(); ++i)
      local_seeds[i] = local[static_cast<std::size_t>(seeds[i])];
    const Frontier f = sample_neighbors_local(relabeled, local_seeds, 5, key, LaborSampler{});
    CHECK(edge_set(f) == edge_set(one));
    // Built where the partition lives, the sampler scans a table of the neighbours' global
    // IDs (made once per site) and picks exactly what mapping each neighbour picks.
    ViewSite site(relabeled);
    const LaborSampler at_site = labor_at(site);
    CHECK(site.made == 1);
    const Frontier t = sample_neighbors_local(relabeled, local_seeds, 5, key, at_site);
    CHECK(t.src == f.src);
    CHECK(t.dst == f.dst);
    CHECK(t.eid == f.eid);
    (void)labor_at(site);
    CHECK(site.made == 1);
    // A view the table was not built for (other arrays, other global IDs) maps as it
    // scans: the table's IDs would pick other edges there.
    const std::vector<std::int64_t> indices_copy = indices;
    std::vector<std::int64_t> nid_other(nid.size());
    for (std::size_t u = 0; u < nid.size(); ++u) nid_other[u] = nid[(u + 1) % nid.size()];
    const LocalGraphView other{indptr, indices_copy, eids, nid_other, EdgeDir::in};
    const Frontier mapped = sample_neighbors_local(other, local_seeds, 5, key, LaborSampler{});
    REQUIRE(mapped.eid != f.eid);
    CHECK(sample_neighbors_local(other, local_seeds, 5, key, at_site).eid == mapped.eid);
    // The same indices array under another map is another view too.
    const LocalGraphView same_indices{indptr, indices, eids, nid_other, EdgeDir::in};
    CHECK(sample_neighbors_local(same_indices, local_seeds, 5, key, at_site).eid == mapped.eid);
    // A whole graph's view holds global IDs already: no table.
    ViewSite whole(view);
    (void)labor_at(whole);
    CHECK(whole.made == 0);
  }
}

TEST_CASE("labor sampler takes whole rows for fanout -1 or >= degree and nothing for 0",
          "[sampling]") {
  const Graph g = in_star(7);
  const std::vector<std::int64_t> hub{0};
  for (const std::int64_t fanout : {7, 8, 100, -1}) {
    const Frontier f = sample_neighbors_local(in_edges_view(g), hub, fanout, {}, LaborSampler{});
    CHECK(f.src == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7});
    CHECK(f.eid == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6});
  }
  CHECK(sample_neighbors_local(in_edges_view(g), hub, 0, {}, LaborSampler{}).num_edges() == 0);
  const std::vector<std::int64_t> leaf_and_isolated{3, 8};
  CHECK(sample_neighbors_local(in_edges_view(g), leaf_and_isolated, 3, {}, LaborSampler{})
            .num_edges() == 0);
  Picks p;
  LaborSampler{}.sample(in_edges_view(g), hub, 0, {}, p);
  CHECK(p.counts == std::vector<std::int64_t>{0});
}

TEST_CASE("labor sampler is a built-in sampler named labor without parameters", "[sampling]") {
  STATIC_REQUIRE(DistributedSampler<LaborSampler>);
  CHECK(BuiltinSamplers::contains("labor"));
  const SamplerSpec spec = sampler_spec<LaborSampler>();
  CHECK(spec.name == "labor");
  CHECK(spec.params.empty());
}

TEST_CASE("labor's row scan picks the same edges in the same order on every code path",
          "[sampling]") {
  // labor_scan takes AVX-512 on CPUs that have it (rows of 32 edges or more); it must pick
  // exactly what the scalar scan picks, with and without a local-to-global map, at every
  // row length (the tail after the last full group of 8 included) and threshold.
  std::mt19937_64 rng(17);
  std::vector<std::int64_t> ids(5000);
  for (auto& v : ids) v = static_cast<std::int64_t>(rng() >> 1);
  std::int64_t rows = 0, picked = 0;
  for (std::int64_t degree : {0, 1, 7, 8, 31, 32, 33, 39, 40, 100, 257, 4099}) {
    std::vector<std::int64_t> row(static_cast<std::size_t>(degree));
    for (auto& v : row) v = static_cast<std::int64_t>(rng() % ids.size());
    for (const double p : {0.0, 0.01, 0.3, 0.99}) {
      const auto limit = static_cast<std::uint64_t>(std::ceil(p * 0x1.0p53));
      for (const std::int64_t* map : std::array<const std::int64_t*, 2>{ids.data(), nullptr}) {
        const std::uint64_t base = rng();
        std::vector<std::int64_t> fast, plain;
        detail::labor_scan(row.data(), map, degree, base, limit, 1000, fast);
        detail::labor_scan_scalar(row.data(), map, degree, base, limit, 1000, plain);
        INFO("degree " << degree << ", p " << p << (map ? ", mapped" : ", global IDs"));
        REQUIRE(fast == plain);
        for (std::size_t i = 0; i < plain.size(); ++i) {
          const std::int64_t e = plain[i] - 1000, local = row[static_cast<std::size_t>(e)];
          REQUIRE(detail::labor_bits(base, map ? map[local] : local) < limit);
        }
        ++rows;
        picked += static_cast<std::int64_t>(plain.size());
      }
    }
  }
  CHECK(rows == 12 * 4 * 2);
  CHECK(picked > 0);
}

}  // namespace test_sampling_labor_sampler

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "distgraph/graph/builder.hpp"
#include "distgraph/graph/type_map.hpp"
#include "distgraph/sampling/per_relation_sampler.hpp"
#include "distgraph/sampling/relation_fanouts.hpp"
#include "distgraph/sampling/sample_local.hpp"
#include "distgraph/sampling/sampler_set.hpp"
#include "distgraph/sampling/uniform_sampler.hpp"
#include "support/sampling_graphs.hpp"

namespace test_sampling_per_relation_sampler {

using namespace distgraph;
using namespace distgraph::test;

namespace {

/// Relation sizes of the hub: paper 0 has `writes` in-edges from authors, `cites` from
/// papers and `reviews` from other authors. Every other paper is cited by paper 0 and
/// written by one author, so rows besides the hub are small and mixed too.
struct Hub {
  std::int64_t writes = 100, cites = 12, reviews = 5;
  std::int64_t papers() const { return cites + 1; }
  std::int64_t authors() const { return writes + reviews; }
};

/// Node types paper [0, papers), author [papers, papers + authors); edge types
/// 0 = author:writes:paper, 1 = paper:cites:paper, 2 = author:reviews:paper. The input
/// edge list is grouped by type (as build_graph requires), but g.in's rows are by source
/// ID, so their types interleave.
Graph typed_hub(const Hub& h = {}) {
  std::vector<std::int64_t> src, dst;
  std::vector<std::int64_t> counts(3, 0);
  const std::int64_t a0 = h.papers();
  for (std::int64_t a = 0; a < h.writes; ++a) src.push_back(a0 + a), dst.push_back(0);
  for (std::int64_t p = 1; p < h.papers(); ++p) src.push_back(a0 + p - 1), dst.push_back(p);
  counts[0] = h.writes + h.papers() - 1;
  for (std::int64_t p = 1; p < h.papers(); ++p) src.push_back(p), dst.push_back(0);
  for (std::int64_t p = 1; p < h.papers(); ++p) src.push_back(0), dst.push_back(p);
  counts[1] = 2 * (h.papers() - 1);
  for (std::int64_t a = 0; a < h.reviews; ++a) src.push_back(a0 + h.writes + a), dst.push_back(0);
  counts[2] = h.reviews;
  TypeMap types(
      {"paper", "author"}, {h.papers(), h.authors()},
      {{"author", "writes", "paper"}, {"paper", "cites", "paper"}, {"author", "reviews", "paper"}},
      counts);
  const std::int64_t n = h.papers() + h.authors();
  return build_graph(
      Coo{n, Buffer<std::int64_t>(std::move(src)), Buffer<std::int64_t>(std::move(dst))},
      std::move(types), BuildOptions{.num_threads = 1});
}

/// Edge type of each edge ID of `g`.
std::int32_t type_of(const Graph& g, std::int64_t eid) {
  const auto& off = g.types.edge_offsets();
  return static_cast<std::int32_t>(std::upper_bound(off.begin(), off.end(), eid) - off.begin() - 1);
}

std::vector<std::int64_t> all_rows(const LocalGraphView& v) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(v.num_rows()));
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
  return rows;
}

/// A SamplerSite over a whole graph's grouped in-edges, as a partition offers them.
class GraphSite final : public SamplerSite {
 public:
  GraphSite(TypedInEdges t, std::int32_t types) : t_(std::move(t)), view_(t_.view()), n_(types) {}
  const LocalGraphView& view() const override { return view_; }
  std::int32_t part_id() const override { return 0; }
  std::span<const std::int32_t> edge_types_by_position() const override {
    return t_.edge_types.span();
  }
  std::int32_t num_edge_types() const override { return n_; }
  Buffer<float> edge_values_by_position(const std::string& name) override {
    throw NotFound("edge data '" + name + "'", "not held by this test site");
  }
  std::shared_ptr<const void> cached(
      const std::string& key, const std::function<std::shared_ptr<const void>()>& make) override {
    std::lock_guard lock(mu_);
    auto& slot = cache_[key];
    if (!slot) slot = make();
    return slot;
  }
  TypedInEdges t_;

 private:
  LocalGraphView view_;
  std::int32_t n_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const void>> cache_;
};

PerRelationSampler at(GraphSite& site, const std::vector<std::byte>& params) {
  HeadReader r(params, "sampler 'per_relation' parameters");
  return PerRelationSampler::at_site(r, site);
}

}  // namespace

TEST_CASE("grouping in-edges by type keeps each row's edges and orders them by type",
          "[sampling]") {
  const Graph g = typed_hub();
  const TypedInEdges t = group_in_edges_by_type(g, 2);
  REQUIRE(t.edge_types.size() == static_cast<std::size_t>(g.num_edges()));
  for (std::int64_t v = 0; v < g.num_nodes(); ++v) {
    const auto before = g.in.edges(v), after = t.in.edges(v);
    REQUIRE(std::multiset<std::int64_t>(before.begin(), before.end()) ==
            std::multiset<std::int64_t>(after.begin(), after.end()));
    const auto b = static_cast<std::size_t>(t.in.indptr[static_cast<std::size_t>(v)]);
    for (std::size_t i = 0; i < after.size(); ++i) {
      REQUIRE(t.edge_types[b + i] == type_of(g, after[i]));
      if (i > 0) {
        REQUIRE(t.edge_types[b + i - 1] <= t.edge_types[b + i]);
        // Within a type the row keeps its order (by source).
        if (t.edge_types[b + i - 1] == t.edge_types[b + i])
          REQUIRE(t.in.indices[b + i - 1] <= t.in.indices[b + i]);
      }
    }
  }
  // Sources follow their edges.
  const Coo coo = g.to_coo(1);
  for (std::size_t i = 0; i < t.in.edge_ids.size(); ++i)
    REQUIRE(coo.src[static_cast<std::size_t>(t.in.edge_ids[i])] == t.in.indices[i]);
}

TEST_CASE("per-relation sampler picks min(fanout, relation size) distinct edges per relation",
          "[sampling]") {
  const Hub h;
  const Graph g = typed_hub(h);
  const TypedInEdges t = group_in_edges_by_type(g, 1);
  const LocalGraphView view = t.view();
  const auto seeds = all_rows(view);
  const Coo coo = g.to_coo(1);
  for (const std::vector<std::int64_t>& fanouts :
       {std::vector<std::int64_t>{10, 3, 8}, {40, 20, 1}, {-1, 0, 2}, {0, -1, 0}, {0, 0, 0}}) {
    const PerRelationSampler s(view, t.edge_types, fanouts);
    for (int batch = 0; batch < 5; ++batch) {
      const Frontier f = sample_neighbors_local(view, seeds, -1, {.seed = 3, .batch = batch}, s);
      std::map<std::pair<std::int64_t, std::int32_t>, std::set<std::int64_t>> got;
      for (std::size_t i = 0; i < f.eid.size(); ++i) {
        REQUIRE(coo.dst[static_cast<std::size_t>(f.eid[i])] == f.dst[i]);
        REQUIRE(got[{f.dst[i], type_of(g, f.eid[i])}].insert(f.eid[i]).second);  // distinct
      }
      for (const std::int64_t v : seeds)
        for (std::int32_t r = 0; r < 3; ++r) {
          std::int64_t size = 0;
          for (const std::int64_t e : g.in.edges(v)) size += type_of(g, e) == r;
          const std::int64_t f_r = fanouts[static_cast<std::size_t>(r)];
          const std::int64_t want = f_r < 0 ? size : std::min(f_r, size);
          const auto it = got.find({v, r});
          CHECK((it == got.end() ? 0 : static_cast<std::int64_t>(it->second.size())) == want);
        }
    }
  }
}

TEST_CASE("per-relation sampler with -1 takes a relation in row order and 0 takes none",
          "[sampling]") {
  const Hub h;
  const Graph g = typed_hub(h);
  const TypedInEdges t = group_in_edges_by_type(g, 1);
  const std::vector<std::int64_t> hub{0};
  const Frontier f = sample_neighbors_local(
      t.view(), hub, -1, {.seed = 1}, PerRelationSampler(t.view(), t.edge_types, {-1, 0, -1}));
  // writes (type 0) in row order, then reviews (type 2): exactly the grouped row minus cites.
  std::vector<std::int64_t> want;
  for (const std::int64_t e : t.in.edges(0))
    if (type_of(g, e) != 1) want.push_back(e);
  CHECK(f.eid == want);
  CHECK(static_cast<std::int64_t>(f.eid.size()) == h.writes + h.reviews);
}

TEST_CASE("per-relation sampler picks each neighbour of a relation equally often", "[sampling]") {
  // As test_uniform_sampler's uniformity_statistic: chi-square of the pick counts of each
  // relation, corrected for drawing without replacement (factor (1 - k/D) D/(D - 1)).
  const Hub h;
  const Graph g = typed_hub(h);
  const TypedInEdges t = group_in_edges_by_type(g, 1);
  const std::int64_t fw = 10, fc = 10, fr = 5;  // reviews: all 5 every time
  const PerRelationSampler s(t.view(), t.edge_types, {fw, fc, fr});
  const int trials = 20000;
  std::map<std::int64_t, std::int64_t> writes, cites;
  const std::vector<std::int64_t> hub{0};
  for (int k = 0; k < trials; ++k) {
    const Frontier f =
        sample_neighbors_local(t.view(), hub, -1, {.seed = 1, .batch = k}, s, {.num_threads = 1});
    REQUIRE(f.num_edges() == fw + fc + fr);
    for (std::size_t i = 0; i < f.eid.size(); ++i) {
      const std::int32_t r = type_of(g, f.eid[i]);
      if (r == 0) ++writes[f.src[i]];
      if (r == 1) ++cites[f.src[i]];
    }
  }
  auto statistic = [&](const std::map<std::int64_t, std::int64_t>& counts, std::int64_t first,
                       std::int64_t leaves, std::int64_t fanout) {
    const double p = static_cast<double>(fanout) / static_cast<double>(leaves);
    std::map<std::int64_t, double> expected;
    for (std::int64_t v = first; v < first + leaves; ++v) expected[v] = trials * p;
    REQUIRE(counts.size() == expected.size());
    const double correction =
        (1 - p) * static_cast<double>(leaves) / static_cast<double>(leaves - 1);
    return chi_square(counts, expected) / correction;
  };
  const double sw = statistic(writes, h.papers(), h.writes, fw);
  CHECK(sw < chi_square_critical(static_cast<double>(h.writes - 1)));
  CHECK(sw > 0);
  CHECK(statistic(cites, 1, h.cites, fc) < chi_square_critical(static_cast<double>(h.cites - 1)));
}

TEST_CASE("per-relation sampler is deterministic by key and independent of the batch split",
          "[sampling]") {
  const Graph g = typed_hub();
  const TypedInEdges t = group_in_edges_by_type(g, 1);
  const LocalGraphView view = t.view();
  const PerRelationSampler s(view, t.edge_types, {7, 3, 2});
  const auto seeds = all_rows(view);
  const SampleKey key{.seed = 4, .epoch = 2, .rank = 1};
  const Frontier whole = sample_neighbors_local(view, seeds, -1, key, s, {.num_threads = 1});
  const Frontier again = sample_neighbors_local(view, seeds, -1, key, s,
                                                {.num_threads = 4, .min_seeds_per_thread = 1});
  CHECK(whole.eid == again.eid);
  // Seeds one at a time, in reverse, concatenated back in seed order.
  std::vector<std::vector<std::int64_t>> one(seeds.size());
  for (std::size_t i = seeds.size(); i-- > 0;)
    one[i] = sample_neighbors_local(view, std::span(seeds).subspan(i, 1), -1, key, s).eid;
  std::vector<std::int64_t> joined;
  for (const auto& e : one) joined.insert(joined.end(), e.begin(), e.end());
  CHECK(joined == whole.eid);
  // Another epoch picks otherwise.
  CHECK(sample_neighbors_local(view, seeds, -1, {.seed = 4, .epoch = 3, .rank = 1}, s).eid !=
        whole.eid);
}

TEST_CASE("per-relation sampler with one relation picks exactly what the uniform sampler picks",
          "[sampling]") {
  const Graph g = small_rmat(9, 8, 3);
  const LocalGraphView view = in_edges_view(g);
  const auto seeds = all_rows(view);
  const Buffer<std::int32_t> zeros =
      Buffer<std::int32_t>::zeros(static_cast<std::size_t>(g.num_edges()));
  for (const std::int64_t fanout : {0, 1, 3, 10, 40, -1}) {
    const SampleKey key{.seed = 11, .batch = fanout};
    const Frontier u = sample_neighbors_local(view, seeds, fanout, key, UniformSampler{});
    const Frontier untyped =
        sample_neighbors_local(view, seeds, -1, key, PerRelationSampler(view, {}, {fanout}));
    const Frontier typed =
        sample_neighbors_local(view, seeds, -1, key, PerRelationSampler(view, zeros, {fanout}));
    CHECK(untyped.eid == u.eid);
    CHECK(untyped.src == u.src);
    CHECK(typed.eid == u.eid);
  }
}

TEST_CASE("per-relation sampler rejects rows not grouped by type and mismatched type arrays",
          "[sampling]") {
  const Graph g = typed_hub();
  // g.in's rows are by source ID: the hub's row starts with cites (papers), then writes.
  const LocalGraphView raw = in_edges_view(g);
  std::vector<std::int32_t> types(static_cast<std::size_t>(g.num_edges()));
  for (std::size_t i = 0; i < types.size(); ++i) types[i] = type_of(g, g.in.edge_ids[i]);
  CHECK_THROWS_AS(PerRelationSampler(raw, Buffer<std::int32_t>(types), {1, 1, 1}), InvalidArgument);
  CHECK_THROWS_WITH(PerRelationSampler(raw, Buffer<std::int32_t>(types), {1, 1, 1}),
                    Catch::Contains("row 0") && Catch::Contains("ascending"));
  const TypedInEdges t = group_in_edges_by_type(g, 1);
  // A type outside the fanout list, a short array, an untyped view with several fanouts.
  CHECK_THROWS_WITH(PerRelationSampler(t.view(), t.edge_types, {1, 1}),
                    Catch::Contains("type 2") && Catch::Contains("[0, 2)"));
  CHECK_THROWS_AS(PerRelationSampler(t.view(), t.edge_types.slice(0, 3), {1, 1, 1}), ShapeError);
  CHECK_THROWS_AS(PerRelationSampler(t.view(), {}, {1, 1, 1}), InvalidArgument);
  CHECK_THROWS_AS(PerRelationSampler(t.view(), t.edge_types, {1, -2, 1}), InvalidArgument);
  CHECK_THROWS_AS(PerRelationSampler(t.view(), t.edge_types, {}), InvalidArgument);
  // validate() compares the array with the view it is asked about.
  const PerRelationSampler s(t.view(), t.edge_types, {1, 1, 1});
  CHECK_NOTHROW(s.validate(t.view()));
  const Graph other = small_rmat(6, 4, 1);
  CHECK_THROWS_AS(
      sample_neighbors_local(in_edges_view(other), std::vector<std::int64_t>{0}, -1, {}, s),
      ShapeError);
  // Same edges, other rows: the per-row relation offsets no longer fit.
  const std::vector<std::int64_t> one_row{0, g.num_edges()};
  LocalGraphView squashed = t.view();
  squashed.indptr = one_row;
  CHECK_THROWS_WITH(s.validate(squashed), Catch::Contains("relation segments"));
}

TEST_CASE("relation segments hold each row's relation offsets, empty relations included",
          "[sampling]") {
  const Hub h;
  const TypedInEdges t = group_in_edges_by_type(typed_hub(h), 1);
  const LocalGraphView v = t.view();
  const auto seg = detail::relation_segments(v, t.edge_types.span(), 3);
  REQUIRE(seg.error.empty());
  REQUIRE(seg.starts.size() == static_cast<std::size_t>(v.num_rows()) * 4);
  // The hub (paper 0): writes, cites, reviews in that order.
  const std::int64_t b = v.row_begin(0);
  CHECK(std::vector<std::int64_t>(seg.starts.begin(), seg.starts.begin() + 4) ==
        std::vector<std::int64_t>{b, b + h.writes, b + h.writes + h.cites,
                                  b + h.writes + h.cites + h.reviews});
  // Every row: offsets ascend from its begin to its end, and each segment holds its type.
  for (std::int64_t r = 0; r < v.num_rows(); ++r) {
    const auto* row = seg.starts.data() + r * 4;
    CHECK(row[0] == v.row_begin(r));
    CHECK(row[3] == v.row_begin(r) + v.degree(r));
    for (std::int32_t ty = 0; ty < 3; ++ty) {
      CHECK(row[ty] <= row[ty + 1]);
      for (auto i = row[ty]; i < row[ty + 1]; ++i)
        CHECK(t.edge_types[static_cast<std::size_t>(i)] == ty);
    }
  }
  // A fault leaves no offsets and names the row.
  std::vector<std::int32_t> bad(t.edge_types.span().begin(), t.edge_types.span().end());
  std::reverse(bad.begin() + v.row_begin(0), bad.begin() + v.row_begin(0) + v.degree(0));
  const auto broken = detail::relation_segments(v, bad, 3);
  CHECK(broken.starts.empty());
  CHECK_THAT(broken.error, Catch::Contains("row 0") && Catch::Contains("ascending"));
}

TEST_CASE("per-relation sampler rebuilt at a site picks what the local one picks", "[sampling]") {
  const Graph g = typed_hub();
  GraphSite site(group_in_edges_by_type(g, 1), 3);
  const PerRelationSampler local(site.view(), site.t_.edge_types, {4, 2, 1});
  const SamplerSpec spec = PerRelationSampler::spec({4, 2, 1});
  CHECK(spec.name == "per_relation");
  CHECK(spec.params.size() == 4 + 3 * 8);
  const auto seeds = all_rows(site.view());
  const SampleKey key{.seed = 8};
  const Frontier want = sample_neighbors_local(site.view(), seeds, -1, key, local);
  for (int i = 0; i < 2; ++i) {  // the second request reuses the cached check
    const Frontier got = BuiltinSamplers::visit(spec, site, [&](const auto& s) {
      return sample_neighbors_local(site.view(), seeds, -1, key, s);
    });
    CHECK(got.eid == want.eid);
  }
  CHECK(BuiltinSamplers::contains("per_relation"));
}

TEST_CASE("per-relation sampler refuses malformed parameter blocks and ungrouped sites",
          "[sampling][bad_input]") {
  const Graph g = typed_hub();
  GraphSite site(group_in_edges_by_type(g, 1), 3);
  auto block = [](std::uint32_t count, std::vector<std::int64_t> values) {
    HeadWriter w;
    w.put(count);
    for (const auto v : values) w.put(v);
    return w.take();
  };
  CHECK_NOTHROW(at(site, block(3, {1, -1, 0})));
  // Count differs from the site's edge types (before reading any value).
  CHECK_THROWS_AS(at(site, block(2, {1, 1})), ProtocolError);
  CHECK_THROWS_WITH(at(site, block(2, {1, 1})), Catch::Contains("3 edge types"));
  CHECK_THROWS_AS(at(site, block(4000000000u, {})), ProtocolError);
  // A value below -1.
  CHECK_THROWS_AS(at(site, block(3, {1, -2, 0})), InvalidArgument);
  CHECK_THROWS_WITH(at(site, block(3, {1, -2, 0})), Catch::Contains("-2"));
  // Truncated, and with trailing bytes.
  auto truncated = block(3, {1, 1, 1});
  truncated.resize(truncated.size() - 3);
  CHECK_THROWS_AS(at(site, truncated), ProtocolError);
  auto trailing = block(3, {1, 1, 1});
  trailing.push_back(std::byte{0});
  CHECK_THROWS_AS(at(site, trailing), ProtocolError);
  CHECK_THROWS_AS(at(site, {}), ProtocolError);
  // The client side refuses a bad value before anything is sent.
  CHECK_THROWS_AS(PerRelationSampler::spec({1, -2}), InvalidArgument);

  // A site whose rows interleave types.
  TypedInEdges raw{g.in, {}};
  std::vector<std::int32_t> types(static_cast<std::size_t>(g.num_edges()));
  for (std::size_t i = 0; i < types.size(); ++i) types[i] = type_of(g, g.in.edge_ids[i]);
  raw.edge_types = Buffer<std::int32_t>(std::move(types));
  GraphSite ungrouped(raw, 3);
  for (int i = 0; i < 2; ++i)  // the verdict is cached, the error repeated
    CHECK_THROWS_WITH(at(ungrouped, block(3, {1, 1, 1})),
                      Catch::Contains("partition 0") && Catch::Contains("row 0"));
}

TEST_CASE("relation fanouts apply the default to omitted relations and resolve names",
          "[sampling]") {
  const std::vector<std::string> names{"author:writes:paper", "paper:cites:paper",
                                       "paper:written_by:author", "author:cites:author"};
  SECTION("defaults, per-layer and all-layer overrides") {
    const RelationFanouts rf{
        {10, 25}, {{"writes", {5}}, {"paper:cites:paper", {1, 2}}, {"written_by", {-1, 0}}}};
    const auto r = rf.resolve(names);
    REQUIRE(r.size() == 2);
    CHECK(r[0] == std::vector<std::int64_t>{5, 1, -1, 10});
    CHECK(r[1] == std::vector<std::int64_t>{5, 2, 0, 25});
    CHECK(RelationFanouts{{3}, {}}.resolve(names) ==
          std::vector<std::vector<std::int64_t>>{{3, 3, 3, 3}});
  }
  SECTION("unknown, ambiguous, repeated and miscounted relations are refused by name") {
    CHECK_THROWS_WITH((RelationFanouts{{10}, {{"likes", {1}}}}.resolve(names)),
                      Catch::Contains("'likes'") && Catch::Contains("unknown") &&
                          Catch::Contains("author:writes:paper"));
    CHECK_THROWS_WITH((RelationFanouts{{10}, {{"cites", {1}}}}.resolve(names)),
                      Catch::Contains("'cites'") && Catch::Contains("ambiguous") &&
                          Catch::Contains("paper:cites:paper") &&
                          Catch::Contains("author:cites:author"));
    CHECK_THROWS_WITH((RelationFanouts{{10}, {{"paper:writes:paper", {1}}}}.resolve(names)),
                      Catch::Contains("paper:writes:paper"));
    CHECK_THROWS_WITH(
        (RelationFanouts{{10}, {{"writes", {1}}, {"author:writes:paper", {2}}}}.resolve(names)),
        Catch::Contains("already given"));
    CHECK_THROWS_WITH((RelationFanouts{{10, 25}, {{"writes", {1, 2, 3}}}}.resolve(names)),
                      Catch::Contains("'writes'") && Catch::Contains("3 values"));
    CHECK_THROWS_AS((RelationFanouts{{10}, {{"writes", {-2}}}}.resolve(names)), InvalidArgument);
    CHECK_THROWS_AS((RelationFanouts{{10, -3}, {}}.resolve(names)), InvalidArgument);
    CHECK_THROWS_AS((RelationFanouts{{}, {}}.resolve(names)), InvalidArgument);
  }
  SECTION("parsing --relation-fanouts text") {
    const auto o = RelationFanouts::parse_overrides("rev_pv=20, paper:pa:author=5/10,x=-1");
    REQUIRE(o.size() == 3);
    CHECK(o[0] == std::pair<std::string, std::vector<std::int64_t>>{"rev_pv", {20}});
    CHECK(o[1] == std::pair<std::string, std::vector<std::int64_t>>{"paper:pa:author", {5, 10}});
    CHECK(o[2] == std::pair<std::string, std::vector<std::int64_t>>{"x", {-1}});
    CHECK(RelationFanouts::parse_overrides("").empty());
    for (const char* bad : {"rev_pv", "=5", "a=", "a=5/", "a=x", "a=5,,b=1", "a=-2", "a=5b"})
      CHECK_THROWS_AS(RelationFanouts::parse_overrides(bad), InvalidArgument);
    CHECK_THROWS_WITH(RelationFanouts::parse_overrides("a=1,b=oops"), Catch::Contains("'b=oops'"));
  }
}

}  // namespace test_sampling_per_relation_sampler

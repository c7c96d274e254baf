// The built-in typed dataset "hsbm": papers, authors and venues whose paper classes need the graph.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "distgraph/core/buffer.hpp"
#include "distgraph/core/error.hpp"
#include "distgraph/graph/generators.hpp"
#include "distgraph/graph/type_map.hpp"
#include "distgraph/io/hetero_dataset.hpp"

namespace distgraph {

/// Sizes and signal strengths of hsbm_dataset. Defaults: 20000 papers, 8000 authors, 40
/// venues, 4 classes, about 340k edges, sized so that `distgraph train` on it takes tens
/// of seconds on a few cores.
struct HsbmOptions {
  std::int64_t num_papers = 20000;
  std::int64_t num_authors = 8000;
  std::int64_t num_venues = 40;  ///< venue v has class v % num_classes; needs >= num_classes
  int num_classes = 4;
  std::int64_t paper_feat_dim = 32;
  std::int64_t author_feat_dim = 32;
  /// Norm of the paper class centroids; features add N(0, 1) noise per dimension.
  double paper_signal = 0.2;
  /// Norm of the author community centroids (noise as above).
  double author_signal = 1.0;
  /// Probability that a paper's one venue has the paper's class (else a venue of another).
  double venue_purity = 0.9;
  /// Probability that each author of a paper is of the paper's community.
  double author_affinity = 0.8;
  int max_authors_per_paper = 4;    ///< each paper has 1..max authors, uniform
  double avg_citations = 5;         ///< citations made per paper (each stored both ways)
  double citation_homophily = 0.6;  ///< fraction of citations to a paper of the same class
  /// Split of the papers (a seeded permutation, as in sbm): train, then val, then test.
  double train_fraction = 0.1, val_fraction = 0.1, test_fraction = 0.8;
  std::uint64_t seed = 42;
};

namespace detail {

/// Sorted, duplicate-free (src, dst) pairs as two buffers.
inline std::pair<Buffer<std::int64_t>, Buffer<std::int64_t>> sorted_edges(
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs) {
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  std::vector<std::int64_t> src(pairs.size()), dst(pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) std::tie(src[i], dst[i]) = pairs[i];
  return {Buffer<std::int64_t>(std::move(src)), Buffer<std::int64_t>(std::move(dst))};
}

/// The same pairs reversed (dst, src), sorted.
inline std::pair<Buffer<std::int64_t>, Buffer<std::int64_t>> reversed_edges(
    const Buffer<std::int64_t>& src, const Buffer<std::int64_t>& dst) {
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) pairs[i] = {dst[i], src[i]};
  return sorted_edges(std::move(pairs));
}

/// Gaussian class centroids of norm ~`signal` (entries N(0, signal^2 / F)) plus N(0, 1)
/// noise per dimension, row-major [cls.size(), f].
inline Buffer<float> centroid_features(SplitMix64& r, const std::vector<std::int64_t>& cls,
                                       std::int64_t num_classes, std::int64_t f, double signal) {
  const auto fz = static_cast<std::size_t>(f);
  const auto centroid = class_centroids(r, num_classes, f, signal);
  std::vector<float> out(cls.size() * fz);
  for (std::size_t v = 0; v < cls.size(); ++v) {
    const double* mu = centroid.data() + static_cast<std::size_t>(cls[v]) * fz;
    for (std::size_t j = 0; j < fz; ++j) out[v * fz + j] = static_cast<float>(mu[j] + r.normal());
  }
  return Buffer<float>(std::move(out));
}

/// Throws InvalidArgument naming the first field of `o` hsbm_dataset cannot use.
inline void check_hsbm_options(const HsbmOptions& o) {
  const auto bad = [](const std::string& field, const std::string& value, const char* want) {
    return generator_error("hsbm", field, value, want);
  };
  if (o.num_classes < 1) throw bad("num_classes", std::to_string(o.num_classes), ">= 1");
  if (o.num_papers < 1) throw bad("num_papers", std::to_string(o.num_papers), ">= 1");
  if (o.num_authors < 1) throw bad("num_authors", std::to_string(o.num_authors), ">= 1");
  if (o.num_venues < o.num_classes)
    throw bad("num_venues", std::to_string(o.num_venues), ">= num_classes");
  if (o.paper_feat_dim < 0 || o.author_feat_dim < 0)
    throw bad("feat dim", std::to_string(std::min(o.paper_feat_dim, o.author_feat_dim)), ">= 0");
  if (o.max_authors_per_paper < 1)
    throw bad("max_authors_per_paper", std::to_string(o.max_authors_per_paper), ">= 1");
  if (!(o.avg_citations >= 0)) throw bad("avg_citations", std::to_string(o.avg_citations), ">= 0");
  for (double p : {o.venue_purity, o.author_affinity, o.citation_homophily})
    if (!(p >= 0 && p <= 1)) throw bad("probability", std::to_string(p), "[0, 1]");
  for (double s : {o.paper_signal, o.author_signal})
    if (!(s >= 0)) throw bad("signal", std::to_string(s), ">= 0");
  check_split_fractions("hsbm", o.train_fraction, o.val_fraction, o.test_fraction);
}

using EdgePairs = std::vector<std::pair<std::int64_t, std::int64_t>>;

/// Each paper's one venue, of the paper's class with probability venue_purity; drawn
/// from `r` after the classes, as (paper, venue) pairs.
inline EdgePairs hsbm_venues(const HsbmOptions& o, const std::vector<std::int64_t>& paper_class,
                             const ClassMembers& venues, SplitMix64& r) {
  EdgePairs pv(paper_class.size());
  for (std::int64_t p = 0; p < o.num_papers; ++p) {
    const auto c = paper_class[static_cast<std::size_t>(p)];
    pv[static_cast<std::size_t>(p)] = {p, venues.draw(r, c, o.venue_purity)};
  }
  return pv;
}

/// Each paper's 1..max_authors_per_paper authors, each of the paper's community with
/// probability author_affinity, as (author, paper) pairs.
inline EdgePairs hsbm_authors(const HsbmOptions& o, const std::vector<std::int64_t>& paper_class,
                              const ClassMembers& authors, SplitMix64& r) {
  EdgePairs ap;
  for (std::int64_t p = 0; p < o.num_papers; ++p) {
    const auto c = paper_class[static_cast<std::size_t>(p)];
    const auto k =
        1 + static_cast<int>(r.below(static_cast<std::uint64_t>(o.max_authors_per_paper)));
    // An author's community may be empty for tiny author counts: draw then falls back.
    for (int i = 0; i < k; ++i) ap.emplace_back(authors.draw(r, c, o.author_affinity), p);
  }
  return ap;
}

/// avg_citations * num_papers citations from a uniform paper to one of its class with
/// probability citation_homophily, each stored both ways; self-citations are dropped.
inline EdgePairs hsbm_citations(const HsbmOptions& o, const std::vector<std::int64_t>& paper_class,
                                const ClassMembers& papers, SplitMix64& r) {
  const std::int64_t P = o.num_papers;
  const auto num_cites =
      static_cast<std::int64_t>(std::llround(static_cast<double>(P) * o.avg_citations));
  EdgePairs cites;
  for (std::int64_t i = 0; i < num_cites && P > 1; ++i) {
    const auto u = static_cast<std::int64_t>(r.below(static_cast<std::uint64_t>(P)));
    const auto v = papers.draw(r, paper_class[static_cast<std::size_t>(u)], o.citation_homophily);
    if (u == v) continue;
    cites.emplace_back(u, v);
    cites.emplace_back(v, u);
  }
  return cites;
}

/// Assembly: the five edge types, each sorted and duplicate-free, the rev_ types the
/// reversed pairs; sets d.src, d.dst and d.types.
inline void hsbm_edge_types(const HsbmOptions& o, EdgePairs writes, EdgePairs published_in,
                            EdgePairs cites, HeteroDataset& d) {
  auto [w_src, w_dst] = sorted_edges(std::move(writes));
  auto [rw_src, rw_dst] = reversed_edges(w_src, w_dst);
  auto [p_src, p_dst] = sorted_edges(std::move(published_in));
  auto [rp_src, rp_dst] = reversed_edges(p_src, p_dst);
  auto [c_src, c_dst] = sorted_edges(std::move(cites));
  d.src = {w_src, rw_src, p_src, rp_src, c_src};
  d.dst = {w_dst, rw_dst, p_dst, rp_dst, c_dst};
  std::vector<std::int64_t> edge_counts;
  for (const auto& s : d.src) edge_counts.push_back(static_cast<std::int64_t>(s.size()));
  d.types = TypeMap({"paper", "author", "venue"}, {o.num_papers, o.num_authors, o.num_venues},
                    {{"author", "writes", "paper"},
                     {"paper", "rev_writes", "author"},
                     {"paper", "published_in", "venue"},
                     {"venue", "rev_published_in", "paper"},
                     {"paper", "cites", "paper"}},
                    edge_counts);
}

/// meta.json of the generated dataset: the declarations write_hetero_dataset would
/// write, the split sizes, notes on the features, each venue's class and the options.
inline nlohmann::json hsbm_meta(const HsbmOptions& o, const HeteroDataset& d,
                                const std::vector<std::int64_t>& venue_class) {
  const auto decl = type_declarations_json(d.types, d.feat_dim);
  return {{"name", d.name},
          {"ntypes", nlohmann::json(decl.ntypes)},
          {"etypes", nlohmann::json(decl.etypes)},
          {"num_edges", nlohmann::json(decl.num_edges)},
          {"target_ntype", d.target_ntype},
          {"num_classes", d.num_classes},
          {"feat_dims", nlohmann::json(decl.feat_dims)},
          {"featureless_ntypes", nlohmann::json(decl.featureless_ntypes)},
          {"split",
           {{"train", Dataset::count(d.train_mask)},
            {"val", Dataset::count(d.val_mask)},
            {"test", Dataset::count(d.test_mask)}}},
          {"split_note", "seeded random permutation of the papers: train, then val, then test"},
          {"features",
           {{"paper", "weak class centroid (norm paper_signal) + N(0, 1) noise per dimension"},
            {"author", "community centroid (norm author_signal) + N(0, 1) noise per dimension"},
            {"venue", "none (featureless)"}}},
          {"venue_class", venue_class},
          {"hsbm",
           {{"num_papers", o.num_papers},
            {"num_authors", o.num_authors},
            {"num_venues", o.num_venues},
            {"num_classes", o.num_classes},
            {"paper_feat_dim", o.paper_feat_dim},
            {"author_feat_dim", o.author_feat_dim},
            {"paper_signal", o.paper_signal},
            {"author_signal", o.author_signal},
            {"venue_purity", o.venue_purity},
            {"author_affinity", o.author_affinity},
            {"max_authors_per_paper", o.max_authors_per_paper},
            {"avg_citations", o.avg_citations},
            {"citation_homophily", o.citation_homophily},
            {"seed", o.seed}}}};
}

}  // namespace detail

/// Generates the built-in typed dataset "hsbm", deterministic in `o.seed`.
///
/// Node types (in this order): "paper" (the target, labelled, paper_feat_dim features),
/// "author" (author_feat_dim features), "venue" (featureless). Edge types: ("author",
/// "writes", "paper"), ("paper", "rev_writes", "author"), ("paper", "published_in",
/// "venue"), ("venue", "rev_published_in", "paper"), ("paper", "cites", "paper"). Every
/// type's edges are sorted by (src, dst) without duplicates; a rev_ type holds exactly
/// the reversed pairs; "cites" is symmetric (both directions in the one type), no
/// self-loops.
///
/// Construction: venue v has class v % num_classes. A paper's class is uniform; its one
/// venue has that class with probability venue_purity (else a venue of another class).
/// Authors have a uniform community; each paper has 1..max_authors_per_paper authors,
/// each of its community with probability author_affinity. Each paper cites
/// avg_citations others, of its class with probability citation_homophily. Features are
/// a class (community) centroid plus N(0, 1) noise per dimension.
///
/// Intended difficulty: paper features are centroids of norm paper_signal = 0.2 under
/// unit noise, so even the Bayes-optimal features-only classifier (nearest true centroid)
/// scores only ~0.30 on 4 classes (chance 0.25; measured by tests/io/test_hetero_dataset).
/// The venue alone gives the class with probability venue_purity (a vote of the venue's
/// training papers: ~0.90), but venues are featureless: a model must reach them through
/// "published_in" and learn their class from the papers published there (two hops:
/// paper -> venue -> paper; averaging ~500 papers' weak features makes it plain) or
/// from a learned venue embedding. Authors (one hop, community signal 1.0) and
/// citations add a little on top, so a 2-layer heterogeneous GNN should land near 0.9
/// and a features-only MLP near 0.3. Throws InvalidArgument naming a bad field.
inline HeteroDataset hsbm_dataset(const HsbmOptions& o = {}) {
  detail::check_hsbm_options(o);
  using detail::SplitMix64;
  const std::int64_t C = o.num_classes;
  // One stream per stage, so changing one size does not reshuffle unrelated stages.
  SplitMix64 r_class(o.seed, 0), r_write(o.seed, 1), r_cite(o.seed, 2), r_feat(o.seed, 3),
      r_split(o.seed, 4);

  std::vector<std::int64_t> venue_class(static_cast<std::size_t>(o.num_venues));
  for (std::int64_t v = 0; v < o.num_venues; ++v) venue_class[static_cast<std::size_t>(v)] = v % C;
  const auto paper_class =
      detail::uniform_classes(r_class, static_cast<std::size_t>(o.num_papers), C);
  const auto author_comm =
      detail::uniform_classes(r_class, static_cast<std::size_t>(o.num_authors), C);
  const detail::ClassMembers venues(venue_class, C), authors(author_comm, C),
      papers(paper_class, C);

  HeteroDataset d;
  d.name = "hsbm";
  auto pv = detail::hsbm_venues(o, paper_class, venues, r_class);
  auto ap = detail::hsbm_authors(o, paper_class, authors, r_write);
  auto cites = detail::hsbm_citations(o, paper_class, papers, r_cite);
  detail::hsbm_edge_types(o, std::move(ap), std::move(pv), std::move(cites), d);

  d.feat = {detail::centroid_features(r_feat, paper_class, C, o.paper_feat_dim, o.paper_signal),
            detail::centroid_features(r_feat, author_comm, C, o.author_feat_dim, o.author_signal),
            Buffer<float>()};
  d.feat_dim = {o.paper_feat_dim, o.author_feat_dim, 0};
  if (o.paper_feat_dim == 0) d.feat[0] = Buffer<float>();
  if (o.author_feat_dim == 0) d.feat[1] = Buffer<float>();
  d.target_ntype = "paper";
  d.label = Buffer<std::int64_t>(paper_class);
  d.num_classes = C;

  const auto pz = static_cast<std::size_t>(o.num_papers);
  const auto split = detail::seeded_split(r_split, o.num_papers, o.train_fraction, o.val_fraction,
                                          o.test_fraction);
  d.train_mask = Buffer<bool>::zeros(pz);
  d.val_mask = Buffer<bool>::zeros(pz);
  d.test_mask = Buffer<bool>::zeros(pz);
  split.mark(d.train_mask, d.val_mask, d.test_mask);
  d.meta = detail::hsbm_meta(o, d, venue_class);
  return d;
}

}  // namespace distgraph

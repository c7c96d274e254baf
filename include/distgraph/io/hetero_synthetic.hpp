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

/// Members of each class (counting sort of `cls`), so a uniform member is one draw.
struct ClassMembers {
  std::vector<std::int64_t> begin, members;
  ClassMembers(const std::vector<std::int64_t>& cls, std::int64_t num_classes)
      : begin(static_cast<std::size_t>(num_classes) + 1, 0), members(cls.size()) {
    for (auto c : cls) ++begin[static_cast<std::size_t>(c) + 1];
    for (std::size_t c = 0; c + 1 < begin.size(); ++c) begin[c + 1] += begin[c];
    std::vector<std::int64_t> at(begin.begin(), begin.end() - 1);
    for (std::size_t v = 0; v < cls.size(); ++v)
      members[static_cast<std::size_t>(at[static_cast<std::size_t>(cls[v])]++)] =
          static_cast<std::int64_t>(v);
  }
  /// With probability `same` (or when no other class has members) a uniform member of
  /// class c, else a uniform member of the other classes; c must have members when chosen.
  std::int64_t draw(SplitMix64& r, std::int64_t c, double same) const {
    const auto cz = static_cast<std::size_t>(c);
    const std::int64_t cb = begin[cz], cs = begin[cz + 1] - cb;
    const auto n = static_cast<std::int64_t>(members.size());
    const std::int64_t others = n - cs;
    if (cs > 0 && (others == 0 || r.uniform() < same))
      return members[static_cast<std::size_t>(cb) + r.below(static_cast<std::uint64_t>(cs))];
    if (others == 0) return members[r.below(static_cast<std::uint64_t>(n))];
    auto i = static_cast<std::int64_t>(r.below(static_cast<std::uint64_t>(others)));
    if (i >= cb) i += cs;
    return members[static_cast<std::size_t>(i)];
  }
};

/// Gaussian class centroids of norm ~`signal` (entries N(0, signal^2 / F)) plus N(0, 1)
/// noise per dimension, row-major [cls.size(), f].
inline Buffer<float> centroid_features(SplitMix64& r, const std::vector<std::int64_t>& cls,
                                       std::int64_t num_classes, std::int64_t f, double signal) {
  const auto fz = static_cast<std::size_t>(f);
  std::vector<double> centroid(static_cast<std::size_t>(num_classes) * fz);
  const double scale = f > 0 ? signal / std::sqrt(static_cast<double>(f)) : 0.0;
  for (auto& x : centroid) x = r.normal() * scale;
  std::vector<float> out(cls.size() * fz);
  for (std::size_t v = 0; v < cls.size(); ++v) {
    const double* mu = centroid.data() + static_cast<std::size_t>(cls[v]) * fz;
    for (std::size_t j = 0; j < fz; ++j) out[v * fz + j] = static_cast<float>(mu[j] + r.normal());
  }
  return Buffer<float>(std::move(out));
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
  auto bad = [](const std::string& field, const std::string& value, const std::string& want) {
    return InvalidArgument("hsbm: " + field + " " + value + "; expected " + want);
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
  for (double f : {o.train_fraction, o.val_fraction, o.test_fraction})
    if (!(f >= 0 && f <= 1)) throw bad("split fraction", std::to_string(f), "[0, 1]");
  if (o.train_fraction + o.val_fraction + o.test_fraction > 1 + 1e-9)
    throw bad("train + val + test fraction",
              std::to_string(o.train_fraction + o.val_fraction + o.test_fraction), "<= 1");

  using detail::SplitMix64;
  const std::int64_t C = o.num_classes, P = o.num_papers, A = o.num_authors, V = o.num_venues;
  const auto pz = static_cast<std::size_t>(P);
  // One stream per stage, so changing one size does not reshuffle unrelated stages.
  SplitMix64 r_class(o.seed, 0), r_write(o.seed, 1), r_cite(o.seed, 2), r_feat(o.seed, 3),
      r_split(o.seed, 4);

  std::vector<std::int64_t> paper_class(pz), author_comm(static_cast<std::size_t>(A)),
      venue_class(static_cast<std::size_t>(V));
  for (std::int64_t v = 0; v < V; ++v) venue_class[static_cast<std::size_t>(v)] = v % C;
  for (auto& c : paper_class) c = static_cast<std::int64_t>(r_class.below(C));
  for (auto& c : author_comm) c = static_cast<std::int64_t>(r_class.below(C));
  const detail::ClassMembers venues(venue_class, C), authors(author_comm, C),
      papers(paper_class, C);

  std::vector<std::pair<std::int64_t, std::int64_t>> pv(pz), ap, cites;
  for (std::int64_t p = 0; p < P; ++p) {
    const auto c = paper_class[static_cast<std::size_t>(p)];
    pv[static_cast<std::size_t>(p)] = {p, venues.draw(r_class, c, o.venue_purity)};
  }
  for (std::int64_t p = 0; p < P; ++p) {
    const auto c = paper_class[static_cast<std::size_t>(p)];
    const auto k =
        1 + static_cast<int>(r_write.below(static_cast<std::uint64_t>(o.max_authors_per_paper)));
    // An author's community may be empty for tiny author counts: draw then falls back.
    for (int i = 0; i < k; ++i) ap.emplace_back(authors.draw(r_write, c, o.author_affinity), p);
  }
  const auto num_cites =
      static_cast<std::int64_t>(std::llround(static_cast<double>(P) * o.avg_citations));
  for (std::int64_t i = 0; i < num_cites && P > 1; ++i) {
    const auto u = static_cast<std::int64_t>(r_cite.below(static_cast<std::uint64_t>(P)));
    const auto v =
        papers.draw(r_cite, paper_class[static_cast<std::size_t>(u)], o.citation_homophily);
    if (u == v) continue;
    cites.emplace_back(u, v);
    cites.emplace_back(v, u);
  }

  HeteroDataset d;
  d.name = "hsbm";
  auto [w_src, w_dst] = detail::sorted_edges(std::move(ap));
  auto [rw_src, rw_dst] = detail::reversed_edges(w_src, w_dst);
  auto [p_src, p_dst] = detail::sorted_edges(std::move(pv));
  auto [rp_src, rp_dst] = detail::reversed_edges(p_src, p_dst);
  auto [c_src, c_dst] = detail::sorted_edges(std::move(cites));
  d.src = {w_src, rw_src, p_src, rp_src, c_src};
  d.dst = {w_dst, rw_dst, p_dst, rp_dst, c_dst};
  std::vector<std::int64_t> edge_counts;
  for (const auto& s : d.src) edge_counts.push_back(static_cast<std::int64_t>(s.size()));
  d.types = TypeMap({"paper", "author", "venue"}, {P, A, V},
                    {{"author", "writes", "paper"},
                     {"paper", "rev_writes", "author"},
                     {"paper", "published_in", "venue"},
                     {"venue", "rev_published_in", "paper"},
                     {"paper", "cites", "paper"}},
                    edge_counts);

  d.feat = {detail::centroid_features(r_feat, paper_class, C, o.paper_feat_dim, o.paper_signal),
            detail::centroid_features(r_feat, author_comm, C, o.author_feat_dim, o.author_signal),
            Buffer<float>()};
  d.feat_dim = {o.paper_feat_dim, o.author_feat_dim, 0};
  if (o.paper_feat_dim == 0) d.feat[0] = Buffer<float>();
  if (o.author_feat_dim == 0) d.feat[1] = Buffer<float>();
  d.target_ntype = "paper";
  d.label = Buffer<std::int64_t>(paper_class);
  d.num_classes = C;

  // Split: a seeded permutation of the papers, as sbm() does.
  std::vector<std::int64_t> perm(pz);
  for (std::int64_t p = 0; p < P; ++p) perm[static_cast<std::size_t>(p)] = p;
  for (std::size_t i = pz; i > 1; --i) std::swap(perm[i - 1], perm[r_split.below(i)]);
  const auto count = [&](double frac) {
    return static_cast<std::size_t>(std::llround(frac * static_cast<double>(P)));
  };
  const std::size_t n_train = std::min(pz, count(o.train_fraction));
  const std::size_t n_val = std::min(pz - n_train, count(o.val_fraction));
  const std::size_t n_test = std::min(pz - n_train - n_val, count(o.test_fraction));
  d.train_mask = Buffer<bool>::zeros(pz);
  d.val_mask = Buffer<bool>::zeros(pz);
  d.test_mask = Buffer<bool>::zeros(pz);
  for (std::size_t i = 0; i < n_train + n_val + n_test; ++i) {
    auto& mask = i < n_train ? d.train_mask : i < n_train + n_val ? d.val_mask : d.test_mask;
    mask[static_cast<std::size_t>(perm[i])] = true;
  }

  nlohmann::json ntypes = nlohmann::json::object(), etypes = nlohmann::json::array(),
                 num_edges = nlohmann::json::object();
  for (std::int32_t t = 0; t < d.types.num_node_types(); ++t)
    ntypes[d.types.node_type_name(NodeType(t))] = d.types.num_nodes(NodeType(t));
  for (std::int32_t e = 0; e < d.types.num_edge_types(); ++e) {
    const auto& c = d.types.edge_type(EdgeType(e));
    etypes.push_back({c.src_type, c.edge_type, c.dst_type});
    num_edges[detail::edge_folder_name(c)] = d.types.num_edges(EdgeType(e));
  }
  d.meta = {{"name", d.name},
            {"ntypes", ntypes},
            {"etypes", etypes},
            {"num_edges", num_edges},
            {"target_ntype", d.target_ntype},
            {"num_classes", d.num_classes},
            {"feat_dims", nlohmann::json::object()},
            {"featureless_ntypes", nlohmann::json::array()},
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
  for (std::int32_t t = 0; t < d.types.num_node_types(); ++t) {
    const auto& nt = d.types.node_type_name(NodeType(t));
    if (d.feat_dim[static_cast<std::size_t>(t)] > 0)
      d.meta["feat_dims"][nt] = d.feat_dim[static_cast<std::size_t>(t)];
    else
      d.meta["featureless_ntypes"].push_back(nt);
  }
  return d;
}

}  // namespace distgraph

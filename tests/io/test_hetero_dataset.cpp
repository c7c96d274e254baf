// Typed dataset folders: dblp from ../shared/data, hsbm round trip and difficulty, every bad input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "distgraph/io/hetero_dataset.hpp"
#include "distgraph/io/hetero_synthetic.hpp"
#include "support/temp_dir.hpp"
#include "support/what_contains.hpp"

namespace test_io_hetero_dataset {

using namespace distgraph;
using distgraph::test::WhatContains;
namespace fs = std::filesystem;

namespace {

template <class T>
std::vector<T> to_vector(const Buffer<T>& b) {
  return std::vector<T>(b.begin(), b.end());
}

Buffer<std::int64_t> ids(std::vector<std::int64_t> v) { return Buffer<std::int64_t>(std::move(v)); }

Buffer<bool> mask(std::initializer_list<int> flags) {
  auto b = Buffer<bool>::zeros(flags.size());
  std::size_t i = 0;
  for (int f : flags) b[i++] = f != 0;
  return b;
}

/// users (3 features) like items (2 features) and tags (featureless); two relations share
/// the name "likes"; users are labelled with 2 classes.
HeteroDataset small_hetero() {
  HeteroDataset d;
  d.name = "toy";
  d.types = TypeMap({"user", "item", "tag"}, {4, 5, 3},
                    {{"user", "likes", "item"},
                     {"item", "rev_likes", "user"},
                     {"user", "likes", "tag"},
                     {"item", "has", "tag"}},
                    {5, 5, 2, 3});
  d.src = {ids({0, 0, 1, 2, 3}), ids({0, 1, 2, 3, 4}), ids({1, 3}), ids({0, 2, 4})};
  d.dst = {ids({0, 1, 2, 3, 4}), ids({0, 0, 1, 2, 3}), ids({0, 2}), ids({1, 1, 2})};
  std::vector<float> fu(12), fi(10);
  for (std::size_t i = 0; i < fu.size(); ++i) fu[i] = static_cast<float>(i) * 0.5f - 2.f;
  for (std::size_t i = 0; i < fi.size(); ++i) fi[i] = static_cast<float>(i) * 0.25f;
  d.feat = {Buffer<float>(fu), Buffer<float>(fi), Buffer<float>()};
  d.feat_dim = {3, 2, 0};
  d.target_ntype = "user";
  d.label = ids({0, 1, 1, 0});
  d.num_classes = 2;
  d.train_mask = mask({1, 1, 0, 0});
  d.val_mask = mask({0, 0, 1, 0});
  d.test_mask = mask({0, 0, 0, 1});
  d.meta = {{"note", "made up"}, {"files", {{"stale", 1}}}};
  return d;
}

void check_equal(const HeteroDataset& a, const HeteroDataset& b) {
  CHECK(a.name == b.name);
  REQUIRE(a.types.node_type_names() == b.types.node_type_names());
  REQUIRE(a.types.edge_types() == b.types.edge_types());
  CHECK(a.types.node_offsets() == b.types.node_offsets());
  CHECK(a.types.edge_offsets() == b.types.edge_offsets());
  REQUIRE(a.src.size() == b.src.size());
  for (std::size_t e = 0; e < a.src.size(); ++e) {
    CHECK(to_vector(a.src[e]) == to_vector(b.src[e]));
    CHECK(to_vector(a.dst[e]) == to_vector(b.dst[e]));
  }
  CHECK(a.feat_dim == b.feat_dim);
  REQUIRE(a.feat.size() == b.feat.size());
  for (std::size_t t = 0; t < a.feat.size(); ++t)
    CHECK(to_vector(a.feat[t]) == to_vector(b.feat[t]));
  CHECK(a.target_ntype == b.target_ntype);
  CHECK(a.num_classes == b.num_classes);
  CHECK(to_vector(a.label) == to_vector(b.label));
  CHECK(to_vector(a.train_mask) == to_vector(b.train_mask));
  CHECK(to_vector(a.val_mask) == to_vector(b.val_mask));
  CHECK(to_vector(a.test_mask) == to_vector(b.test_mask));
}

/// A valid folder of small_hetero() under tmp/toy.
fs::path write_toy(const distgraph::test::TempDir& tmp) {
  const auto dir = tmp / "toy";
  write_hetero_dataset(small_hetero(), dir);
  return dir;
}

/// Rewrites dir/meta.json through `edit` (key order kept).
void edit_meta(const fs::path& dir, const std::function<void(nlohmann::ordered_json&)>& edit) {
  auto meta = nlohmann::ordered_json::parse(std::ifstream(dir / "meta.json"));
  edit(meta);
  std::ofstream(dir / "meta.json") << meta.dump(2);
}

bool sorted_unique(const Buffer<std::int64_t>& s, const Buffer<std::int64_t>& d) {
  for (std::size_t i = 1; i < s.size(); ++i)
    if (std::pair(s[i - 1], d[i - 1]) >= std::pair(s[i], d[i])) return false;
  return true;
}

}  // namespace

TEST_CASE("dblp loads with the types, counts, widths and split of its meta.json", "[io][data]") {
  DISTGRAPH_REQUIRE_DATASET(dir, "dblp");
  REQUIRE(is_hetero_dataset(dir));
  const auto d = load_hetero_dataset(dir);
  const auto& meta = d.meta;
  CHECK(d.name == "dblp");
  CHECK(d.types.node_type_names() == std::vector<std::string>{"author", "paper", "term", "venue"});
  for (std::int32_t t = 0; t < d.types.num_node_types(); ++t) {
    const auto& nt = d.types.node_type_name(NodeType(t));
    CHECK(d.types.num_nodes(NodeType(t)) == meta.at("ntypes").at(nt).get<std::int64_t>());
    const auto width = meta.at("feat_dims").value(nt, std::int64_t{0});
    CHECK(d.feat_dim[static_cast<std::size_t>(t)] == width);
    CHECK(d.feat[static_cast<std::size_t>(t)].size() ==
          static_cast<std::size_t>(width * d.types.num_nodes(NodeType(t))));
  }
  CHECK(d.feat_dim == std::vector<std::int64_t>{334, 128, 50, 0});
  REQUIRE(d.types.num_edge_types() == 6);
  for (std::int32_t e = 0; e < 6; ++e) {
    const auto& c = d.types.edge_type(EdgeType(e));
    const auto& listed = meta.at("etypes").at(static_cast<std::size_t>(e));
    CHECK(c.src_type == listed.at(0));
    CHECK(c.edge_type == listed.at(1));
    CHECK(c.dst_type == listed.at(2));
    CHECK(d.types.num_edges(EdgeType(e)) ==
          meta.at("num_edges").at(c.src_type + "__" + c.edge_type + "__" + c.dst_type));
    CHECK(sorted_unique(d.src[static_cast<std::size_t>(e)], d.dst[static_cast<std::size_t>(e)]));
  }
  CHECK(d.num_nodes() == 4057 + 14328 + 7723 + 20);
  CHECK(d.num_edges() == 2 * (19645 + 85810 + 14328));
  CHECK(d.target_ntype == "author");
  CHECK(d.target() == NodeType(0));
  CHECK(d.num_classes == 4);
  CHECK(Dataset::count(d.train_mask) == 400);
  CHECK(Dataset::count(d.val_mask) == 400);
  CHECK(Dataset::count(d.test_mask) == 3257);
  std::vector<std::int64_t> counts(4, 0);
  for (auto c : d.label) counts[static_cast<std::size_t>(c)]++;
  CHECK(counts == meta.at("class_counts").get<std::vector<std::int64_t>>());
  // paper__pa__author and author__rev_pa__paper hold the same pairs.
  std::vector<std::pair<std::int64_t, std::int64_t>> fwd, rev;
  for (std::size_t i = 0; i < d.src[0].size(); ++i) fwd.emplace_back(d.src[0][i], d.dst[0][i]);
  for (std::size_t i = 0; i < d.src[1].size(); ++i) rev.emplace_back(d.dst[1][i], d.src[1][i]);
  std::sort(rev.begin(), rev.end());
  CHECK(fwd == rev);
  check_equal(d, load_hetero_dataset(dir, {.mmap = false, .num_threads = 1}));
}

TEST_CASE("is_hetero_dataset tells the typed layout from the homogeneous one", "[io]") {
  distgraph::test::TempDir tmp;
  CHECK_FALSE(is_hetero_dataset(tmp.path()));
  CHECK(is_hetero_dataset(write_toy(tmp)));
  Dataset homo;
  homo.name = "h";
  homo.num_nodes = 2;
  homo.src = ids({0});
  homo.dst = ids({1});
  write_dataset(tmp / "homo", homo);
  CHECK_FALSE(is_hetero_dataset(tmp / "homo"));
  std::ofstream(tmp / "homo" / "meta.json") << "{ not json";
  CHECK_FALSE(is_hetero_dataset(tmp / "homo"));
}

TEST_CASE("write_hetero_dataset then load_hetero_dataset gives back the same typed dataset",
          "[io]") {
  distgraph::test::TempDir tmp;
  const auto d = small_hetero();
  const auto dir = write_toy(tmp);
  const auto back = load_hetero_dataset(dir);
  check_equal(d, back);
  CHECK(back.meta.at("note") == "made up");
  CHECK(back.meta.at("featureless_ntypes") == nlohmann::json{"tag"});
  CHECK(back.meta.at("feat_dims") == nlohmann::json{{"user", 3}, {"item", 2}});
  CHECK(back.meta.at("files").at("nodes/user/feat.npy").at("shape") == nlohmann::json{4, 3});
  CHECK_FALSE(back.meta.at("files").contains("stale"));
  CHECK_FALSE(fs::exists(dir / "nodes" / "tag"));
  // Two relations named "likes": the canonical triples tell them apart.
  CHECK(back.types.edge_type(CanonicalEdgeType{"user", "likes", "tag"}) == EdgeType(2));
  CHECK_THROWS_AS(back.types.edge_type("likes"), InvalidArgument);
  CHECK(back.num_nodes() == 12);
  CHECK(back.num_edges() == 15);

  // Rewritten without labels and with the item features dropped: stale files go.
  auto bare = small_hetero();
  bare.target_ntype.clear();
  bare.label = {};
  bare.train_mask = bare.val_mask = bare.test_mask = {};
  bare.feat[1] = {};
  bare.feat_dim[1] = 0;
  write_hetero_dataset(bare, dir);
  CHECK_FALSE(fs::exists(dir / "nodes" / "user" / "label.npy"));
  CHECK_FALSE(fs::exists(dir / "nodes" / "item" / "feat.npy"));
  const auto bare_back = load_hetero_dataset(dir);
  check_equal(bare, bare_back);
  CHECK_THROWS_MATCHES(bare_back.target(), InvalidArgument, WhatContains("no target node type"));
}

TEST_CASE("hsbm round-trips through a folder array by array", "[io]") {
  distgraph::test::TempDir tmp;
  const auto d = hsbm_dataset({.num_papers = 600, .num_authors = 200, .num_venues = 8});
  write_hetero_dataset(d, tmp / "hsbm");
  const auto back = load_hetero_dataset(tmp / "hsbm");
  check_equal(d, back);
  CHECK(back.meta.at("hsbm").at("num_papers") == 600);
  CHECK(back.meta.at("venue_class").size() == 8);
}

TEST_CASE(
    "hsbm is deterministic, sorted, duplicate-free, and its rev_ types are the reversed pairs",
    "[io]") {
  const HsbmOptions o{.num_papers = 2000, .num_authors = 700, .num_venues = 12, .seed = 7};
  const auto d = hsbm_dataset(o);
  check_equal(d, hsbm_dataset(o));
  CHECK(
      to_vector(d.label) !=
      to_vector(hsbm_dataset({.num_papers = 2000, .num_authors = 700, .num_venues = 12, .seed = 8})
                    .label));
  CHECK(d.name == "hsbm");
  CHECK(d.types.node_type_names() == std::vector<std::string>{"paper", "author", "venue"});
  CHECK(d.target_ntype == "paper");
  CHECK(d.feat_dim == std::vector<std::int64_t>{32, 32, 0});
  for (std::size_t e = 0; e < d.src.size(); ++e) {
    INFO("edge type " << e);
    CHECK(sorted_unique(d.src[e], d.dst[e]));
    d.types.validate_node_ids(d.types.node_type(d.types.edge_types()[e].src_type), d.src[e]);
    d.types.validate_node_ids(d.types.node_type(d.types.edge_types()[e].dst_type), d.dst[e]);
  }
  const auto reversed = [&](std::size_t e) {
    std::vector<std::pair<std::int64_t, std::int64_t>> p;
    for (std::size_t i = 0; i < d.src[e].size(); ++i) p.emplace_back(d.dst[e][i], d.src[e][i]);
    std::sort(p.begin(), p.end());
    return p;
  };
  const auto pairs = [&](std::size_t e) {
    std::vector<std::pair<std::int64_t, std::int64_t>> p;
    for (std::size_t i = 0; i < d.src[e].size(); ++i) p.emplace_back(d.src[e][i], d.dst[e][i]);
    return p;
  };
  CHECK(pairs(1) == reversed(0));
  CHECK(pairs(3) == reversed(2));
  CHECK(pairs(4) == reversed(4));  // cites is symmetric
  for (std::size_t i = 0; i < d.src[4].size(); ++i) REQUIRE(d.src[4][i] != d.dst[4][i]);
  // Every paper has exactly one venue.
  CHECK(d.src[2].size() == 2000);
  const auto n =
      Dataset::count(d.train_mask) + Dataset::count(d.val_mask) + Dataset::count(d.test_mask);
  CHECK(n == 2000);
  CHECK(Dataset::count(d.train_mask) == 200);
}

TEST_CASE("hsbm paper labels need the venue neighbours: features alone score near chance", "[io]") {
  const auto d = hsbm_dataset();  // the defaults `distgraph train` uses
  const auto paper = d.types.node_type("paper");
  const auto n = static_cast<std::size_t>(d.types.num_nodes(paper));
  const auto f = static_cast<std::size_t>(d.feat_dim[0]);
  const auto c = static_cast<std::size_t>(d.num_classes);
  // Nearest class mean on the paper features, means from the training papers.
  std::vector<double> mean(c * f, 0.0);
  std::vector<double> seen(c, 0.0);
  for (std::size_t p = 0; p < n; ++p) {
    if (!d.train_mask[p]) continue;
    const auto y = static_cast<std::size_t>(d.label[p]);
    seen[y] += 1;
    for (std::size_t j = 0; j < f; ++j) mean[y * f + j] += d.feat[0][p * f + j];
  }
  for (std::size_t y = 0; y < c; ++y)
    for (std::size_t j = 0; j < f; ++j) mean[y * f + j] /= std::max(seen[y], 1.0);
  // Venue vote: each venue's class is the majority label of its training papers.
  const auto venue_of = [&](std::size_t p) { return static_cast<std::size_t>(d.dst[2][p]); };
  const auto num_venues = static_cast<std::size_t>(d.types.num_nodes(d.types.node_type("venue")));
  std::vector<std::vector<int>> votes(num_venues, std::vector<int>(c, 0));
  for (std::size_t p = 0; p < n; ++p)
    if (d.train_mask[p]) votes[venue_of(p)][static_cast<std::size_t>(d.label[p])]++;
  double test = 0, ncm_right = 0, venue_right = 0;
  for (std::size_t p = 0; p < n; ++p) {
    if (!d.test_mask[p]) continue;
    test += 1;
    std::size_t best = 0;
    double best_dist = 1e300;
    for (std::size_t y = 0; y < c; ++y) {
      double dist = 0;
      for (std::size_t j = 0; j < f; ++j) {
        const double diff = d.feat[0][p * f + j] - mean[y * f + j];
        dist += diff * diff;
      }
      if (dist < best_dist) best_dist = dist, best = y;
    }
    ncm_right += best == static_cast<std::size_t>(d.label[p]);
    const auto& v = votes[venue_of(p)];
    const auto vote = static_cast<std::size_t>(std::max_element(v.begin(), v.end()) - v.begin());
    venue_right += vote == static_cast<std::size_t>(d.label[p]);
  }
  const double ncm = ncm_right / test, venue = venue_right / test;
  INFO("features-only nearest class mean " << ncm << ", venue vote " << venue);
  CHECK(ncm < 0.40);
  CHECK(venue > 0.85);
}

TEST_CASE("a typed folder with int32 ids, float64 features, a uint8 mask and no feat_dims loads",
          "[io]") {
  distgraph::test::TempDir tmp;
  const auto dir = write_toy(tmp);
  write_npy(dir / "edges" / "user__likes__item" / "src.npy",
            std::vector<std::int32_t>{0, 0, 1, 2, 3});
  std::vector<double> f64(12, 0.5);
  write_npy(dir / "nodes" / "user" / "feat.npy", f64, {4, 3});
  write_npy(dir / "nodes" / "user" / "val_mask.npy", std::vector<std::uint8_t>{0, 0, 1, 0});
  // A type with features that feat_dims does not mention, and meta without optional keys.
  edit_meta(dir, [](auto& m) {
    m.erase("feat_dims");
    m.erase("num_edges");
    m.erase("featureless_ntypes");
    m.erase("num_classes");
    m.erase("split");
  });
  const auto d = load_hetero_dataset(dir);
  CHECK(d.src[0][4] == 3);
  CHECK(d.feat[0][11] == 0.5f);
  CHECK(d.feat_dim == std::vector<std::int64_t>{3, 2, 0});
  CHECK(d.num_classes == 2);
  CHECK(Dataset::count(d.val_mask) == 1);
}

TEST_CASE("bad meta.json in a typed folder is a FormatError naming the type and meta.json",
          "[io]") {
  distgraph::test::TempDir tmp;
  const auto dir = write_toy(tmp);
  const auto expect_format = [&](const std::function<void(nlohmann::ordered_json&)>& edit,
                                 std::initializer_list<std::string> parts) {
    write_toy(tmp);
    edit_meta(dir, edit);
    std::vector<std::string> all(parts);
    all.push_back("meta.json");
    try {
      load_hetero_dataset(dir);
      FAIL("no exception");
    } catch (const FormatError& e) {
      const std::string what = e.what();
      for (const auto& p : all) CHECK_THAT(what, Catch::Contains(p));
    }
  };
  SECTION("no ntypes") {
    expect_format([](auto& m) { m.erase("ntypes"); }, {"ntypes"});
  }
  SECTION("ntypes not an object") {
    expect_format([](auto& m) { m["ntypes"] = {1, 2}; }, {"ntypes", "[1,2]"});
  }
  SECTION("a node count that is not a count") {
    expect_format([](auto& m) { m["ntypes"]["item"] = "5"; }, {"node type 'item'", "\"5\""});
    expect_format([](auto& m) { m["ntypes"]["item"] = -1; }, {"node type 'item'", "-1"});
  }
  SECTION("a node type name that cannot be a folder") {
    expect_format([](auto& m) { m["ntypes"]["../x"] = 1; }, {"../x", "'/'"});
  }
  SECTION("no etypes, or etypes not an array") {
    expect_format([](auto& m) { m.erase("etypes"); }, {"etypes"});
    expect_format([](auto& m) { m["etypes"] = "user"; }, {"etypes"});
  }
  SECTION("an etypes entry that is not a string triple") {
    expect_format(
        [](auto& m) {
          m["etypes"][1] = {"item", "rev_likes"};
        },
        {"etypes[1]", "rev_likes", "triple"});
    expect_format([](auto& m) { m["etypes"][2] = {"user", 3, "tag"}; }, {"etypes[2]", "triple"});
  }
  SECTION("an edge type whose endpoint is not a node type") {
    expect_format(
        [](auto& m) {
          m["etypes"][3] = {"item", "has", "ghost"};
        },
        {"('item', 'has', 'ghost')", "node type 'ghost'", "not in ntypes"});
  }
  SECTION("a canonical edge type declared twice") {
    expect_format(
        [](auto& m) {
          m["etypes"].push_back({"user", "likes", "tag"});
        },
        {"('user', 'likes', 'tag')", "declared twice"});
  }
  SECTION("num_edges, feat_dims, featureless_ntypes naming unknown types or bad values") {
    expect_format([](auto& m) { m["num_edges"]["user__hates__item"] = 1; }, {"user__hates__item"});
    expect_format([](auto& m) { m["num_edges"]["item__has__tag"] = 1.5; },
                  {"item__has__tag", "1.5"});
    expect_format([](auto& m) { m["feat_dims"]["ghost"] = 3; }, {"feat_dims", "ghost"});
    expect_format([](auto& m) { m["feat_dims"]["user"] = "3"; }, {"feat_dims['user']"});
    expect_format([](auto& m) { m["featureless_ntypes"] = {"ghost"}; },
                  {"featureless_ntypes", "ghost"});
    expect_format([](auto& m) { m["featureless_ntypes"] = "tag"; }, {"featureless_ntypes"});
  }
  SECTION("a target type that does not exist") {
    expect_format([](auto& m) { m["target_ntype"] = "ghost"; }, {"target_ntype", "ghost"});
    expect_format([](auto& m) { m["target_ntype"] = 0; }, {"target_ntype"});
  }
}

TEST_CASE("a node type declared twice in ntypes is refused, not silently merged", "[io]") {
  distgraph::test::TempDir tmp;
  const auto dir = write_toy(tmp);
  std::ifstream in(dir / "meta.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("\"item\": 5");
  REQUIRE(at != std::string::npos);
  text.insert(at, "\"user\": 9, ");
  std::ofstream(dir / "meta.json") << text;
  CHECK_THROWS_MATCHES(load_hetero_dataset(dir), FormatError,
                       WhatContains({"meta.json", "\"user\"", "twice", "ntypes"}));
}

TEST_CASE("bad edge arrays in a typed folder name the edge type and the file", "[io]") {
  distgraph::test::TempDir tmp;
  const auto dir = write_toy(tmp);
  const auto edir = dir / "edges" / "user__likes__item";
  SECTION("no meta.json") {
    fs::remove(dir / "meta.json");
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), IoError, WhatContains("meta.json"));
  }
  SECTION("edge folder missing") {
    fs::remove_all(edir);
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), IoError,
                         WhatContains({"edges/user__likes__item", "('user', 'likes', 'item')"}));
  }
  SECTION("dst.npy missing") {
    fs::remove(edir / "dst.npy");
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), IoError,
                         WhatContains({"user__likes__item/dst.npy", "('user', 'likes', 'item')"}));
  }
  SECTION("float ids") {
    write_npy(edir / "src.npy", std::vector<float>{0, 0, 1, 2, 3});
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), DTypeError,
                         WhatContains({"user__likes__item/src.npy", "float32", "integer"}));
  }
  SECTION("2-D ids") {
    write_npy(edir / "dst.npy", std::vector<std::int64_t>(10, 0), {5, 2});
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), ShapeError,
                         WhatContains({"user__likes__item/dst.npy", "(5, 2)", "1-D"}));
  }
  SECTION("unequal lengths") {
    write_npy(edir / "dst.npy", std::vector<std::int64_t>{0, 1, 2, 3});
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), ShapeError,
                         WhatContains({"user__likes__item/src.npy", "dst.npy", "equal lengths"}));
  }
  SECTION("length disagreeing with meta.json num_edges") {
    write_npy(edir / "src.npy", std::vector<std::int64_t>{0, 1, 2, 3});
    write_npy(edir / "dst.npy", std::vector<std::int64_t>{0, 1, 2, 3});
    CHECK_THROWS_MATCHES(
        load_hetero_dataset(dir), ShapeError,
        WhatContains({"meta.json", "num_edges[\"user__likes__item\"] is 5", "src.npy has 4"}));
  }
  SECTION("a destination id outside its node type") {
    write_npy(edir / "dst.npy", std::vector<std::int64_t>{0, 1, 2, 3, 5});
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), IdOutOfRange,
                         WhatContains({"user__likes__item/dst.npy", "('user', 'likes', 'item')",
                                       "'item'", "id 5", "[0, 5)"}));
  }
  SECTION("a negative source id") {
    write_npy(dir / "edges" / "item__has__tag" / "src.npy", std::vector<std::int64_t>{0, -1, 4});
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), IdOutOfRange,
                         WhatContains({"item__has__tag/src.npy", "'item'", "id -1"}));
  }
  SECTION("ids of the right type range but the wrong endpoint") {
    // user__likes__tag: tags are 0..2, users 0..3: user 3 as a tag is out of range.
    write_npy(dir / "edges" / "user__likes__tag" / "dst.npy", std::vector<std::int64_t>{0, 3});
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), IdOutOfRange,
                         WhatContains({"user__likes__tag/dst.npy", "'tag'", "[0, 3)"}));
  }
}

TEST_CASE("bad node arrays in a typed folder name the node type and the file", "[io]") {
  distgraph::test::TempDir tmp;
  const auto dir = write_toy(tmp);
  const auto udir = dir / "nodes" / "user";
  SECTION("integer features") {
    write_npy(udir / "feat.npy", std::vector<std::int32_t>(12, 1), {4, 3});
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), DTypeError,
                         WhatContains({"nodes/user/feat.npy", "int32"}));
  }
  SECTION("1-D features") {
    write_npy(udir / "feat.npy", std::vector<float>(12, 1));
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), ShapeError,
                         WhatContains({"nodes/user/feat.npy", "node type 'user'", "2-D"}));
  }
  SECTION("feature rows disagreeing with the node count") {
    write_npy(udir / "feat.npy", std::vector<float>(15, 1), {5, 3});
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), ShapeError,
                         WhatContains({"nodes/user/feat.npy", "5 rows", "node type 'user' 4"}));
  }
  SECTION("feature width disagreeing with feat_dims") {
    write_npy(udir / "feat.npy", std::vector<float>(8, 1), {4, 2});
    CHECK_THROWS_MATCHES(
        load_hetero_dataset(dir), ShapeError,
        WhatContains({"meta.json", "feat_dims['user'] is 3", "nodes/user/feat.npy", "2 columns"}));
  }
  SECTION("a type listed featureless that has feat.npy") {
    fs::create_directories(dir / "nodes" / "tag");
    write_npy(dir / "nodes" / "tag" / "feat.npy", std::vector<float>(3, 1), {3, 1});
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), FormatError,
                         WhatContains({"nodes/tag/feat.npy", "node type 'tag'", "featureless"}));
  }
  SECTION("feat.npy missing for a type feat_dims gives a width") {
    fs::remove(dir / "nodes" / "item" / "feat.npy");
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), IoError,
                         WhatContains({"nodes/item/feat.npy", "node type 'item'", "feat_dims"}));
    // Without the feat_dims entry the type is simply featureless.
    edit_meta(dir, [](auto& m) { m["feat_dims"].erase("item"); });
    const auto d = load_hetero_dataset(dir);
    CHECK(d.feat_dim == std::vector<std::int64_t>{3, 0, 0});
    CHECK(d.feat[1].empty());
  }
  SECTION("float labels") {
    write_npy(udir / "label.npy", std::vector<double>{0, 1, 1, 0});
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), DTypeError,
                         WhatContains({"nodes/user/label.npy", "float64"}));
  }
  SECTION("a label outside [0, num_classes)") {
    write_npy(udir / "label.npy", std::vector<std::int64_t>{0, 1, 2, 0});
    CHECK_THROWS_MATCHES(
        load_hetero_dataset(dir), IdOutOfRange,
        WhatContains({"nodes/user/label.npy", "node type 'user'", "id 2", "[0, 2)"}));
  }
  SECTION("labels of the wrong length") {
    write_npy(udir / "label.npy", std::vector<std::int64_t>{0, 1, 1});
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), ShapeError,
                         WhatContains({"nodes/user/label.npy", "'user' 4"}));
  }
  SECTION("label.npy missing for the target type") {
    fs::remove(udir / "label.npy");
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), IoError,
                         WhatContains({"nodes/user/label.npy", "target_ntype"}));
  }
  SECTION("a mask that is not bool") {
    write_npy(udir / "train_mask.npy", std::vector<std::int64_t>{1, 1, 0, 0});
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), DTypeError,
                         WhatContains({"nodes/user/train_mask.npy", "int64", "bool"}));
  }
  SECTION("a mask of the wrong length") {
    write_npy(udir / "test_mask.npy", mask({0, 0, 0, 1, 1}).span());
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), ShapeError,
                         WhatContains({"nodes/user/test_mask.npy", "target node type 'user'"}));
  }
  SECTION("a mask disagreeing with meta.json split") {
    write_npy(udir / "train_mask.npy", mask({1, 0, 0, 0}).span());
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), ShapeError,
                         WhatContains({"meta.json", "split.train is 2", "train_mask.npy"}));
  }
  SECTION("labels under a type that is not the target") {
    write_npy(dir / "nodes" / "item" / "label.npy", std::vector<std::int64_t>(5, 0));
    CHECK_THROWS_MATCHES(load_hetero_dataset(dir), FormatError,
                         WhatContains({"nodes/item/label.npy", "node type 'item'", "'user'"}));
  }
}

TEST_CASE("write_hetero_dataset refuses an inconsistent dataset before writing", "[io]") {
  distgraph::test::TempDir tmp;
  auto d = small_hetero();
  SECTION("edge ids outside the endpoint type") {
    d.dst[3] = ids({1, 1, 3});
    CHECK_THROWS_MATCHES(write_hetero_dataset(d, tmp / "x"), IdOutOfRange,
                         WhatContains({"('item', 'has', 'tag')", "dst", "id 3"}));
  }
  SECTION("an edge array disagreeing with the type map") {
    d.src[0] = ids({0, 1});
    CHECK_THROWS_MATCHES(write_hetero_dataset(d, tmp / "x"), ShapeError,
                         WhatContains({"('user', 'likes', 'item')", "src"}));
  }
  SECTION("features of the wrong size") {
    d.feat_dim[1] = 3;
    CHECK_THROWS_MATCHES(write_hetero_dataset(d, tmp / "x"), ShapeError,
                         WhatContains("node type 'item'"));
  }
  SECTION("labels without a target type") {
    d.target_ntype.clear();
    CHECK_THROWS_AS(write_hetero_dataset(d, tmp / "x"), InvalidArgument);
  }
  CHECK_FALSE(fs::exists(tmp / "x"));
}

TEST_CASE("write_hetero_dataset puts the structural keys of meta.json first and files last",
          "[io]") {
  distgraph::test::TempDir tmp;
  const auto dir = write_toy(tmp);
  const auto meta = nlohmann::ordered_json::parse(std::ifstream(dir / "meta.json"));
  std::vector<std::string> keys;
  for (const auto& [k, v] : meta.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"name", "ntypes", "etypes", "num_edges", "target_ntype",
                                         "num_classes", "feat_dims", "featureless_ntypes", "split",
                                         "note", "files"});
  // Types in declaration order, not sorted by name.
  std::vector<std::string> ntypes;
  for (const auto& [k, v] : meta.at("ntypes").items()) ntypes.push_back(k);
  CHECK(ntypes == std::vector<std::string>{"user", "item", "tag"});
  CHECK(meta.at("num_edges").at("item__has__tag") == 3);
  CHECK(meta.at("split") == nlohmann::ordered_json{{"train", 2}, {"val", 1}, {"test", 1}});
  CHECK(meta.at("files").size() == 14);  // 8 edge files, 2 feat, label and 3 masks
}

TEST_CASE("hsbm differs in every stage for another seed, and a citation count changes only cites",
          "[io]") {
  const HsbmOptions o{.num_papers = 500, .num_authors = 150, .num_venues = 8, .seed = 5};
  const auto d = hsbm_dataset(o);
  HsbmOptions other_seed = o;
  other_seed.seed = 6;
  const auto e = hsbm_dataset(other_seed);
  CHECK(to_vector(d.label) != to_vector(e.label));
  for (std::size_t r = 0; r < d.src.size(); ++r) {
    INFO("edge type " << r);
    CHECK(
        (to_vector(d.src[r]) != to_vector(e.src[r]) || to_vector(d.dst[r]) != to_vector(e.dst[r])));
  }
  CHECK(to_vector(d.feat[0]) != to_vector(e.feat[0]));
  CHECK(to_vector(d.feat[1]) != to_vector(e.feat[1]));
  CHECK(to_vector(d.train_mask) != to_vector(e.train_mask));

  // Each stage has its own random stream: more citations leave the rest as it was.
  HsbmOptions more_cites = o;
  more_cites.avg_citations = 2 * o.avg_citations;
  const auto f = hsbm_dataset(more_cites);
  CHECK(to_vector(d.label) == to_vector(f.label));
  for (std::size_t r = 0; r < 4; ++r) {
    INFO("edge type " << r);
    CHECK(to_vector(d.src[r]) == to_vector(f.src[r]));
    CHECK(to_vector(d.dst[r]) == to_vector(f.dst[r]));
  }
  CHECK(f.src[4].size() > d.src[4].size());
  CHECK(to_vector(d.feat[0]) == to_vector(f.feat[0]));
  CHECK(to_vector(d.feat[1]) == to_vector(f.feat[1]));
  CHECK(to_vector(d.train_mask) == to_vector(f.train_mask));
  CHECK(to_vector(d.test_mask) == to_vector(f.test_mask));
  CHECK(d.meta.at("num_edges").at("author__writes__paper") ==
        f.meta.at("num_edges").at("author__writes__paper"));
}

}  // namespace test_io_hetero_dataset

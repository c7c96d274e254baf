// local_train_share: every trainer's training seeds from its own partition's mask and
// exchanged counts; the plain split equals node_split over the whole training set, and the
// balanced one keeps the same seeds and sizes while evening out the costs.
#include <torch/types.h>  // before Catch: c10's logging defines a CHECK that Catch's replaces

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/tasks/node_classification.hpp"
#include "distgraph/tasks/train_split.hpp"
#include "support/temp_dir.hpp"
#include "trainer_threads.hpp"

namespace test_train_train_split {

using namespace distgraph;
using distgraph::test::TempDir;
using distgraph::test::with_group;

namespace {

/// A skewed SBM graph in 2 METIS partitions.
struct Parts {
  TempDir dir;
  Parts() {
    SbmOptions so;
    so.num_nodes = 1500;
    so.num_classes = 4;
    so.avg_degree = 9;
    so.feat_dim = 4;
    so.train_fraction = 0.3;
    so.val_fraction = 0.2;
    so.test_fraction = 0.2;
    so.seed = 17;
    partition_dataset(sbm_dataset(so), "g", 2, dir.path(),
                      {.method = PartMethod::metis, .seed = 3});
  }
};

/// Every rank's share for `world` trainers (index = rank).
std::vector<std::vector<std::int64_t>> shares(StandaloneCluster<>& cluster, int world,
                                              bool balance, std::int64_t& total) {
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(world));
  std::mutex mu;
  with_group(world, [&](int r, c10::intrusive_ptr<CollectiveGroup> group) {
    const auto share = local_train_share(
        cluster.graph(),
        LocalSplitOptions{.rank = r, .world = world, .balance = balance, .degree_cap = 25},
        world > 1 ? group.get() : nullptr);
    std::lock_guard lock(mu);
    out[static_cast<std::size_t>(r)] = share.ids;
    total = share.total;
  });
  return out;
}

double cost_of(const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& deg_ids,
               const std::vector<std::int64_t>& deg) {
  double c = 0;
  for (const auto id : ids) {
    const auto it = std::lower_bound(deg_ids.begin(), deg_ids.end(), id);
    c += 1.0 + static_cast<double>(
                   std::min<std::int64_t>(deg[static_cast<std::size_t>(it - deg_ids.begin())], 25));
  }
  return c;
}

}  // namespace

TEST_CASE("the plain local split equals node_split over the whole training set",
          "[train][split]") {
  Parts p;
  StandaloneCluster<> cluster(p.dir / "g.json");
  const auto g = cluster.graph();
  const auto train_all = distgraph::detail::masked_nodes(g, "train_mask");
  REQUIRE(train_all.size() > 300);
  for (const int world : {2, 4, 6}) {
    INFO(world << " trainers");
    std::int64_t total = 0;
    const auto mine = shares(cluster, world, false, total);
    CHECK(total == static_cast<std::int64_t>(train_all.size()));
    for (int r = 0; r < world; ++r)
      CHECK(mine[static_cast<std::size_t>(r)] ==
            node_split(train_all, g.book(),
                       SplitOptions{.rank = r, .num_trainers = world, .force_even = true}));
  }
  CHECK_THROWS_AS(local_train_share(g, LocalSplitOptions{.rank = 0, .world = 3}, nullptr),
                  InvalidArgument);  // 3 trainers over 2 partitions
  CHECK_THROWS_WITH(local_train_share(g, LocalSplitOptions{.rank = 0, .world = 2}, nullptr),
                    Catch::Contains("need a group"));
  // A mask nobody marks: every trainer learns it from the counts, none hangs.
  std::vector<std::string> errors;
  std::mutex mu;
  with_group(2, [&](int r, c10::intrusive_ptr<CollectiveGroup> group) {
    try {
      local_train_share(cluster.graph(),
                        LocalSplitOptions{.mask = "no_such_mask", .rank = r, .world = 2},
                        group.get());
    } catch (const InvalidArgument& e) {
      std::lock_guard lock(mu);
      errors.push_back(e.what());
    }
  });
  REQUIRE(errors.size() == 2);
  for (const auto& e : errors) CHECK_THAT(e, Catch::Contains("marks no training node"));
}

TEST_CASE("the balanced local split keeps the seeds and sizes and evens out the costs",
          "[train][split]") {
  Parts p;
  StandaloneCluster<> cluster(p.dir / "g.json");
  const auto g = cluster.graph();
  auto train_all = distgraph::detail::masked_nodes(g, "train_mask");
  std::sort(train_all.begin(), train_all.end());
  const auto deg = g.in_degrees(train_all);
  for (const int world : {2, 4}) {
    INFO(world << " trainers");
    std::int64_t total = 0;
    const auto plain = shares(cluster, world, false, total);
    const auto balanced = shares(cluster, world, true, total);
    std::vector<std::int64_t> a, b;
    double plain_lo = 1e300, plain_hi = 0, lo = 1e300, hi = 0;
    for (int r = 0; r < world; ++r) {
      const auto& s = balanced[static_cast<std::size_t>(r)];
      CHECK(s.size() == plain[static_cast<std::size_t>(r)].size());
      auto sorted = s;
      std::sort(sorted.begin(), sorted.end());
      CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());  // no seed twice
      a.insert(a.end(), plain[static_cast<std::size_t>(r)].begin(),
               plain[static_cast<std::size_t>(r)].end());
      b.insert(b.end(), s.begin(), s.end());
      const double pc = cost_of(plain[static_cast<std::size_t>(r)], train_all, deg);
      const double bc = cost_of(s, train_all, deg);
      plain_lo = std::min(plain_lo, pc);
      plain_hi = std::max(plain_hi, pc);
      lo = std::min(lo, bc);
      hi = std::max(hi, bc);
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    CHECK(a == b);  // the same seeds, repeats included
    INFO("plain costs " << plain_lo << ".." << plain_hi << ", balanced " << lo << ".." << hi);
    CHECK(hi - lo <= plain_hi - plain_lo);
    CHECK(hi - lo <= std::max(0.005 * (hi + lo) / 2, 52.0));
  }
}

TEST_CASE("a trainer's split reads its own partition's mask: twice the nodes on twice the "
          "machines, the same work per trainer",
          "[train][split]") {
  // N nodes on 2 partitions, then 2N on 4, one trainer per partition: a whole-graph split
  // would read N, then 2N mask values on every trainer.
  std::int64_t most[2] = {0, 0};
  for (const int k : {1, 2}) {
    TempDir dir;
    SbmOptions so;
    so.num_nodes = 1200 * k;
    so.num_classes = 4;
    so.avg_degree = 8;
    so.feat_dim = 4;
    so.train_fraction = 0.3;
    so.val_fraction = 0.2;
    so.test_fraction = 0.2;
    so.seed = 5;
    const int parts = 2 * k;
    partition_dataset(sbm_dataset(so), "g", parts, dir.path(),
                      {.method = PartMethod::metis, .seed = 3});
    StandaloneCluster<> cluster(dir.path() / "g.json");
    std::vector<std::int64_t> read(static_cast<std::size_t>(parts));
    std::mutex mu;
    with_group(parts, [&](int r, c10::intrusive_ptr<CollectiveGroup> group) {
      const auto share = local_train_share(
          cluster.graph(), LocalSplitOptions{.rank = r, .world = parts, .degree_cap = 25},
          group.get());
      std::lock_guard lock(mu);
      read[static_cast<std::size_t>(r)] = share.mask_rows_read;
    });
    const std::int64_t partition = so.num_nodes / parts;
    for (int r = 0; r < parts; ++r) {
      INFO(so.num_nodes << " nodes, trainer " << r << " read "
                        << read[static_cast<std::size_t>(r)]);
      CHECK(read[static_cast<std::size_t>(r)] >= partition * 9 / 10);  // its own partition
      // Its own, and of others only the ends its share runs into (chunks that double).
      CHECK(read[static_cast<std::size_t>(r)] <= partition * 16 / 10);
    }
    most[k - 1] = *std::max_element(read.begin(), read.end());
  }
  CHECK(most[1] < 2400);  // never the whole graph of the larger run
}

TEST_CASE("the balancing plan moves seeds by counts until the costs meet", "[train][split]") {
  // Trainer 0: 40 seeds of cost 10; trainer 1: 40 of cost 1 (totals 400 and 40).
  std::vector<std::map<std::int64_t, std::int64_t>> hist{{{10, 40}}, {{1, 40}}};
  const auto plan = distgraph::detail::plan_balance(hist, {400.0, 40.0}, 0.005);
  std::vector<double> total(2, 0.0);
  std::int64_t seeds[2] = {0, 0};
  for (std::size_t r = 0; r < 2; ++r)
    for (const auto& [c, runs] : plan[r])
      for (const auto& s : runs) {
        total[r] += static_cast<double>(c * s.count);
        seeds[r] += s.count;
        CHECK(s.first + s.count <= 40);  // ordinals within the origin's bucket
      }
  CHECK(seeds[0] == 40);
  CHECK(seeds[1] == 40);
  CHECK(total[0] + total[1] == 440.0);
  CHECK(std::abs(total[0] - total[1]) <= 9.0);  // one swap moves 9: as close as it gets
  // Nothing to do when balanced already.
  const auto same = distgraph::detail::plan_balance({{{3, 5}}, {{3, 5}}}, {15.0, 15.0}, 0.005);
  CHECK(same[0].at(3).front().origin == 0);
  CHECK(same[1].at(3).front().origin == 1);
}

}  // namespace test_train_train_split

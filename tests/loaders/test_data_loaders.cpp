// NodeDataLoader and EdgeDataLoader over a standalone DistGraph: coverage, blocks, data,
// determinism across prefetch threads and epochs, abandoned epochs, errors, exclusion.
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <utility>

#include "distgraph/distributed/standalone.hpp"
#include "distgraph/loaders/edge_data_loader.hpp"
#include "distgraph/loaders/node_data_loader.hpp"
#include "support/loader_batches.hpp"
#include "support/partitioned_sbm.hpp"
#include "support/sched_batch.hpp"

namespace test_loaders_data_loaders {

using namespace distgraph;
using distgraph::test::every;
using distgraph::test::same_batch;
using distgraph::test::whole_epoch;

namespace {

/// A small SBM graph (symmetric: every edge has a reverse) in 3 METIS partitions.
struct Fixture : distgraph::test::PartitionedSbm {
  Fixture() : PartitionedSbm(options(), 3) {}
  static SbmOptions options() {
    SbmOptions o;
    o.num_nodes = 800;
    o.num_classes = 4;
    o.avg_degree = 10;
    o.feat_dim = 6;
    o.seed = 8;
    return o;
  }
};

/// Checks the block chain of one batch and that every block edge is a graph edge into
/// its destination, at most `fanouts[l]` per destination.
template <class G>
void check_blocks(const G& g, const std::vector<Block>& blocks,
                  const std::vector<std::int64_t>& input_nodes,
                  const std::vector<std::int64_t>& output_nodes,
                  const std::vector<std::int64_t>& fanouts) {
  REQUIRE(blocks.size() == fanouts.size());
  CHECK(blocks.front().src_nodes == input_nodes);
  const auto last = blocks.back().dst_nodes();
  CHECK(std::vector<std::int64_t>(last.begin(), last.end()) == output_nodes);
  for (std::size_t l = 0; l + 1 < blocks.size(); ++l) {
    const auto dst = blocks[l].dst_nodes();
    REQUIRE(std::vector<std::int64_t>(dst.begin(), dst.end()) == blocks[l + 1].src_nodes);
  }
  for (std::size_t l = 0; l < blocks.size(); ++l) {
    const Block& b = blocks[l];
    const auto ends = g.find_edges(b.eid);
    for (std::int64_t d = 0; d < b.num_dst; ++d) {
      const auto lo = b.indptr[static_cast<std::size_t>(d)],
                 hi = b.indptr[static_cast<std::size_t>(d) + 1];
      if (fanouts[l] >= 0) REQUIRE(hi - lo <= fanouts[l]);
      for (auto e = lo; e < hi; ++e) {
        const auto ei = static_cast<std::size_t>(e);
        REQUIRE(ends.dst[ei] == b.src_nodes[static_cast<std::size_t>(d)]);
        REQUIRE(ends.src[ei] == b.src_nodes[static_cast<std::size_t>(b.indices[ei])]);
      }
    }
  }
}

/// A DistGraph that calls `before_sample(seeds, key)` before each sampling call: a test's
/// window into the loader's threads (it may throw, as a failing server would).
struct HookedGraph {
  StandaloneGraph g;
  std::function<void(std::span<const std::int64_t>, const SampleKey&)> before_sample;
  template <class V>
  using tensor_type = StandaloneGraph::tensor_type<V>;
  std::int64_t num_nodes() const { return g.num_nodes(); }
  /// Forwarded: with it, a loader groups each block's sources by owner as over `g` itself.
  decltype(auto) book() const { return g.book(); }
  template <class V>
  tensor_type<V> ndata(const std::string& name) const {
    return g.ndata<V>(name);
  }
  Frontier sample_neighbors(std::span<const std::int64_t> seeds, std::int64_t fanout,
                            const SampleKey& key, const SamplerSpec& spec) const {
    before_sample(seeds, key);
    return g.sample_neighbors(seeds, fanout, key, spec);
  }
};

/// A graph whose sampling throws for any batch holding node `poison`: a producer failure at
/// a known batch.
HookedGraph faulty_graph(StandaloneGraph g, std::int64_t poison) {
  return {std::move(g), [poison](std::span<const std::int64_t> seeds, const SampleKey& key) {
            if (std::find(seeds.begin(), seeds.end(), poison) != seeds.end())
              throw TimeoutError("server 1: no reply to sample_neighbors for batch " +
                                 std::to_string(key.batch));
          }};
}

/// Which epochs' batches were sampled (SampleKey::epoch), so a test can wait for a batch
/// of an epoch to be made.
struct EpochWatch {
  std::mutex mu;
  std::condition_variable sampled;
  std::set<std::int64_t> epochs;
};
HookedGraph watched_graph(StandaloneGraph g, std::shared_ptr<EpochWatch> watch) {
  return {std::move(g), [watch](std::span<const std::int64_t>, const SampleKey& key) {
            {
              std::lock_guard lock(watch->mu);
              watch->epochs.insert(key.epoch);
            }
            watch->sampled.notify_all();
          }};
}

}  // namespace

TEST_CASE("node loader yields every training node once per epoch in full batches", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const auto train = every(3, g.num_nodes(), 1);
  const auto n = static_cast<std::int64_t>(train.size());
  NodeDataLoader loader(g, train, {4, 5}, {.batch_size = 37, .seed = 9});
  CHECK(loader.num_batches() == (n + 36) / 37);
  const auto batches = whole_epoch(loader, 0);
  REQUIRE(static_cast<std::int64_t>(batches.size()) == loader.num_batches());
  std::vector<std::int64_t> seen;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    CHECK(batches[i].index == static_cast<std::int64_t>(i));
    const auto want = i + 1 < batches.size() ? 37 : n - 37 * (loader.num_batches() - 1);
    CHECK(static_cast<std::int64_t>(batches[i].output_nodes.size()) == want);
    seen.insert(seen.end(), batches[i].output_nodes.begin(), batches[i].output_nodes.end());
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen == train);

  NodeDataLoader dropping(g, train, {4, 5}, {.batch_size = 37, .drop_last = true});
  CHECK(dropping.num_batches() == n / 37);
  const auto full = whole_epoch(dropping, 0);
  REQUIRE(static_cast<std::int64_t>(full.size()) == n / 37);
  for (const auto& b : full) CHECK(b.output_nodes.size() == 37);
}

TEST_CASE("node loader blocks chain from the input nodes to the seeds over real edges", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const std::vector<std::int64_t> fanouts{3, -1, 2};
  NodeDataLoader loader(g, every(5, g.num_nodes()), fanouts, {.batch_size = 50, .seed = 1});
  loader.begin_epoch(2);
  int checked = 0;
  bool mixed = false;  // some block draws its other sources from several partitions
  while (auto b = loader.next()) {
    check_blocks(g, b->blocks, b->input_nodes, b->output_nodes, fanouts);
    // Each block's sources that are not destinations come grouped by owner (so a batch's
    // rows from one machine land in runs), ascending.
    for (const Block& blk : b->blocks) {
      const auto others = std::span<const std::int64_t>(blk.src_nodes)
                              .subspan(static_cast<std::size_t>(blk.num_dst));
      std::vector<std::int32_t> owner(others.size());
      g.book().node_partition(others, owner);
      CHECK(std::is_sorted(owner.begin(), owner.end()));
      mixed = mixed || (!owner.empty() && owner.front() != owner.back());
    }
    ++checked;
  }
  CHECK(checked == loader.num_batches());
  CHECK(mixed);
}

TEST_CASE("a node loader asked for no edge IDs makes the same blocks without them", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const std::vector<std::int64_t> fanouts{3, 5};
  LoaderOptions with{.batch_size = 40, .seed = 3};
  LoaderOptions without = with;
  without.edge_ids = EdgeIds::omitted;
  NodeDataLoader a(g, every(3, g.num_nodes()), fanouts, with);
  NodeDataLoader b(g, every(3, g.num_nodes()), fanouts, without);
  // A graph type without the EdgeIds argument (the hooked wrapper) keeps them.
  NodeDataLoader c(HookedGraph{g, [](auto, const auto&) {}}, every(3, g.num_nodes()), fanouts,
                   without);
  a.begin_epoch(1);
  b.begin_epoch(1);
  c.begin_epoch(1);
  int compared = 0;
  while (auto x = a.next()) {
    auto y = b.next();
    auto z = c.next();
    REQUIRE(y);
    REQUIRE(z);
    CHECK(y->input_nodes == x->input_nodes);
    CHECK(y->features == x->features);
    REQUIRE(y->blocks.size() == x->blocks.size());
    for (std::size_t l = 0; l < x->blocks.size(); ++l) {
      CHECK(y->blocks[l].src_nodes == x->blocks[l].src_nodes);
      CHECK(y->blocks[l].indptr == x->blocks[l].indptr);
      CHECK(y->blocks[l].indices == x->blocks[l].indices);
      CHECK(y->blocks[l].eid.empty());
      CHECK(z->blocks[l].eid == x->blocks[l].eid);
      CHECK(x->blocks[l].eid.size() == x->blocks[l].indices.size());
    }
    ++compared;
  }
  CHECK_FALSE(b.next());
  CHECK(compared == a.num_batches());
}

TEST_CASE("node loader features and labels are the rows ndata holds", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const auto feat = g.ndata<float>("feat");
  const auto label = g.ndata<std::int64_t>("label");
  NodeDataLoader loader(g, every(4, g.num_nodes()), {5, 5}, {.batch_size = 64, .seed = 3});
  const auto d = static_cast<std::size_t>(f.data.feat_dim);
  for (const NodeBatch& b : loader.epoch(1)) {
    REQUIRE(b.feat_dim == f.data.feat_dim);
    REQUIRE(b.features == feat.pull(b.input_nodes));
    REQUIRE(b.labels == label.pull(b.output_nodes));
    for (std::size_t i = 0; i < b.input_nodes.size(); ++i) {
      const auto o =
          static_cast<std::size_t>(f.orig_of[static_cast<std::size_t>(b.input_nodes[i])]);
      for (std::size_t k = 0; k < d; ++k) REQUIRE(b.features[i * d + k] == f.data.feat[o * d + k]);
    }
    for (std::size_t i = 0; i < b.output_nodes.size(); ++i)
      REQUIRE(b.labels[i] == f.data.label[static_cast<std::size_t>(
                                 f.orig_of[static_cast<std::size_t>(b.output_nodes[i])])]);
  }
  NodeDataLoader bare(g, every(4, g.num_nodes()), {5},
                      {.batch_size = 64, .feature = "", .label = ""});
  bare.begin_epoch(0);
  const auto b = bare.next();
  REQUIRE(b);
  CHECK(b->features.empty());
  CHECK(b->feat_dim == 0);
  CHECK(b->labels.empty());
}

TEST_CASE("a recycled batch's feature buffer holds the next batch's rows, every one rewritten",
          "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const auto feat = g.ndata<float>("feat");
  // No prefetch threads: the next batch is made inside next(), after the recycle.
  NodeDataLoader loader(g, every(3, g.num_nodes()), {4, 4}, {.batch_size = 40, .seed = 2});
  loader.begin_epoch(0);
  auto first = loader.next();
  REQUIRE(first);
  REQUIRE_FALSE(first->features.empty());
  // Stale values an unwritten row would keep: NaN never equals a pulled row.
  std::fill(first->features.begin(), first->features.end(), std::nanf(""));
  const float* buffer = first->features.data();
  const std::size_t capacity = first->features.capacity();
  loader.recycle(std::move(*first));
  auto second = loader.next();
  REQUIRE(second);
  CHECK(second->features == feat.pull(second->input_nodes));
  // A fresh vector would have the capacity of its own size.
  if (second->features.size() <= capacity) {
    CHECK(second->features.data() == buffer);
    CHECK(second->features.capacity() == capacity);
  }

  // The range recycles each batch as it moves on. Without threads every kept buffer is
  // back in the store when the next batch is made: a batch that fits one is made in it,
  // else in a new buffer (an eighth to spare); each holds its own rows.
  std::map<const float*, std::size_t> kept;  // buffer -> its capacity
  std::size_t reused = 0;
  for (NodeBatch& b : loader.epoch(1)) {
    REQUIRE(b.features == feat.pull(b.input_nodes));
    const std::size_t n = b.features.size();
    if (std::any_of(kept.begin(), kept.end(), [&](const auto& k) { return k.second >= n; })) {
      REQUIRE(kept.count(b.features.data()) == 1);
      CHECK(b.features.capacity() == kept[b.features.data()]);
      ++reused;
    } else {
      CHECK(b.features.capacity() >= n + n / 8);
      kept[b.features.data()] = b.features.capacity();
    }
    std::fill(b.features.begin(), b.features.end(), std::nanf(""));
  }
  CHECK(reused > 0);
  // The epoch's end freed the kept buffers (no thread runs on into the next epoch): the
  // next batch gets a new one sized for itself, not one of those.
  loader.begin_epoch(2);
  const auto fresh = loader.next();
  REQUIRE(fresh);
  const std::size_t n = fresh->features.size();
  CHECK(fresh->features.capacity() == n + n / 8);
  CHECK(fresh->features == feat.pull(fresh->input_nodes));
}

TEST_CASE("spare buffers hand out the smallest that fits, else a new one, and clear", "[dist]") {
  detail::SpareBuffers spares(2);
  spares.give(std::vector<float>(100));
  spares.give(std::vector<float>(50));
  spares.give(std::vector<float>(70));  // two are kept already: dropped
  spares.give({});                      // nothing to keep
  auto a = spares.take(60);
  CHECK(a.size() == 100);  // the 50 does not fit; handed over at its old size
  const auto b = spares.take(60);
  CHECK(b.empty());  // none left that fits: a new one, with room for 60 + 60 / 8
  CHECK(b.capacity() >= 67);
  CHECK(b.capacity() < 100);
  spares.give(std::move(a));
  spares.clear();
  const auto c = spares.take(10);  // the 50 and the 100 are gone
  CHECK(c.empty());
  CHECK(c.capacity() >= 11);
  CHECK(c.capacity() < 50);
}

TEST_CASE("node loader batches are identical for 0, 1 and 2 prefetch threads, also recycled",
          "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const auto train = every(2, g.num_nodes());
  std::vector<std::vector<NodeBatch>> runs;
  for (unsigned threads : {0u, 1u, 2u}) {
    NodeDataLoader loader(
        g, train, {4, 6},
        {.batch_size = 30, .seed = 5, .num_prefetch_threads = threads, .prefetch_depth = 3});
    runs.push_back(whole_epoch(loader, 7));
  }
  REQUIRE(runs[0].size() == runs[1].size());
  REQUIRE(runs[0].size() == runs[2].size());
  for (std::size_t i = 0; i < runs[0].size(); ++i) {
    REQUIRE(same_batch(runs[0][i], runs[1][i]));
    REQUIRE(same_batch(runs[0][i], runs[2][i]));
  }

  // Two threads running on across epochs, each batch handed back (the range) and poisoned
  // first: every batch is still the inline loader's, rows included.
  NodeDataLoader recycled(g, train, {4, 6},
                          {.batch_size = 30,
                           .seed = 5,
                           .num_prefetch_threads = 2,
                           .prefetch_depth = 3,
                           .prefetch_next_epoch = true,
                           .last_epoch = 3});
  // The reference makes its batches inline and hands none back (whole_epoch moves them).
  NodeDataLoader reference(g, train, {4, 6}, {.batch_size = 30, .seed = 5});
  for (std::int64_t e = 0; e <= 3; ++e) {
    const auto expected = whole_epoch(reference, e);
    std::size_t k = 0;
    for (NodeBatch& b : recycled.epoch(e)) {
      REQUIRE(k < expected.size());
      REQUIRE(same_batch(b, expected[k]));
      // What a buffer's next batch must not keep.
      std::fill(b.features.begin(), b.features.end(), std::nanf(""));
      ++k;
    }
    CHECK(k == expected.size());
  }
}

TEST_CASE("node loader shuffles differ between epochs and ranks and repeat for the same epoch",
          "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const auto train = every(2, g.num_nodes());
  const auto seeds_of = [](const std::vector<NodeBatch>& batches) {
    std::vector<std::int64_t> s;
    for (const auto& b : batches) s.insert(s.end(), b.output_nodes.begin(), b.output_nodes.end());
    return s;
  };
  NodeDataLoader loader(g, train, {3}, {.batch_size = 40, .seed = 11, .num_prefetch_threads = 2});
  const auto e0 = whole_epoch(loader, 0), e1 = whole_epoch(loader, 1),
             again = whole_epoch(loader, 0);
  CHECK(seeds_of(e0) != seeds_of(e1));
  CHECK(seeds_of(e0) == seeds_of(again));
  for (std::size_t i = 0; i < e0.size(); ++i) CHECK(same_batch(e0[i], again[i]));
  NodeDataLoader rank1(g, train, {3}, {.batch_size = 40, .seed = 11, .rank = 1});
  CHECK(seeds_of(whole_epoch(rank1, 0)) != seeds_of(e0));
  NodeDataLoader ordered(g, train, {3}, {.batch_size = 40, .shuffle = false});
  CHECK(seeds_of(whole_epoch(ordered, 0)) == train);
  CHECK(seeds_of(whole_epoch(ordered, 3)) == train);
}

TEST_CASE("a loader prefetching across epochs makes the next epoch early and the same batches",
          "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  const auto train = every(2, cluster.graph().num_nodes());
  const LoaderOptions plain{.batch_size = 30, .seed = 5};
  NodeDataLoader reference(cluster.graph(), train, {4, 6}, plain);
  for (unsigned threads : {1u, 2u}) {
    INFO("threads " << threads);
    auto watch = std::make_shared<EpochWatch>();
    LoaderOptions across = plain;
    across.num_prefetch_threads = threads;
    across.prefetch_depth = 3;
    across.prefetch_next_epoch = true;
    NodeDataLoader loader(watched_graph(cluster.graph(), watch), train, {4, 6}, across);
    const auto same_as_reference = [&](const std::vector<NodeBatch>& got, std::int64_t epoch) {
      const auto want = whole_epoch(reference, epoch);
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].epoch == epoch);
        REQUIRE(same_batch(got[i], want[i]));
        // Its own fetch, wherever it was made: every feature and label row (the standalone
        // client has no machine, so each row is remote).
        const RemoteTraffic& t = got[i].timings.traffic;
        CHECK(t.rows ==
              static_cast<std::int64_t>(got[i].input_nodes.size() + got[i].output_nodes.size()));
        CHECK(t.bytes == static_cast<std::int64_t>(got[i].features.size() * sizeof(float) +
                                                   got[i].labels.size() * sizeof(std::int64_t)));
      }
    };
    same_as_reference(whole_epoch(loader, 0), 0);
    {
      // Epoch 0 was read to its end and epoch 1 not begun: its batches are being made.
      std::unique_lock lock(watch->mu);
      REQUIRE(watch->sampled.wait_for(lock, std::chrono::seconds(30),
                                      [&] { return watch->epochs.count(1) == 1; }));
    }
    same_as_reference(whole_epoch(loader, 1), 1);
    same_as_reference(whole_epoch(loader, 2), 2);
    // Not the epoch after: the prefetched batches of epoch 3 are dropped.
    same_as_reference(whole_epoch(loader, 7), 7);
    same_as_reference(whole_epoch(loader, 1), 1);
    // Epoch 8 begun before epoch 7 was read to its end starts over.
    loader.begin_epoch(7);
    REQUIRE(loader.next());
    same_as_reference(whole_epoch(loader, 8), 8);
    // With the last epoch known, no batch past it is made (its threads are joined when
    // the loader goes, so every batch they began has been sampled by then).
    auto fenced_watch = std::make_shared<EpochWatch>();
    LoaderOptions fenced = across;
    fenced.last_epoch = 1;
    {
      NodeDataLoader last(watched_graph(cluster.graph(), fenced_watch), train, {4, 6}, fenced);
      same_as_reference(whole_epoch(last, 0), 0);
      same_as_reference(whole_epoch(last, 1), 1);
    }
    CHECK(fenced_watch->epochs == std::set<std::int64_t>{0, 1});
  }
}

TEST_CASE("abandoning an epoch midway and destroying the loader stops its threads", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const auto train = every(1, g.num_nodes());
  for (unsigned threads : {1u, 2u, 3u}) {
    NodeDataLoader loader(g, train, {5, 5},
                          {.batch_size = 10, .num_prefetch_threads = threads, .prefetch_depth = 2});
    loader.begin_epoch(0);
    REQUIRE(loader.next());
    loader.begin_epoch(1);  // abandons epoch 0 with its window full
    REQUIRE(loader.next());
    for (const auto& b : loader.epoch(2)) {
      if (b.index == 3) break;
    }
    // A moved loader keeps its threads' state alive; both are then destroyed midway.
    NodeDataLoader moved = std::move(loader);
    REQUIRE(moved.next());
  }
  SUCCEED("every loader was destroyed midway without hanging");
}

TEST_CASE("a producer's exception reaches the consumer at the batch where it happened", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  const auto train = every(1, 100);
  for (unsigned threads : {0u, 1u, 2u}) {
    INFO("threads " << threads);
    // Unshuffled batches of 10: node 45 is in batch 4.
    NodeDataLoader loader(faulty_graph(cluster.graph(), 45), train, {3},
                          {.batch_size = 10, .shuffle = false, .num_prefetch_threads = threads});
    loader.begin_epoch(0);
    for (int b = 0; b < 4; ++b) {
      const auto batch = loader.next();
      REQUIRE(batch);
      CHECK(batch->index == b);
    }
    CHECK_THROWS_AS(loader.next(), TimeoutError);
    for (int b = 5; b < 10; ++b) {
      const auto batch = loader.next();
      REQUIRE(batch);
      CHECK(batch->index == b);
    }
    CHECK_FALSE(loader.next());
  }
}

TEST_CASE("prefetch threads run at the niceness and policy asked and make the same batches",
          "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  const auto train = every(2, cluster.graph().num_nodes());
  // The calling thread's niceness, or -100 when it cannot be read (checked on the test's
  // thread: Catch asserts only there).
  const auto niceness = [] {
    errno = 0;
    const int n = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
    return errno == 0 ? n : -100;
  };
  const int before = niceness();
  REQUIRE(before != -100);
  if (const std::string why = test::sched_batch_untestable(); !why.empty() || before >= 19) {
    WARN("SKIPPED: " << (why.empty() ? "the test runs at niceness 19" : why));
    return;
  }
  std::vector<std::vector<NodeBatch>> runs;
  for (const bool lowered : {false, true}) {
    using Seen = std::set<std::pair<int, int>>;  // (niceness, policy) of each producing thread
    auto seen = std::make_shared<Seen>();
    auto mu = std::make_shared<std::mutex>();
    HookedGraph g{cluster.graph(), [&, seen, mu](std::span<const std::int64_t>, const SampleKey&) {
                    std::lock_guard lock(*mu);
                    seen->emplace(niceness(), ::sched_getscheduler(0));
                  }};
    NodeDataLoader loader(g, train, {4, 6},
                          {.batch_size = 30,
                           .seed = 5,
                           .num_prefetch_threads = 2,
                           .prefetch_depth = 3,
                           .prefetch_nice = lowered ? 19 : 0,
                           .prefetch_sched_batch = lowered});
    runs.push_back(whole_epoch(loader, 7));
    CHECK(*seen == (lowered ? Seen{{19, SCHED_BATCH}} : Seen{{before, SCHED_OTHER}}));
    CHECK(niceness() == before);
    CHECK(::sched_getscheduler(0) == SCHED_OTHER);
  }
  REQUIRE(runs[0].size() == runs[1].size());
  for (std::size_t i = 0; i < runs[0].size(); ++i) REQUIRE(same_batch(runs[0][i], runs[1][i]));
}

TEST_CASE("node loader rejects bad input at construction with typed errors", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const auto train = every(3, g.num_nodes());
  using L = NodeDataLoader<StandaloneGraph>;
  CHECK_THROWS_AS(L(g, std::vector<std::int64_t>{}, {5}, {}), InvalidArgument);
  CHECK_THROWS_AS(L(g, train, {5}, {.batch_size = 0}), InvalidArgument);
  CHECK_THROWS_AS(L(g, train, {5}, {.batch_size = -3}), InvalidArgument);
  CHECK_THROWS_AS(L(g, train, {}, {}), InvalidArgument);
  CHECK_THROWS_AS(L(g, train, {5, -2}, {}), InvalidArgument);
  CHECK_THROWS_AS(L(g, train, {5}, {.num_prefetch_threads = 2, .prefetch_depth = 0}),
                  InvalidArgument);
  CHECK_THROWS_AS(L(g, train, {5}, {.num_prefetch_threads = 1, .prefetch_nice = -1}),
                  InvalidArgument);
  CHECK_THROWS_AS(L(g, train, {5}, {.prefetch_nice = 20}), InvalidArgument);
  CHECK_THROWS_AS(L(g, std::vector<std::int64_t>{0, g.num_nodes()}, {5}, {}), IdOutOfRange);
  CHECK_THROWS_AS(L(g, std::vector<std::int64_t>{-1}, {5}, {}), IdOutOfRange);
  CHECK_THROWS_AS(L(g, std::vector<std::int64_t>{4, 2, 4}, {5}, {}), InvalidArgument);
  CHECK_THROWS_AS(L(g, train, {5}, {.feature = "missing"}), NotFound);
  CHECK_THROWS_AS(L(g, train, {5}, {.label = "feat"}), DTypeError);
  CHECK_THROWS_AS(L(g, train, {5}, {.feature = "label"}), DTypeError);
  L idle(g, train, {5}, {});
  CHECK_THROWS_AS(idle.next(), InvalidArgument);
  try {
    L(g, train, {5}, {.batch_size = 0});
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()).find("batch_size 0") != std::string::npos);
  }
}

namespace {

/// Every edge of the graph by global ID: endpoints and the ID of its reverse.
struct EdgeTable {
  EdgeEnds ends;
  std::vector<std::int64_t> reverse;
  explicit EdgeTable(const StandaloneGraph& g) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(g.num_edges()));
    std::iota(all.begin(), all.end(), 0);
    ends = g.find_edges(all);
    std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> id;
    for (std::size_t e = 0; e < all.size(); ++e) id[{ends.src[e], ends.dst[e]}] = all[e];
    reverse.assign(all.size(), -1);
    for (std::size_t e = 0; e < all.size(); ++e)
      if (const auto it = id.find({ends.dst[e], ends.src[e]}); it != id.end())
        reverse[e] = it->second;
  }
};

}  // namespace

TEST_CASE("edge loader yields real positive edges and num_negatives corrupted pairs each",
          "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const EdgeTable table(g);
  const auto train = every(7, g.num_edges());
  EdgeDataLoader loader(g, train, {3, 4}, {.batch_size = 25, .seed = 2}, {.num_negatives = 3});
  std::vector<std::int64_t> seen;
  std::set<std::int64_t> neg_dsts;
  for (const EdgeBatch& b : loader.epoch(0)) {
    seen.insert(seen.end(), b.eids.begin(), b.eids.end());
    const auto k = b.eids.size();
    REQUIRE(b.pos_src.size() == k);
    REQUIRE(b.pos_dst.size() == k);
    REQUIRE(b.neg_src.size() == 3 * k);
    REQUIRE(b.neg_dst.size() == 3 * k);
    CHECK(std::set<std::int64_t>(b.output_nodes.begin(), b.output_nodes.end()).size() ==
          b.output_nodes.size());
    for (std::size_t i = 0; i < k; ++i) {
      const auto e = static_cast<std::size_t>(b.eids[i]);
      REQUIRE(b.output_nodes[static_cast<std::size_t>(b.pos_src[i])] == table.ends.src[e]);
      REQUIRE(b.output_nodes[static_cast<std::size_t>(b.pos_dst[i])] == table.ends.dst[e]);
      for (std::size_t j = 0; j < 3; ++j) {
        REQUIRE(b.neg_src[i * 3 + j] == b.pos_src[i]);
        neg_dsts.insert(b.output_nodes[static_cast<std::size_t>(b.neg_dst[i * 3 + j])]);
      }
    }
    check_blocks(g, b.blocks, b.input_nodes, b.output_nodes, {3, 4});
    REQUIRE(b.features == g.ndata<float>("feat").pull(b.input_nodes));
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen == train);
  // Negative destinations spread over the graph (uniform over 800 nodes).
  CHECK(neg_dsts.size() > 300);

  std::vector<std::vector<EdgeBatch>> runs;
  for (unsigned threads : {0u, 2u}) {
    EdgeDataLoader l(g, train, {3, 4},
                     {.batch_size = 25, .seed = 2, .num_prefetch_threads = threads},
                     {.num_negatives = 3});
    runs.push_back(whole_epoch(l, 4));
  }
  REQUIRE(runs[0].size() == runs[1].size());
  for (std::size_t i = 0; i < runs[0].size(); ++i) REQUIRE(same_batch(runs[0][i], runs[1][i]));
}

TEST_CASE("edge loader keeps excluded seed and reverse edges out of every block", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const EdgeTable table(g);
  for (std::size_t e = 0; e < table.reverse.size(); ++e) REQUIRE(table.reverse[e] >= 0);
  const auto train = every(5, g.num_edges());
  // Fanout -1 takes every in-edge, so without exclusion each seed edge is in the last
  // block (its destination is an output node): the exclusion is what removes it.
  const auto count_hits = [&](ExcludeEdges mode) {
    EdgeLoaderOptions eo{.num_negatives = 1, .exclude = mode};
    if (mode == ExcludeEdges::self_and_reverse) eo.reverse_eids = table.reverse;
    EdgeDataLoader loader(g, train, {2, -1}, {.batch_size = 40, .seed = 6}, eo);
    std::int64_t seed_hits = 0, reverse_hits = 0;
    for (const EdgeBatch& b : loader.epoch(0)) {
      std::set<std::int64_t> seeds(b.eids.begin(), b.eids.end()), reverses;
      for (auto e : b.eids) reverses.insert(table.reverse[static_cast<std::size_t>(e)]);
      for (const Block& blk : b.blocks)
        for (auto e : blk.eid) {
          seed_hits += seeds.count(e);
          reverse_hits += reverses.count(e);
        }
      check_blocks(g, b.blocks, b.input_nodes, b.output_nodes, {2, -1});
    }
    return std::pair{seed_hits, reverse_hits};
  };
  const auto none = count_hits(ExcludeEdges::none);
  CHECK(none.first >= static_cast<std::int64_t>(train.size()));
  CHECK(none.second >= static_cast<std::int64_t>(train.size()));
  const auto self = count_hits(ExcludeEdges::self);
  CHECK(self.first == 0);
  CHECK(self.second > 0);
  const auto both = count_hits(ExcludeEdges::self_and_reverse);
  CHECK(both.first == 0);
  CHECK(both.second == 0);
}

TEST_CASE("edge loader rejects bad input at construction with typed errors", "[dist]") {
  Fixture f;
  StandaloneCluster<> cluster(f.config);
  auto g = cluster.graph();
  const auto train = every(9, g.num_edges());
  const auto m = static_cast<std::size_t>(g.num_edges());
  using L = EdgeDataLoader<StandaloneGraph>;
  CHECK_THROWS_AS(L(g, std::vector<std::int64_t>{}, {5}), InvalidArgument);
  CHECK_THROWS_AS(L(g, train, {5}, {.batch_size = 0}), InvalidArgument);
  CHECK_THROWS_AS(L(g, train, {-3}), InvalidArgument);
  CHECK_THROWS_AS(L(g, std::vector<std::int64_t>{g.num_edges()}, {5}), IdOutOfRange);
  CHECK_THROWS_AS(L(g, train, {5}, {}, {.num_negatives = -1}), InvalidArgument);
  CHECK_THROWS_AS(L(g, train, {5}, {}, {.exclude = ExcludeEdges::self_and_reverse}),
                  InvalidArgument);
  CHECK_THROWS_AS(
      L(g, train, {5}, {},
        {.exclude = ExcludeEdges::self, .reverse_eids = std::vector<std::int64_t>(m, -1)}),
      InvalidArgument);
  std::vector<std::int64_t> bad(m, -1);
  bad[3] = g.num_edges();
  CHECK_THROWS_AS(
      L(g, train, {5}, {}, {.exclude = ExcludeEdges::self_and_reverse, .reverse_eids = bad}),
      IdOutOfRange);
  CHECK_THROWS_AS(L(g, train, {5}, {.feature = "missing"}), NotFound);
  // Excluding edges needs the sampled edges' IDs.
  LoaderOptions no_ids;
  no_ids.edge_ids = EdgeIds::omitted;
  CHECK_THROWS_WITH(L(g, train, {5}, no_ids, {.exclude = ExcludeEdges::self}),
                    Catch::Contains("edge_ids omitted while excluding edges"));
  CHECK_NOTHROW(L(g, train, {5}, no_ids));
}

}  // namespace test_loaders_data_loaders

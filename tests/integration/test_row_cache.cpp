// The machine row cache (distributed/row_cache.hpp) over a real 2-machine loopback cluster: cached
// reads equal the owners' rows byte for byte, one trainer per machine fills it, writes to a
// cached tensor are refused, embeddings are never cached, and a dead owner never yields a
// wrong row.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <atomic>
#include <future>
#include <numeric>
#include <random>

#include "distgraph/distributed/dist_embedding.hpp"
#include "distgraph/distributed/dist_graph.hpp"
#include "distgraph/distributed/row_cache.hpp"
#include "distgraph/loaders/node_data_loader.hpp"
#include "support/loader_batches.hpp"
#include "support/loader_cluster.hpp"

namespace test_integration_row_cache {

using namespace distgraph;
using namespace std::chrono_literals;
using distgraph::test::every;
using distgraph::test::LoaderCluster;
using distgraph::test::whole_epoch;

#ifdef DISTGRAPH_CLI

namespace {

std::vector<std::int64_t> iota_ids(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

/// Global IDs owned by partition `part`.
std::vector<std::int64_t> owned_by(const distgraph::test::ClusterGraph& g, std::int32_t part) {
  const auto all = iota_ids(g.num_nodes());
  std::vector<std::int32_t> owner(all.size());
  g.book().node_partition(all, owner);
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (owner[i] == part) out.push_back(all[i]);
  return out;
}

/// Every node, in a shuffled order with some repeats: what a batch's input looks like.
std::vector<std::int64_t> shuffled_with_repeats(std::int64_t n, std::uint64_t seed) {
  auto v = iota_ids(n);
  for (std::int64_t i = 0; i < n; i += 7) v.push_back(i);
  std::mt19937_64 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

}  // namespace

TEST_CASE("a machine's row cache serves other machines' rows byte for byte, filled once",
          "[integration][net][cache]") {
  LoaderCluster c;
  auto reference = c.graph(-1);  // no machine, no cache: every row from its owner
  const auto feat_ref = reference.ndata<float>("feat");
  const auto ids = shuffled_with_repeats(reference.num_nodes(), 3);
  const auto want = feat_ref.pull(ids);
  const auto row_bytes = static_cast<std::size_t>(feat_ref.num_cols()) * sizeof(float);

  // Three trainers of one job: two on machine 0 (they share its cache), one on machine 1.
  // The budget holds half of the other machine's rows; candidates are ranked by ID.
  constexpr std::int32_t trainers = 3;
  const int machine_of[trainers] = {0, 0, 1};
  std::vector<distgraph::test::ClusterGraph> graphs;
  for (int t = 0; t < trainers; ++t) graphs.push_back(c.graph(machine_of[t], trainers));
  const auto remote0 = owned_by(graphs[0], 1), remote1 = owned_by(graphs[2], 0);
  const std::size_t budget = remote0.size() / 2 * row_bytes + row_bytes / 2;
  std::vector<std::future<RowCacheStats>> built;
  std::atomic<int> ranked_calls{0};
  for (int t = 0; t < trainers; ++t)
    built.push_back(std::async(std::launch::async, [&, t] {
      return graphs[static_cast<std::size_t>(t)].cache_remote_rows("feat", budget, [&] {
        ++ranked_calls;
        return iota_ids(graphs[0].num_nodes());  // own rows among them are skipped
      });
    }));
  std::vector<RowCacheStats> st;
  for (auto& f : built) st.push_back(f.get());
  // One filler per machine: exactly one of machine 0's two trainers, and machine 1's one.
  CHECK(ranked_calls == 2);
  CHECK(st[0].filled_here != st[1].filled_here);
  CHECK(st[2].filled_here);
  CHECK(st[0].rows == static_cast<std::int64_t>(remote0.size() / 2));
  CHECK(st[1].rows == st[0].rows);
  CHECK(st[2].rows == static_cast<std::int64_t>(std::min(remote1.size(), remote0.size() / 2)));
  CHECK(st[0].bytes == st[0].rows * static_cast<std::int64_t>(row_bytes));
  const auto& filler0 = st[0].filled_here ? st[0] : st[1];
  CHECK(filler0.candidates == static_cast<std::int64_t>(remote0.size()));

  for (int t = 0; t < trainers; ++t) {
    INFO("trainer " << t << " on machine " << machine_of[t]);
    const auto& g = graphs[static_cast<std::size_t>(t)];
    const auto cache = g.client().row_cache("node:feat");
    REQUIRE(cache != nullptr);
    // The cache holds the first-ranked (smallest) remote IDs, ascending.
    const auto& remote = machine_of[t] == 0 ? remote0 : remote1;
    REQUIRE(cache->ids().size() == static_cast<std::size_t>(st[static_cast<std::size_t>(t)].rows));
    CHECK(std::equal(cache->ids().begin(), cache->ids().end(), remote.begin()));
    const auto before = g.client().remote_traffic();
    const auto got = g.ndata<float>("feat").pull(ids);
    const auto after = g.client().remote_traffic();
    REQUIRE(got.size() == want.size());
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    // Every wanted remote row came from the cache or the network, never both.
    std::int64_t remote_wanted = 0, cached_wanted = 0;
    for (const auto id : ids) {
      const bool is_remote = std::binary_search(remote.begin(), remote.end(), id);
      remote_wanted += is_remote;
      cached_wanted += is_remote && cache->slot(id) >= 0;
    }
    CHECK(after.cached_rows - before.cached_rows == cached_wanted);
    CHECK(after.rows - before.rows == remote_wanted - cached_wanted);
    CHECK(after.cached_bytes - before.cached_bytes ==
          cached_wanted * static_cast<std::int64_t>(row_bytes));
    CHECK(cached_wanted > 0);
  }

  // Loaders through the cache give the batches of loaders without one.
  const auto train = every(3, reference.num_nodes());
  const LoaderOptions opts{.batch_size = 64, .seed = 17, .rank = 0, .num_prefetch_threads = 2};
  NodeDataLoader plain(reference, train, {5, 10}, opts);
  NodeDataLoader cached(graphs[1], train, {5, 10}, opts);
  const auto a = whole_epoch(plain, 2), b = whole_epoch(cached, 2);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a[i].features == b[i].features);

  // A tensor is cached once per job: a rebuild under readers could mix old slots and new rows.
  CHECK_THROWS_AS(
      graphs[2].cache_remote_rows("feat", budget, [] { return std::vector<std::int64_t>{}; }),
      InvalidArgument);
  c.shutdown();
}

TEST_CASE("cached tensors refuse writes, and embeddings are never cached",
          "[integration][net][cache]") {
  LoaderCluster c;
  auto g = c.graph(0);
  auto other = c.graph(1);
  auto reference = c.graph(-1);
  const auto remote = owned_by(g, 1);
  auto emb = DistEmbedding<distgraph::test::Client>::create(g.client_ptr(), "emb", 4);
  // Only partition data, the job's read-only input, may be cached.
  CHECK_THROWS_AS(g.cache_remote_rows("emb", 1 << 20, [&] { return remote; }), InvalidArgument);
  CHECK(g.client().row_cache("emb") == nullptr);
  // A zero budget caches nothing and refuses nothing.
  CHECK(g.cache_remote_rows("label", 0, [&] { return remote; }).rows == 0);
  CHECK(g.client().row_cache("node:label") == nullptr);

  const auto st = g.cache_remote_rows("feat", 64 << 20, [&] { return remote; });
  CHECK(st.rows == static_cast<std::int64_t>(remote.size()));
  auto feat = g.ndata<float>("feat");
  const std::vector<std::int64_t> one{remote.front(), 0};
  const auto before = reference.ndata<float>("feat").pull(one);
  std::vector<float> rows(before.size(), 42.0f);
  // Writes through the caching client are refused before anything is sent.
  CHECK_THROWS_AS(feat.push(one, rows), InvalidArgument);
  CHECK_THROWS_AS(feat.push_add(one, rows), InvalidArgument);
  CHECK(reference.ndata<float>("feat").pull(one) == before);

  // The embedding's rows change on the servers (another trainer's writes); the caching
  // trainer sees every change at once.
  for (float v : {1.5f, -2.0f}) {
    const std::vector<std::int64_t> ids{remote.front(), remote.back()};
    std::vector<float> next(ids.size() * 4, v);
    other.client().push("emb", RowKind::node, ids, std::as_bytes(std::span<const float>(next)),
                        4 * sizeof(float), false);
    CHECK(emb.pull(ids) == next);
  }
  c.shutdown();
}

TEST_CASE("a cache whose owner died still serves its rows, and the rest fail within the deadline",
          "[integration][net][cache]") {
  LoaderCluster c;
  auto g = c.graph(0);
  auto reference = c.graph(-1);
  const auto remote = owned_by(g, 1);
  const auto want = reference.ndata<float>("feat").pull(remote);
  const std::vector<std::int64_t> half(
      remote.begin(), remote.begin() + static_cast<std::ptrdiff_t>(remote.size() / 2));
  const auto row_bytes = static_cast<std::size_t>(g.ndata<float>("feat").num_cols()) * 4;
  REQUIRE(g.cache_remote_rows("feat", half.size() * row_bytes, [&] { return half; }).rows ==
          static_cast<std::int64_t>(half.size()));
  ::kill(c.procs[1]->pid(), SIGKILL);
  REQUIRE(c.procs[1]->wait(15s).has_value());
  // Cached rows need no owner.
  const auto got = g.ndata<float>("feat").pull(half);
  CHECK(std::equal(got.begin(), got.end(), want.begin()));
  // A row the cache lacks needs its dead owner: an error, never a wrong or zero row.
  const std::vector<std::int64_t> missing{remote.back()};
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(g.ndata<float>("feat").pull(missing), Error);
  CHECK(std::chrono::steady_clock::now() - t0 < 25s);
  g.client().shutdown_servers();  // the one left
  REQUIRE(c.procs[0]->wait(15s).has_value());
}

#endif  // DISTGRAPH_CLI

}  // namespace test_integration_row_cache

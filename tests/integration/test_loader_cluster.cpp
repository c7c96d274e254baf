// Data loaders over a real 2-machine loopback cluster of `distgraph serve` processes give the
// batches a standalone run gives for the same seed.
#include <catch2/catch.hpp>

#include "distgraph/distributed/dist_graph.hpp"
#include "distgraph/distributed/standalone.hpp"
#include "distgraph/loaders/edge_data_loader.hpp"
#include "distgraph/loaders/node_data_loader.hpp"
#include "support/loader_batches.hpp"
#include "support/loader_cluster.hpp"

namespace test_integration_loader_cluster {

using namespace distgraph;
using namespace std::chrono_literals;
using distgraph::test::every;
using distgraph::test::LoaderCluster;
using distgraph::test::same_batch;
using distgraph::test::whole_epoch;

#ifdef DISTGRAPH_CLI

TEST_CASE("loaders over a loopback cluster yield the batches of a standalone run",
          "[integration][net]") {
  LoaderCluster c;
  StandaloneCluster<> standalone(c.sbm.config);
  auto sg = standalone.graph();
  const auto train = every(3, sg.num_nodes());
  const LoaderOptions opts{.batch_size = 64, .seed = 17, .rank = 0};
  NodeDataLoader reference(sg, train, {5, 10}, opts);
  const auto want = whole_epoch(reference, 1);
  REQUIRE(!want.empty());
  for (const int machine : {0, 1, -1}) {
    for (const unsigned threads : {0u, 2u}) {
      INFO("trainer on machine " << machine << ", " << threads << " prefetch threads");
      LoaderOptions o = opts;
      o.num_prefetch_threads = threads;
      NodeDataLoader loader(c.graph(machine), train, {5, 10}, o);
      const auto got = whole_epoch(loader, 1);
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        REQUIRE(got[i].input_nodes == want[i].input_nodes);
        REQUIRE(got[i].blocks.front().eid == want[i].blocks.front().eid);
        REQUIRE(got[i].features == want[i].features);
        REQUIRE(same_batch(got[i], want[i]));
      }
    }
  }

  const auto train_edges = every(11, sg.num_edges());
  const EdgeLoaderOptions eo{.num_negatives = 2, .exclude = ExcludeEdges::self};
  EdgeDataLoader edge_reference(sg, train_edges, {4, 4}, opts, eo);
  const auto want_edges = whole_epoch(edge_reference, 0);
  LoaderOptions o = opts;
  o.num_prefetch_threads = 2;
  EdgeDataLoader edge_loader(c.graph(0), train_edges, {4, 4}, o, eo);
  const auto got_edges = whole_epoch(edge_loader, 0);
  REQUIRE(got_edges.size() == want_edges.size());
  for (std::size_t i = 0; i < got_edges.size(); ++i)
    REQUIRE(same_batch(got_edges[i], want_edges[i]));

  c.shutdown();
}

#endif  // DISTGRAPH_CLI

}  // namespace test_integration_loader_cluster

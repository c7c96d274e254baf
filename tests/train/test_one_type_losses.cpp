// The homogeneous case equals the one-type typed case down to the training losses: the
// same recipe over a homogeneous partition and over the one-type typed partition of the
// same data (typed data "node/<name>") trains the same model on the same batches.
#include <torch/types.h>  // before Catch: c10's logging defines a CHECK that Catch's replaces

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "distgraph/tasks/node_classification.hpp"
#include "support/one_type_hetero.hpp"
#include "support/temp_dir.hpp"

namespace test_train_one_type_losses {

using namespace distgraph;
using distgraph::test::TempDir;

TEST_CASE("a one-type typed graph trains with exactly the homogeneous graph's losses",
          "[train][hetero]") {
  SbmOptions so;
  so.num_nodes = 300;
  so.num_classes = 3;
  so.avg_degree = 6;
  so.feat_dim = 8;
  so.seed = 4;
  const Dataset d = sbm_dataset(so);
  TempDir homo_dir, typed_dir;
  const PartitionOptions popts{.method = PartMethod::metis, .seed = 2};
  partition_dataset(d, "g", 2, homo_dir.path(), popts);
  partition_hetero_dataset(distgraph::test::one_type_hetero(d), "g", 2, typed_dir.path(), popts);

  NodeClassificationOptions o;
  o.epochs = 3;
  o.hidden = 16;
  o.fanouts = {4, 4};
  o.batch_size = 32;
  o.seed = 9;
  o.num_prefetch_threads = 0;
  NodeClassificationOptions typed = o;
  for (std::string* name : {&typed.feature, &typed.label, &typed.train_mask, &typed.val_mask,
                            &typed.test_mask})
    *name = "node/" + *name;  // the typed partition's names

  StandaloneCluster<> homo_cluster(homo_dir / "g.json"), typed_cluster(typed_dir / "g.json");
  const auto a = train_node_classification(homo_cluster.graph(), o);
  const auto b = train_node_classification(typed_cluster.graph(), typed);
  REQUIRE(a.rows.size() == 3);
  REQUIRE(b.rows.size() == a.rows.size());
  for (std::size_t e = 0; e < a.rows.size(); ++e) {
    INFO("epoch " << e);
    CHECK(a.rows[e].loss > 0);
    CHECK(b.rows[e].loss == a.rows[e].loss);
    CHECK(b.rows[e].train_metric == a.rows[e].train_metric);
    CHECK(b.rows[e].val_metric == a.rows[e].val_metric);
  }
  CHECK(a.rows.front().loss != a.rows.back().loss);  // it trained: the losses moved
  CHECK(b.test == a.test);
  CHECK(b.num_classes == a.num_classes);
}

}  // namespace test_train_one_type_losses

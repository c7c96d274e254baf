// The one epoch loop (train_epochs) gives every task what node classification had: the
// typed task and link prediction select their best validation epoch (learned rows
// included), stop early, and resume to the same model.
#include <torch/types.h>  // before Catch: c10's logging defines a CHECK that Catch's replaces

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/partition/partition_hetero.hpp"
#include "distgraph/tasks/hetero_node_classification.hpp"
#include "distgraph/tasks/link_prediction.hpp"
#include "support/small_hsbm.hpp"
#include "support/temp_dir.hpp"

namespace test_train_epoch_loop {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

/// The epoch with the best validation metric (the first of equals).
std::int64_t first_best(const RunResult& r) {
  std::int64_t best = 0;
  for (std::size_t e = 0; e < r.rows.size(); ++e)
    if (r.rows[e].val_metric > r.rows[static_cast<std::size_t>(best)].val_metric)
      best = static_cast<std::int64_t>(e);
  return best;
}

/// The small typed graph, whose venues are featureless (learned rows on the servers), and
/// a recipe that overfits its few training papers: validation peaks before the last epoch.
struct TypedSetup {
  TempDir dir;
  HeteroNodeClassificationOptions o;
  TypedSetup() {
    partition_hetero_dataset(distgraph::test::small_hsbm(), "g", 2, dir.path(),
                             {.method = PartMethod::metis, .seed = 2});
    o.target_ntype = "paper";
    o.epochs = 14;
    o.hidden = 32;
    o.fanouts = {4, 4};
    o.batch_size = 8;
    o.lr = 0.05;
    o.embedding_lr = 0.1;
    o.embedding_dim = 8;
    o.dropout = 0.0;
    o.seed = 5;
    o.num_prefetch_threads = 0;
  }
  RunResult run(const std::filesystem::path& out, std::int64_t epochs, bool resume = false) {
    StandaloneCluster<> cluster(dir / "g.json", dir / "server-checkpoints");
    HeteroNodeClassificationOptions r = o;
    r.epochs = epochs;
    r.out = out;
    r.resume = resume;
    return train_hetero_node_classification(cluster.graph(), r);
  }
};

}  // namespace

TEST_CASE("the typed task ends with its best validation epoch's model and learned rows",
          "[train][selection][hetero]") {
  TypedSetup s;
  TempDir out;
  const auto res = s.run(out / "all", s.o.epochs);
  REQUIRE(res.rows.size() == static_cast<std::size_t>(s.o.epochs));
  const std::int64_t best = first_best(res);
  INFO("best validation at epoch " << best);
  REQUIRE(best < s.o.epochs - 1);  // the restore path is what is tested
  CHECK(res.extra["best_epoch"].get<std::int64_t>() == best);
  CHECK(res.val == res.rows[static_cast<std::size_t>(best)].val_metric);
  CHECK(std::filesystem::exists(out / "all" / "best.pt"));
  // A run stopped at the best epoch has that very model and venue rows: the same test
  // metric and macro-F1, so the longer run restored both (the rows moved every epoch).
  const auto shorter = s.run(out / "short", best + 1);
  CHECK(shorter.test == res.test);
  CHECK(shorter.extra["test_macro_f1"] == res.extra["test_macro_f1"]);
  // Resumed after the best epoch: the best model is in best.pt, its rows on the servers.
  s.run(out / "split", best + 2);
  const auto resumed = s.run(out / "split", s.o.epochs, true);
  CHECK(resumed.resumed_from == best + 2);
  CHECK(resumed.extra["best_epoch"].get<std::int64_t>() == best);
  CHECK(resumed.test == res.test);
}

TEST_CASE("the typed task stops early `patience` epochs after its best one",
          "[train][selection][hetero]") {
  TypedSetup s;
  TempDir out;
  const auto whole = s.run(out / "whole", s.o.epochs);
  // Where a run with patience 1 must stop: before the first epoch whose best so far is
  // two epochs old (training is deterministic here, so its rows are the whole run's).
  const std::int64_t patience = 1;
  std::int64_t best = 0, stop = s.o.epochs;
  for (std::int64_t e = 1; e < s.o.epochs; ++e) {
    if ((e - 1) - best >= patience) {
      stop = e;
      break;
    }
    if (whole.rows[static_cast<std::size_t>(e)].val_metric >
        whole.rows[static_cast<std::size_t>(best)].val_metric)
      best = e;
  }
  INFO("expected stop before epoch " << stop << ", best " << best);
  REQUIRE(stop < s.o.epochs);  // the scenario has a plateau
  s.o.patience = patience;
  const auto early = s.run(out / "early", s.o.epochs);
  CHECK(early.extra["stopped_early"].get<bool>());
  CHECK(early.epochs == stop);
  CHECK(early.extra["best_epoch"].get<std::int64_t>() == best);
  CHECK(early.val == whole.rows[static_cast<std::size_t>(best)].val_metric);
}

TEST_CASE("link prediction selects its best validation epoch and resumes to it",
          "[train][selection][link]") {
  SbmOptions so;
  so.num_nodes = 300;
  so.num_classes = 3;
  so.avg_degree = 6;
  so.feat_dim = 8;
  so.seed = 4;
  TempDir dir, out;
  partition_dataset(sbm_dataset(so), "g", 2, dir.path(), {.method = PartMethod::metis, .seed = 2});
  LinkPredictionOptions o;
  o.epochs = 8;
  o.hidden = 16;
  o.fanouts = {4, 4};
  o.batch_size = 64;
  o.lr = 0.05;
  o.seed = 3;
  o.num_prefetch_threads = 0;
  const auto run = [&](const std::filesystem::path& where, std::int64_t epochs, bool resume) {
    StandaloneCluster<> cluster(dir / "g.json");
    LinkPredictionOptions r = o;
    r.epochs = epochs;
    r.out = where;
    r.resume = resume;
    return train_link_prediction(cluster.graph(), r);
  };
  const auto res = run(out / "all", o.epochs, false);
  REQUIRE(res.rows.size() == static_cast<std::size_t>(o.epochs));
  const std::int64_t best = first_best(res);
  CHECK(res.extra["best_epoch"].get<std::int64_t>() == best);
  CHECK(res.val == res.rows[static_cast<std::size_t>(best)].val_metric);
  CHECK(res.metric == Metric::roc_auc);
  std::ifstream rj(out / "all" / "result.json");
  REQUIRE(rj);
  CHECK(nlohmann::json::parse(rj)["best_epoch"].get<std::int64_t>() == best);
  // Stopped at the best epoch: the same test ROC-AUC as the run that selected it.
  const auto shorter = run(out / "short", best + 1, false);
  CHECK(shorter.test == res.test);
  // Interrupted halfway and resumed: the same epochs, the same selected model.
  run(out / "split", o.epochs / 2, false);
  const auto resumed = run(out / "split", o.epochs, true);
  CHECK(resumed.resumed_from == o.epochs / 2);
  CHECK(resumed.extra["best_epoch"].get<std::int64_t>() == best);
  CHECK(resumed.test == res.test);
}

}  // namespace test_train_epoch_loop

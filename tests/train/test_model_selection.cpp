// Model selection in train_node_classification: the run's model is the epoch with the best
// validation metric, restored for the test metric, kept in out/best.pt, and found again
// after a resume; every epoch reports its validation loss.
#include <torch/types.h>  // before Catch: c10's logging defines a CHECK that Catch's replaces

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "distgraph/distributed/standalone.hpp"
#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "distgraph/tasks/node_classification.hpp"
#include "distgraph/train/checkpoint.hpp"
#include "support/temp_dir.hpp"

namespace test_train_model_selection {

using namespace distgraph;
using distgraph::test::TempDir;

namespace {

/// A small SBM graph whose few training nodes a wide model overfits: validation peaks
/// before the last epoch.
struct Setup {
  TempDir dir;
  NodeClassificationOptions o;
  Setup() {
    SbmOptions so;
    so.num_nodes = 400;
    so.num_classes = 4;
    so.avg_degree = 5;
    so.feat_dim = 16;
    so.feature_noise = 3.0;
    so.seed = 11;
    partition_dataset(sbm_dataset(so), "g", 2, dir.path(),
                      {.method = PartMethod::metis, .seed = 2});
    o.epochs = 12;
    o.hidden = 64;
    o.fanouts = {5, 5};
    o.batch_size = 16;
    o.lr = 0.05;
    o.dropout = o.input_dropout = 0.0;
    o.seed = 3;
    o.num_prefetch_threads = 0;
    o.cache_mb = 0;
  }
  NodeClassificationResult run(const std::filesystem::path& out, std::int64_t epochs,
                               bool resume = false) {
    StandaloneCluster<> cluster(dir / "g.json");
    NodeClassificationOptions r = o;
    r.epochs = epochs;
    r.out = out;
    r.resume = resume;
    return train_node_classification(cluster.graph(), r);
  }
};

std::int64_t first_best(const NodeClassificationResult& r) {
  std::int64_t best = 0;
  for (std::size_t e = 0; e < r.rows.size(); ++e)
    if (r.rows[e].val_metric > r.rows[static_cast<std::size_t>(best)].val_metric)
      best = static_cast<std::int64_t>(e);
  return best;
}

}  // namespace

TEST_CASE("the run's model is its best validation epoch's, restored for the test metric",
          "[train][selection]") {
  Setup s;
  TempDir out;
  const auto res = s.run(out / "all", s.o.epochs);
  REQUIRE(res.rows.size() == static_cast<std::size_t>(s.o.epochs));
  const std::int64_t best = first_best(res);
  INFO("best validation at epoch " << best);
  // The scenario overfits, so the restore path is what is tested.
  REQUIRE(best < s.o.epochs - 1);
  CHECK(res.extra["best_epoch"].get<std::int64_t>() == best);
  CHECK(res.val == res.rows[static_cast<std::size_t>(best)].val_metric);
  for (const auto& r : res.rows) CHECK(r.val_loss > 0);
  // result.json and best.pt say the same.
  std::ifstream rj(out / "all" / "result.json");
  REQUIRE(rj);
  CHECK(nlohmann::json::parse(rj)["best_epoch"].get<std::int64_t>() == best);
  const CheckpointReader bp(read_checkpoint_file(out / "all" / "best.pt"), "best.pt");
  CHECK(bp.meta()["best_epoch"].get<std::int64_t>() == best);

  // Training stopped at the best epoch ends with that very model (training is
  // deterministic here): the same test metric, so the longer run restored it.
  const auto shorter = s.run(out / "short", best + 1);
  CHECK(shorter.extra["best_epoch"].get<std::int64_t>() == best);
  CHECK(shorter.test == res.test);
}

TEST_CASE("a resumed run selects the same epoch, also one from before the resume",
          "[train][selection]") {
  Setup s;
  TempDir out;
  const auto whole = s.run(out / "whole", s.o.epochs);
  const std::int64_t best = whole.extra["best_epoch"].get<std::int64_t>();
  // Stop after the best epoch, then resume to the end: the best model is then only in
  // best.pt on disk.
  s.run(out / "split", best + 1);
  const auto resumed = s.run(out / "split", s.o.epochs, true);
  CHECK(resumed.extra["best_epoch"].get<std::int64_t>() == best);
  CHECK(resumed.val == whole.val);
  CHECK(resumed.test == whole.test);
}

TEST_CASE("a best.pt that holds another epoch than the checkpoint's best is not taken for it",
          "[train][selection]") {
  Setup s;
  TempDir out;
  const auto whole = s.run(out / "whole", s.o.epochs);
  const std::int64_t best = whole.extra["best_epoch"].get<std::int64_t>();
  REQUIRE(best >= 1);
  REQUIRE(best + 2 < s.o.epochs);
  // A run stopped before the best epoch has another best; its best.pt stands for the one a
  // crash leaves when best.pt was written and checkpoint.pt not yet.
  const auto before = s.run(out / "before", best);
  REQUIRE(before.extra["best_epoch"].get<std::int64_t>() != best);
  s.run(out / "split", best + 2);
  std::filesystem::copy_file(out / "before" / "best.pt", out / "split" / "best.pt",
                             std::filesystem::copy_options::overwrite_existing);
  const auto resumed = s.run(out / "split", s.o.epochs, true);
  // No later epoch beats the best, whose model is gone: the last epoch is reported.
  CHECK(resumed.extra["best_epoch"].get<std::int64_t>() == s.o.epochs - 1);
  CHECK(resumed.val == resumed.rows.back().val_metric);
}

TEST_CASE("the default patience is 100 optimizer steps' worth of epochs, at least 50",
          "[train][selection]") {
  CHECK(resolve_patience(-1, 1) == 100);    // one batch an epoch: 100 epochs
  CHECK(resolve_patience(-1, 3) == 50);     // 34 rounded up, then the floor
  CHECK(resolve_patience(-1, 6) == 50);     // Tolokers' 5,879 training nodes in batches of 1000
  CHECK(resolve_patience(-1, 1000) == 50);  // a large graph: no fewer than 50 epochs
  CHECK(resolve_patience(-1, 0) == 100);    // an empty share still agrees with the others
  CHECK(resolve_patience(0, 7) == 0);       // never
  CHECK(resolve_patience(5, 7) == 5);
}

TEST_CASE(
    "early stopping ends the run `patience` epochs after its best validation epoch, "
    "resumed or not",
    "[train][selection]") {
  Setup s;
  TempDir out;
  s.o.patience = 0;  // the reference: every epoch
  const auto whole = s.run(out / "whole", s.o.epochs);
  const std::int64_t best = whole.extra["best_epoch"].get<std::int64_t>();
  REQUIRE(best + 4 < s.o.epochs);  // the scenario overfits early (checked above)
  CHECK_FALSE(whole.extra["stopped_early"].get<bool>());

  s.o.patience = 3;
  const auto early = s.run(out / "early", s.o.epochs);
  CHECK(early.extra["stopped_early"].get<bool>());
  CHECK(early.extra["patience"].get<std::int64_t>() == 3);
  CHECK(early.epochs == best + 1 + 3);
  CHECK(early.rows.size() == static_cast<std::size_t>(best + 4));
  CHECK(early.extra["best_epoch"].get<std::int64_t>() == best);
  // The same selected model as the run that trained every epoch.
  CHECK(early.test == whole.test);
  CHECK(early.val == whole.val);
  std::ifstream rj(out / "early" / "result.json");
  REQUIRE(rj);
  const auto j = nlohmann::json::parse(rj);
  CHECK(j["epochs"].get<std::int64_t>() == best + 4);
  CHECK(j["stopped_early"].get<bool>());

  // Interrupted after the best epoch and resumed: it stops where the uninterrupted run did.
  s.run(out / "split", best + 2);
  const auto resumed = s.run(out / "split", s.o.epochs, true);
  CHECK(resumed.extra["stopped_early"].get<bool>());
  CHECK(resumed.epochs == early.epochs);
  CHECK(resumed.test == early.test);
  // Resumed after the stop: nothing more is trained, the same model is reported.
  const auto again = s.run(out / "early", s.o.epochs, true);
  CHECK(again.epochs == early.epochs);
  CHECK(again.extra["best_epoch"].get<std::int64_t>() == best);
  CHECK(again.test == early.test);
}

TEST_CASE(
    "full evaluation (layer-wise inference) equals evaluation over full-neighbourhood "
    "blocks",
    "[train][selection][eval]") {
  Setup s;
  TempDir out;
  s.o.epochs = 4;
  s.o.fanouts = {-1, -1};  // sampled evaluation then takes full neighbourhoods: exact too
  s.o.eval = EvalMode::full;
  const auto full = s.run(out / "full", s.o.epochs);
  s.o.eval = EvalMode::sampled;
  const auto blocks = s.run(out / "blocks", s.o.epochs);
  CHECK(full.extra["eval"] == "full");
  CHECK(blocks.extra["eval"] == "sampled");
  REQUIRE(full.rows.size() == blocks.rows.size());
  for (std::size_t e = 0; e < full.rows.size(); ++e) {
    INFO("epoch " << e);
    CHECK(full.rows[e].loss == blocks.rows[e].loss);  // the same training
    CHECK(full.rows[e].val_metric == Approx(blocks.rows[e].val_metric).margin(1e-12));
    CHECK(full.rows[e].val_loss == Approx(blocks.rows[e].val_loss).epsilon(1e-5));
  }
  CHECK(full.test == blocks.test);
  CHECK(full.extra["best_epoch"] == blocks.extra["best_epoch"]);
}

TEST_CASE(
    "eval_every K validates after every K-th epoch and the last, and only those are "
    "selected",
    "[train][selection][eval]") {
  Setup s;
  TempDir out;
  s.o.eval_every = 5;
  const auto res = s.run(out / "k5", s.o.epochs);  // 12 epochs: validated after 5, 10, 12
  REQUIRE(res.rows.size() == 12);
  for (const auto& r : res.rows) {
    INFO("epoch " << r.epoch);
    const bool validated = r.epoch == 4 || r.epoch == 9 || r.epoch == 11;
    CHECK(std::isfinite(r.val_metric) == validated);
    CHECK(std::isfinite(r.val_loss) == validated);
  }
  const auto best = res.extra["best_epoch"].get<std::int64_t>();
  CHECK((best == 4 || best == 9 || best == 11));
  CHECK(res.val == res.rows[static_cast<std::size_t>(best)].val_metric);
  CHECK(res.extra["eval_every"] == 5);
  // metrics.csv keeps the gaps (NaN), and reads back for a resume.
  const auto logged = read_metrics_csv(out / "k5" / "metrics.csv");
  REQUIRE(logged.size() == 12);
  CHECK(std::isnan(logged[0].val_metric));
  CHECK(logged[4].val_metric == Approx(res.rows[4].val_metric).margin(1e-6));
  CHECK(res.rows[4].cpu_s > 0);
  CHECK(logged[4].cpu_s == Approx(res.rows[4].cpu_s).margin(1e-4));
  // The validated epochs' figures are those of a run that validates every epoch.
  s.o.eval_every = 1;
  const auto every = s.run(out / "k1", s.o.epochs);
  for (const std::int64_t e : {4, 9, 11})
    CHECK(every.rows[static_cast<std::size_t>(e)].val_metric ==
          res.rows[static_cast<std::size_t>(e)].val_metric);
}

TEST_CASE("a bad evaluation interval or mode is refused", "[train][selection][eval]") {
  Setup s;
  TempDir out;
  s.o.eval_every = 0;
  CHECK_THROWS_WITH(s.run(out / "bad", 2), Catch::Contains("evaluation interval 0"));
  CHECK_THROWS_AS(parse_eval_mode("exact"), InvalidArgument);
  CHECK(parse_eval_mode("sampled") == EvalMode::sampled);
}

TEST_CASE(
    "a recipe's loader niceness outside 0-19 or window below 1 is refused before anything "
    "runs",
    "[train][selection]") {
  Setup s;
  TempDir out;
  s.o.prefetch_nice = 20;
  CHECK_THROWS_WITH(s.run(out / "high", 2), Catch::Contains("prefetch_nice 20; expected 0-19"));
  s.o.prefetch_nice = -1;
  CHECK_THROWS_AS(s.run(out / "negative", 2), InvalidArgument);
  CHECK_FALSE(std::filesystem::exists(out / "high" / "metrics.csv"));
  s.o.prefetch_nice = 19;
  s.o.prefetch_depth = 0;
  CHECK_THROWS_WITH(s.run(out / "zero", 2), Catch::Contains("prefetch depth"));
  CHECK_FALSE(std::filesystem::exists(out / "zero" / "metrics.csv"));
}

TEST_CASE(
    "a recipe's prefetch window and priority are its training loader's, not its "
    "evaluation loaders'",
    "[train][selection]") {
  NodeClassificationOptions o;
  o.prefetch_depth = 64;
  const LoaderOptions train = training_loader_options(o, 0, "feat", "label");
  CHECK(train.prefetch_depth == 64);
  // Evaluation batches hold whole neighbourhoods: they keep the default window.
  const LoaderOptions eval = evaluation_loader_options(train, 4096);
  CHECK(eval.prefetch_depth == LoaderOptions{}.prefetch_depth);
  CHECK(eval.batch_size == 4096);
  CHECK_FALSE(eval.prefetch_next_epoch);
  // Only the training loader's threads yield to the training step (niceness, SCHED_BATCH):
  // nothing trains while the evaluation loaders' batches are waited for.
  CHECK(train.prefetch_nice == 19);
  CHECK(train.prefetch_sched_batch);
  CHECK(eval.prefetch_nice == 0);
  CHECK_FALSE(eval.prefetch_sched_batch);
  o.prefetch_sched_batch = false;
  CHECK_FALSE(training_loader_options(o, 0, "feat", "label").prefetch_sched_batch);
  // A shallower window, asked for to save memory, holds for them too.
  o.prefetch_depth = 2;
  CHECK(evaluation_loader_options(training_loader_options(o, 0, "feat", "label"), 4096)
            .prefetch_depth == 2);
}

TEST_CASE("a metrics.csv written before cpu_s still reads back, with cpu_s 0", "[train]") {
  TempDir dir;
  const auto path = dir.path() / "metrics.csv";
  {
    std::ofstream f(path);
    f << metrics_csv_header_v5 << "\n0,1.5,0.25,0.5,2.0,0.1,0.2,1.0,0.3,7,28,0.0,1.25,0.05\n";
  }
  const auto rows = read_metrics_csv(path);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].copy_s == Approx(0.05));
  CHECK(rows[0].remote_bytes == 28);
  CHECK(rows[0].cpu_s == 0);
  // A current file carries it.
  EpochRow r = rows[0];
  r.cpu_s = 3.25;
  {
    std::ofstream f(path);
    f << metrics_csv({r});
  }
  const auto again = read_metrics_csv(path);
  REQUIRE(again.size() == 1);
  CHECK(again[0].cpu_s == Approx(3.25));
  // Too few numbers for the header: a typed error naming the line.
  {
    std::ofstream f(path);
    f << metrics_csv_header << "\n0,1.5,0.25,0.5,2.0,0.1,0.2,1.0,0.3,7,28,0.0,1.25,0.05\n";
  }
  CHECK_THROWS_AS(read_metrics_csv(path), FormatError);
}

}  // namespace test_train_model_selection

// train_epochs: the one epoch loop of every training task. A task brings one training
// epoch and one validation; the loop brings what every task should have: resuming from the
// run folder, the evaluation interval, the metrics row with its remote-traffic columns,
// checkpoints, early stopping (patience) and best-epoch model selection, learned rows
// included. Before it, each task had a loop of its own, and only node classification
// selected its best epoch: the typed task reported its last epoch's model, 5 points under
// its best on a typed graph nobody had tuned on (docs/PERFORMANCE.md).
#pragma once

#include <torch/types.h>

#include <concepts>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "distgraph/core/timer.hpp"
#include "distgraph/core/trace.hpp"
#include "distgraph/tasks/recipe_options.hpp"
#include "distgraph/tasks/training_run.hpp"
#include "distgraph/train/checkpoint.hpp"
#include "distgraph/train/trainer.hpp"

namespace distgraph {

/// What train_epochs knows of a run besides its recipe and its trainer.
struct EpochLoopSetup {
  nlohmann::json identity;  ///< what a checkpoint must agree on to be resumed (run_identity)
  std::int32_t rank = 0;
  /// Validation nodes (or edges) over all trainers: 0 means no validation, so nothing to
  /// select or stop early on.
  std::int64_t num_val = 0;
  std::int64_t batches_per_epoch = 1;  ///< optimizer steps an epoch (for the patience)
  /// The metric the recipe asks for (automatic: the first epoch's), and the one to use if
  /// no epoch is left to train and it is still automatic.
  Metric metric = Metric::automatic, fallback_metric = Metric::accuracy;
};

/// What train_epochs leaves for the run's result.
struct EpochLoopOutcome {
  Metric metric = Metric::accuracy;  ///< what val (and the test) measure
  double val = 0;                    ///< the selected model's validation metric
  std::int64_t start = 0, done = 0;  ///< epochs done before this process, and in all
  double epoch_s_sum = 0;            ///< training time of this process's epochs
};

/// The learned rows of a task that has none: train_epochs' `learned` argument then
/// (detail::EmbeddingCheckpoints is the one of tasks with DistEmbeddings).
struct NoLearnedRows {
  nlohmann::json save(std::int64_t) { return nlohmann::json::object(); }
  void committed() {}
  void restore(const nlohmann::json&, const std::string&, std::int32_t) {}
  void adopt_stale(const std::filesystem::path&) {}
  bool save_best(std::int64_t, bool) { return true; }
  bool best_saved(CollectiveGroup*, std::chrono::milliseconds, std::int32_t) const { return true; }
  void restore_best(std::int32_t) {}
  void finish(bool) {}
};

namespace detail {

/// The best validation epoch so far: its model and optimizer state on every trainer (in
/// memory where this process trained it, else in rank 0's best.pt from before a resume).
struct BestEpoch {
  std::int64_t epoch = -1;
  double val = -1;
  std::string bytes;  ///< its checkpoint, when this process trained it
};

/// A batch's loss, and the outputs (nodes or pairs) it is the mean over.
struct BatchLoss {
  torch::Tensor loss;
  double count = 0;
};

/// One training epoch of a task with a loss of its own, EpochStats as
/// Trainer::train_epoch's: for each batch `loss_of(batch, acc, traffic)` computes the loss
/// (adding the batch's metric material to `acc`, and counting learned rows it pulls in
/// `traffic`), the dense step over the group follows, then `after_step()` (e.g. the sparse
/// step of learned rows). `metric` is what train_metric measures. Collective.
template <class TrainerT, class Loader, class LossOf, class AfterStep>
EpochStats train_epoch_with(TrainerT& trainer, Loader& loader, std::int64_t e, Metric metric,
                            LossOf&& loss_of, AfterStep&& after_step) {
  Stopwatch epoch_clock;
  const double cpu_start = process_cpu_seconds();
  EpochStats st;
  st.epoch = e;
  trainer.check_batch_count(loader.num_batches());
  trainer.model()->train();
  loader.begin_epoch(e);
  double loss_sum = 0, total = 0;
  MetricAccumulator acc;
  while (auto batch = loader.next()) {
    st.sample_s += batch->timings.sample_s;
    st.fetch_s += batch->timings.fetch_s;
    st.traffic += batch->timings.traffic;  // the epoch's own (the next one's may be early)
    Stopwatch clock;
    const BatchLoss b = loss_of(*batch, acc, st.traffic);
    const double reduce_s = trainer.step(b.loss);
    st.allreduce_s += reduce_s;
    after_step();
    loss_sum += b.loss.item<double>() * b.count;
    total += b.count;
    st.compute_s += clock.seconds() - reduce_s;
    ++st.num_batches;
    recycle_batch(loader, *batch);
  }
  std::vector<double> sums{loss_sum, total};
  if (trainer.group()) sums = all_reduce_sum(*trainer.group(), sums, trainer.collective_timeout());
  st.loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
  const EvalResult m = acc.reduce(trainer.group(), metric, trainer.collective_timeout());
  st.train_metric = m.value;
  st.metric = m.metric;
  st.epoch_s = epoch_clock.seconds();
  st.cpu_s = process_cpu_seconds() - cpu_start;
  return st;
}

/// An evaluation of a task with a forward of its own: `add_batch(batch, acc)` adds each
/// batch's metric material (in eval mode, no autograd); the metric over all trainers.
/// Collective.
template <class TrainerT, class Loader, class AddBatch>
EvalResult evaluate_with(TrainerT& trainer, Loader& loader, std::int64_t epoch, Metric metric,
                         AddBatch&& add_batch) {
  torch::NoGradGuard no_grad;
  trainer.model()->eval();
  loader.begin_epoch(epoch);
  MetricAccumulator acc;
  while (auto batch = loader.next()) {
    add_batch(*batch, acc);
    recycle_batch(loader, *batch);
  }
  trainer.model()->train();
  return acc.reduce(trainer.group(), metric, trainer.collective_timeout());
}

/// Every trainer's epoch traffic summed over the group: rows, bytes, cached rows.
inline std::vector<double> summed_traffic(const RemoteTraffic& t, CollectiveGroup* group,
                                          std::chrono::milliseconds timeout) {
  std::vector<double> v{static_cast<double>(t.rows), static_cast<double>(t.bytes),
                        static_cast<double>(t.cached_rows)};
  if (group != nullptr) v = all_reduce_sum(*group, v, timeout);
  return v;
}

/// The metrics row of epoch `st.epoch` with validation `v`.
inline EpochRow epoch_row(const EpochStats& st, const EvalResult& v,
                          const std::vector<double>& traffic) {
  return EpochRow{.epoch = st.epoch,
                  .loss = st.loss,
                  .train_metric = st.train_metric,
                  .val_metric = v.value,
                  .epoch_s = st.epoch_s,
                  .sample_s = st.sample_s,
                  .fetch_s = st.fetch_s,
                  .compute_s = st.compute_s,
                  .allreduce_s = st.allreduce_s,
                  .remote_rows = static_cast<std::int64_t>(traffic[0]),
                  .remote_bytes = static_cast<std::int64_t>(traffic[1]),
                  .cache_hit_rate = traffic[2] > 0 ? traffic[2] / (traffic[0] + traffic[2]) : 0.0,
                  .val_loss = v.loss,
                  .copy_s = st.copy_s,
                  .cpu_s = st.cpu_s};
}

/// Where a run starts: epoch 0, or with o.resume the checkpoint's (its model, optimizer,
/// learned rows and best epoch). A fresh run adopts the stale learned rows of a run it
/// writes over, to remove them later. Collective.
template <class TrainerT, class Learned>
BestEpoch start_run(TrainerT& trainer, Learned& learned, const RecipeOptions& o,
                    const EpochLoopSetup& s, RunResult& res) {
  BestEpoch best;
  if (o.resume) {
    CheckpointReader ckpt = resume_run(trainer, s.identity, o.out, s.rank, res);
    best.epoch = ckpt.meta().value("best_epoch", std::int64_t{-1});
    best.val = ckpt.meta().value("best_val", -1.0);
    learned.restore(ckpt.meta(), ckpt.path(), s.rank);
  } else if (s.rank == 0 && !o.out.empty()) {
    learned.adopt_stale(o.out / "checkpoint.pt");
  }
  if (s.rank == 0 && !o.out.empty()) std::filesystem::create_directories(o.out);
  return best;
}

/// After validating epoch `e`: a better metric than the best so far makes `e` the best
/// epoch, its state kept in memory, in best.pt (rank 0) and its learned rows on the
/// servers under a tag of their own. best.pt is written over before checkpoint.pt names
/// the new best epoch: select_best checks that the two agree.
template <class TrainerT, class Learned>
void keep_if_best(TrainerT& trainer, Learned& learned, const RecipeOptions& o,
                  const EpochLoopSetup& s, std::int64_t e, double val, BestEpoch& best) {
  if (!(val > best.val)) return;
  best.val = val;
  best.epoch = e;
  best.bytes = checkpoint_bytes(*trainer.model(), trainer.optimizer(),
                                {{"run", s.identity}, {"epochs_done", e + 1}, {"best_epoch", e}});
  if (s.rank != 0) return;
  if (!o.out.empty()) write_checkpoint_file(o.out / "best.pt", best.bytes);
  learned.save_best(e, /*named=*/!o.out.empty());
}

/// The run's model becomes the best epoch's, unless it is the one trained last or the
/// servers could not keep the best epoch's learned rows. Returns whether it did. Collective.
template <class TrainerT, class Learned>
bool select_best(TrainerT& trainer, Learned& learned, const RecipeOptions& o,
                 const EpochLoopSetup& s, const BestEpoch& best, std::int64_t last) {
  if (best.epoch < 0 || best.epoch == last) return false;
  if (!learned.best_saved(trainer.group(), trainer.collective_timeout(), s.rank)) return false;
  if (best.bytes.empty()) {  // from before a resume: rank 0's best.pt, sent to every trainer
    CheckpointReader file = read_checkpoint_for(o.out / "best.pt", s.identity, s.rank,
                                                trainer.group(), trainer.collective_timeout());
    // A run that stopped between writing best.pt and the checkpoint naming it left a later
    // epoch's model there: the best epoch's is gone, so the last one is the model.
    if (file.meta().value("best_epoch", std::int64_t{-1}) != best.epoch) {
      if (s.rank == 0)
        std::fprintf(stderr,
                     "warning: %s holds another epoch than the best (%lld); the run reports "
                     "its last epoch's model\n",
                     (o.out / "best.pt").c_str(), static_cast<long long>(best.epoch));
      return false;
    }
    file.load(*trainer.model(), trainer.optimizer());
  } else {
    CheckpointReader(best.bytes, "best epoch " + std::to_string(best.epoch))
        .load(*trainer.model(), trainer.optimizer());
  }
  learned.restore_best(s.rank);
  return true;
}

}  // namespace detail

/// Trains epochs o.resume's checkpoint (or 0) to o.epochs of a task: `train_epoch(e,
/// metric)` trains epoch e and returns its EpochStats (loss and train metric over all
/// trainers, the times and traffic this trainer's), `validate(e, metric)` evaluates the
/// validation set over all trainers (an empty one scores 0). After every epoch rank 0 publishes its
/// row and a checkpoint in o.out (with `learned`'s rows: detail::EmbeddingCheckpoints); validation
/// runs every o.eval_every-th epoch and after the last. With a validation set, the run
/// stops once its best epoch is o.patience epochs behind (resolve_patience), and the
/// trainer ends with the best epoch's model (res.extra: best_epoch, stopped_early,
/// patience). Collective over the trainer's group.
template <class TrainerT, class TrainEpoch, class Validate, class Learned>
requires std::invocable<TrainEpoch&, std::int64_t, Metric> &&
    std::invocable<Validate&, std::int64_t, Metric>
        EpochLoopOutcome train_epochs(TrainerT& trainer, TrainEpoch&& train_epoch,
                                      Validate&& validate, Learned& learned, const RecipeOptions& o,
                                      const EpochLoopSetup& s, RunResult& res,
                                      const EpochCallback& on_epoch) {
  detail::BestEpoch best = detail::start_run(trainer, learned, o, s, res);
  EpochLoopOutcome out{.metric = s.metric, .start = res.resumed_from, .done = res.resumed_from};
  const bool select = s.num_val > 0;
  // Every trainer has as many batches (an even split) and sees the same validation
  // metric (reduced over the group), so all stop after the same epoch.
  const std::int64_t patience = select ? resolve_patience(o.patience, s.batches_per_epoch) : 0;
  res.extra["patience"] = patience;
  bool stopped_early = false;
  const EvalResult none{.value = std::numeric_limits<double>::quiet_NaN(),
                        .loss = std::numeric_limits<double>::quiet_NaN()};
  for (std::int64_t e = out.start; e < o.epochs; ++e) {
    // Checked before the epoch, so a resumed run stops where the uninterrupted one did.
    if (patience > 0 && best.epoch >= 0 && (e - 1) - best.epoch >= patience) {
      stopped_early = true;
      break;
    }
    torch::manual_seed(detail::epoch_torch_seed(o.seed, e, s.rank));
    const EpochStats st = train_epoch(e, out.metric);
    // The epoch's batches' own traffic: the loader makes the next epoch's first batches
    // before this one ends, so a count between the epoch's ends would mix epochs.
    const auto traffic =
        detail::summed_traffic(st.traffic, trainer.group(), trainer.collective_timeout());
    out.metric = st.metric;
    EvalResult v = none;
    v.metric = out.metric;
    if ((e + 1) % o.eval_every == 0 || e + 1 == o.epochs) {
      std::optional<trace::Span> span;
      if (select) {
        span.emplace("validate");
        span->arg("epoch", e);
      }
      v = validate(e, out.metric);
      out.val = v.value;
    }
    out.epoch_s_sum += st.epoch_s;
    if (select) detail::keep_if_best(trainer, learned, o, s, e, v.value, best);
    if (s.rank == 0) {
      const auto extra_meta = [&] {
        nlohmann::json meta = learned.save(e + 1);
        meta["best_epoch"] = best.epoch;
        meta["best_val"] = best.val;
        return meta;
      };
      detail::publish_epoch(res, detail::epoch_row(st, v, traffic), out.metric, o.out, trainer,
                            s.identity, extra_meta, on_epoch);
      if (!o.out.empty()) learned.committed();
    }
    out.done = e + 1;
  }
  if (out.done == out.start) {  // nothing left to train: report the checkpoint's model
    if (out.metric == Metric::automatic) out.metric = s.fallback_metric;
    out.val = validate(o.epochs, out.metric).value;
  }
  const bool selected = select && detail::select_best(trainer, learned, o, s, best, out.done - 1);
  if (selected) out.val = best.val;
  if (s.rank == 0) learned.finish(/*keep_best=*/!o.out.empty());
  res.extra["best_epoch"] = selected ? best.epoch : out.done - 1;
  res.extra["stopped_early"] = stopped_early;
  return out;
}

}  // namespace distgraph

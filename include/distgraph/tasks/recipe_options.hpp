// RecipeOptions: the fields every training task's recipe shares (node classification,
// typed node classification, link prediction), checked in one place, so that every task
// gets every feature of the common epoch loop (tasks/epoch_loop.hpp): patience, best-epoch
// selection, the evaluation interval, the run folder and resuming from it.
#pragma once

#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/loaders/loader_options.hpp"
#include "distgraph/train/metrics.hpp"

namespace distgraph {

/// What every task's recipe has. The defaults are node classification's; a task whose
/// recipe differs sets its own in its options' constructor.
struct RecipeOptions {
  /// The most epochs a run trains.
  std::int64_t epochs = 200;
  /// Early stopping: the run ends once its best validation epoch is `patience` epochs
  /// behind (the selected model is that epoch's either way). -1: patience_for_steps worth
  /// of optimizer steps, at least min_patience_epochs (resolve_patience); 0: never. No
  /// effect without a validation set.
  std::int64_t patience = -1;
  std::int64_t hidden = 64;
  std::vector<std::int64_t> fanouts{10, 25};  ///< one per layer, input layer first
  std::int64_t batch_size = 1000;             ///< training seeds (or edges) per trainer and batch
  double lr = 0.01;
  double weight_decay = 5e-4;
  double dropout = 0.5;               ///< after each hidden layer
  double input_dropout = 0.5;         ///< on the input features
  Metric metric = Metric::automatic;  ///< ROC-AUC for two classes, else accuracy
  std::uint64_t seed = 0;             ///< model init, shuffles, sampling and dropout
  torch::Device device = torch::kCPU;
  unsigned num_prefetch_threads = 1;  ///< per loader; 0 = sample inside next()
  /// The training loader's LoaderOptions::prefetch_depth: batches made ahead, >= 1.
  std::int64_t prefetch_depth = 4;
  /// The training loader's LoaderOptions::prefetch_nice: its threads yield the core to
  /// the training step where both want it (evaluation loaders keep 0). Use 0 where other
  /// busy work shares the computer.
  int prefetch_nice = 19;
  /// The training loader's LoaderOptions::prefetch_sched_batch: its threads never preempt
  /// the training step when they wake (evaluation loaders keep the policy of the thread that
  /// runs the recipe).
  bool prefetch_sched_batch = true;
  std::int64_t eval_batch_size = 4096;  ///< validation and test: destinations per batch
  /// Validate after every `eval_every`-th epoch and after the last; other epochs log no
  /// validation metric (NaN) and cannot be selected.
  std::int64_t eval_every = 1;
  std::string feature = "feat";
  /// Where rank 0 writes metrics.csv, curves.svg, result.json, checkpoint.pt and best.pt
  /// after every epoch; empty: nothing is written.
  std::filesystem::path out;
  /// Continue from out/checkpoint.pt (rank 0 reads it; the bytes reach every trainer
  /// through the group, so only rank 0 needs to see `out`).
  bool resume = false;
  /// Bounds every collective (a dead trainer stops the others within it).
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(5)};
};

/// Optimizer steps without a better validation metric after which a run stops, by default.
inline constexpr std::int64_t patience_for_steps = 100;
/// The least default patience in epochs. A validation metric that climbs slowly through
/// noisy plateaus needs it: Tolokers (6 batches an epoch) stopped at epochs 51-103 with 17
/// epochs of patience, 1.4 points under REFERENCE.md; with 50, seed 0 ran to its best
/// epoch 135 and came within 0.3 (PERFORMANCE.md, "The default recipe").
inline constexpr std::int64_t min_patience_epochs = 50;

/// The patience in epochs for `patience` (RecipeOptions::patience) with
/// `batches_per_epoch` optimizer steps an epoch; 0: never stop early.
inline std::int64_t resolve_patience(std::int64_t patience, std::int64_t batches_per_epoch) {
  if (patience >= 0) return patience;
  const std::int64_t steps = std::max<std::int64_t>(batches_per_epoch, 1);
  return std::max(min_patience_epochs, (patience_for_steps + steps - 1) / steps);
}

/// Throws InvalidArgument, naming the field, for a recipe outside its ranges (the
/// fields every task has; each task checks its own after).
inline void check_recipe(const RecipeOptions& o) {
  const auto positive = [](std::int64_t v, const char* what) {
    if (v < 1)
      throw InvalidArgument(std::string("train: ") + what + " " + std::to_string(v) +
                            "; expected >= 1");
  };
  positive(o.epochs, "epochs");
  if (o.patience < -1)
    throw InvalidArgument("train: patience " + std::to_string(o.patience) +
                          "; expected >= 0 epochs (0: never stop early) or -1 (automatic)");
  positive(o.hidden, "hidden");
  positive(o.batch_size, "batch size");
  positive(o.eval_batch_size, "evaluation batch size");
  positive(o.eval_every, "evaluation interval");
  positive(o.prefetch_depth, "prefetch depth");
  if (o.fanouts.empty()) throw InvalidArgument("train: no fanouts; expected one per layer");
  for (auto f : o.fanouts)
    if (f == 0 || f < -1)
      throw InvalidArgument("train: fanout " + std::to_string(f) + "; expected >= 1 or -1 (all)");
  check_nice(o.prefetch_nice, "train: prefetch_nice");
  if (!(o.lr > 0)) throw InvalidArgument("train: learning rate must be > 0");
  if (!(o.weight_decay >= 0)) throw InvalidArgument("train: weight decay must be >= 0");
  if (!(o.dropout >= 0 && o.dropout < 1) || !(o.input_dropout >= 0 && o.input_dropout < 1))
    throw InvalidArgument("train: dropout must be in [0, 1)");
}

/// The training loader's options a recipe implies: shuffled batches of o.batch_size seeds
/// (or edges), made ahead by o.num_prefetch_threads across epochs up to the last, with
/// node data `feature` ("" for none: a learned input) and `label` ("" for none).
inline LoaderOptions training_loader_options(const RecipeOptions& o, std::int32_t rank,
                                             std::string feature, std::string label) {
  return LoaderOptions{.batch_size = o.batch_size,
                       .shuffle = true,
                       .seed = o.seed,
                       .rank = rank,
                       .num_prefetch_threads = o.num_prefetch_threads,
                       .prefetch_depth = o.prefetch_depth,
                       .prefetch_nice = o.prefetch_nice,
                       .prefetch_sched_batch = o.prefetch_sched_batch,
                       .prefetch_next_epoch = true,
                       .last_epoch = o.epochs - 1,
                       .feature = std::move(feature),
                       .label = std::move(label)};
}

/// An evaluation loader's options from the training loader's `train`: `batch_size`
/// destinations (or edges) per batch, in order, only for the epoch asked (evaluations are
/// not every epoch), threads at the process's priority (the trainer waits for these
/// batches: there is no training step to yield to).
inline LoaderOptions evaluation_loader_options(LoaderOptions train, std::int64_t batch_size) {
  train.batch_size = batch_size;
  train.shuffle = false;
  train.prefetch_next_epoch = false;
  train.prefetch_nice = 0;
  train.prefetch_sched_batch = false;
  // A deeper training window (--prefetch-depth) is not theirs: their batches are the
  // largest (whole neighbourhoods). A shallower one, asked for to save memory, is.
  train.prefetch_depth = std::min(train.prefetch_depth, LoaderOptions{}.prefetch_depth);
  return train;
}

}  // namespace distgraph

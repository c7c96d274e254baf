// What `distgraph train` prints and writes besides the recipe's own files: each epoch's
// line, the result, and with --save-embeddings the selected model's layer-wise inference
// (as infer_output.hpp writes it for `distgraph infer`).
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "distgraph/tasks/node_classification.hpp"
#include "distgraph/tasks/run_log.hpp"
#include "distgraph/tasks/training_run.hpp"
#include "distgraph/train/allreduce.hpp"
#include "infer_output.hpp"

namespace distgraph::cli {

/// One epoch as the JSON line --json prints.
inline nlohmann::json epoch_json(const EpochRow& r, const nlohmann::json& metric) {
  return {{"epoch", r.epoch},
          {"loss", r.loss},
          {"train_metric", r.train_metric},
          {"val_metric", r.val_metric},
          {"metric", metric},
          {"epoch_s", r.epoch_s},
          {"sample_s", r.sample_s},
          {"fetch_s", r.fetch_s},
          {"compute_s", r.compute_s},
          {"allreduce_s", r.allreduce_s},
          {"remote_rows", r.remote_rows},
          {"remote_bytes", r.remote_bytes},
          {"cache_hit_rate", r.cache_hit_rate},
          {"val_loss", r.val_loss},
          {"copy_s", r.copy_s},
          {"cpu_s", r.cpu_s}};
}

/// Prints each epoch: a JSON line with --json, one updating line on a terminal, a log
/// line otherwise.
inline EpochCallback epoch_printer(bool json, std::int64_t epochs) {
  const bool tty = !json && ::isatty(STDOUT_FILENO) == 1;
  return [json, epochs, tty](const EpochRow& r, Metric m) {
    if (json) {
      std::printf("%s\n", epoch_json(r, to_string(m)).dump().c_str());
    } else {
      char val[32] = "-";  // an epoch without validation (--eval-every)
      if (std::isfinite(r.val_metric)) std::snprintf(val, sizeof val, "%.4f", r.val_metric);
      std::printf(
          "%sepoch %lld/%lld  loss %.4f  train %s %.4f  val %s  %.3f s "
          "(sample %.3f, fetch %.3f, compute %.3f, all-reduce %.3f; remote %.1f MB, "
          "cache hits %.0f%%)%s",
          tty ? "\r\033[K" : "", static_cast<long long>(r.epoch + 1),
          static_cast<long long>(epochs), r.loss, to_string(m), r.train_metric, val, r.epoch_s,
          r.sample_s, r.fetch_s, r.compute_s, r.allreduce_s,
          static_cast<double>(r.remote_bytes) / 1e6, 100 * r.cache_hit_rate,
          tty && r.epoch + 1 < epochs ? "" : "\n");
    }
    std::fflush(stdout);
  };
}

/// Prints result.json's object: as one JSON line with --json, else as a sentence (and the
/// macro-F1 line of a typed run).
inline void print_train_result(const nlohmann::json& result, bool json) {
  if (json) {
    std::printf("%s\n", result.dump().c_str());
  } else {
    std::string selected;
    if (result.contains("best_epoch"))
      selected = " of the model of epoch " +
                 std::to_string(result["best_epoch"].get<long long>() + 1) + " (best validation)";
    // A terminal's updating epoch line ends only at the last of --epochs.
    if (result.value("stopped_early", false) && ::isatty(STDOUT_FILENO) == 1) std::printf("\n");
    if (result.value("stopped_early", false))
      selected += ", stopped early (no better validation in " +
                  std::to_string(result.value("patience", 0LL)) + " epochs)";
    std::printf(
        "test %s %.4f (validation %.4f)%s after %lld epochs, %.3f s per epoch; %s, %lld "
        "part(s), %lld trainer(s), seed %llu\n",
        result["metric"].get<std::string>().c_str(), result["test"].get<double>(),
        result["val"].get<double>(), selected.c_str(), result["epochs"].get<long long>(),
        result["epoch_s_mean"].get<double>(), result["mode"].get<std::string>().c_str(),
        result["parts"].get<long long>(), result["trainers"].get<long long>(),
        result["seed"].get<unsigned long long>());
    if (result.contains("test_macro_f1"))
      std::printf("test macro-F1 %.4f (%s on '%s')\n", result["test_macro_f1"].get<double>(),
                  result.value("model", std::string()).c_str(),
                  result.value("target_ntype", std::string()).c_str());
  }
  std::fflush(stdout);
}

/// A launched run's output, printed by the launching command once the trainers are done:
/// with --json the epochs' lines (read back from `out`/metrics.csv), then `result`.
inline void print_launched_result(const std::filesystem::path& out, const nlohmann::json& result,
                                  bool json) {
  if (json) {
    for (const auto& r : read_metrics_csv(out / "metrics.csv"))
      std::printf("%s\n", epoch_json(r, result["metric"]).dump().c_str());
  }
  print_train_result(result, json);
}

/// `distgraph train --save-embeddings`: the selected model's layer-wise inference over
/// every node into the run folder (embeddings.npy, predictions.npy, infer.json), as
/// `distgraph infer --checkpoint RUN` writes them. Collective.
template <class Graph>
void save_embeddings(const Graph& g, NodeClassificationResult& res,
                     const NodeClassificationOptions& recipe, const TrainerGroups& groups) {
  const std::int32_t rank = groups.control ? groups.control->getRank() : 0;
  res.model->to(torch::kCPU);
  const std::filesystem::path best = recipe.out / "best.pt";
  const nlohmann::json about = {
      {"checkpoint",
       (std::filesystem::exists(best) ? best : recipe.out / "checkpoint.pt").string()},
      {"model", distgraph::detail::model_identity(recipe.model)},
      {"epochs_done", res.epochs},
      {"best_epoch", res.extra.value("best_epoch", std::int64_t{-1})},
      {"mode", res.mode},
      {"parts", res.parts},
      {"trainers", res.trainers}};
  infer_on(g, res.model, Outputs{}, recipe.out, rank, 1024, about);
}

}  // namespace distgraph::cli

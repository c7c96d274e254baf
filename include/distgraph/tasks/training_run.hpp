// Run management shared by every training task (node classification, typed node
// classification, link prediction): the run's result and result.json, the run folder's
// log and checkpoints (resume, the servers' embedding checkpoints) and the per-epoch seeds
// (infer/trained_node_model.hpp reads the folder's model file back).
#pragma once

#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/error.hpp"
#include "distgraph/distributed/kv_client.hpp"
#include "distgraph/tasks/run_log.hpp"
#include "distgraph/train/allreduce.hpp"
#include "distgraph/train/checkpoint.hpp"
#include "distgraph/train/metrics.hpp"

namespace distgraph {

/// What a training run reached, whatever its task (the content of result.json, plus the
/// per-epoch rows).
struct RunResult {
  Metric metric = Metric::accuracy;
  double test = 0, val = 0;       ///< fractions in [0, 1]
  std::int64_t epochs = 0;        ///< epochs trained in all, resumed ones included
  std::int64_t resumed_from = 0;  ///< epochs the checkpoint had done (0: a fresh run)
  double epoch_s_mean = 0;        ///< mean training time per epoch of this process's epochs
  std::vector<EpochRow> rows;     ///< every epoch, resumed ones included (rank 0)
  std::int64_t num_classes = 0, feat_dim = 0;
  std::string mode;  ///< "standalone" (no servers) or "distributed"
  std::int64_t parts = 0, trainers = 0;
  std::uint64_t seed = 0;
  /// Task-specific keys result.json carries besides the common ones (e.g. typed runs'
  /// "test_macro_f1").
  nlohmann::json extra = nlohmann::json::object();
};

/// Called on rank 0 after each epoch with its row and the metric it reports.
using EpochCallback = std::function<void(const EpochRow&, Metric)>;

/// result.json's object for `r` (the keys users' scripts read; never rename one).
inline nlohmann::json result_json(const RunResult& r) {
  nlohmann::json j = {{"metric", to_string(r.metric)},
                      {"test", r.test},
                      {"val", r.val},
                      {"epochs", r.epochs},
                      {"epoch_s_mean", r.epoch_s_mean},
                      {"mode", r.mode},
                      {"parts", r.parts},
                      {"trainers", r.trainers},
                      {"seed", r.seed}};
  j.update(r.extra);
  return j;
}

namespace detail {

/// A BatchSource over an optional loader: a trainer whose share of a node set is empty
/// still takes part in the collective evaluation, with no batches.
template <class Loader>
class MaybeLoader {
 public:
  MaybeLoader() = default;
  explicit MaybeLoader(Loader l) : loader_(std::move(l)) {}
  void begin_epoch(std::int64_t e) {
    if (loader_) loader_->begin_epoch(e);
  }
  std::int64_t num_batches() const { return loader_ ? loader_->num_batches() : 0; }
  auto next() -> decltype(std::declval<Loader&>().next()) {
    if (loader_) return loader_->next();
    return std::nullopt;
  }

 private:
  std::optional<Loader> loader_;
};

/// The learned rows of a run (its DistEmbeddings), kept by the servers: after each epoch
/// rank 0 asks every partition's server to save its own rows and SparseAdam state under a
/// new tag (KVClient::save_tensors); checkpoint.pt records the tag; the previous tag is
/// removed only once the new checkpoint.pt is in place, so a crash at any point leaves a
/// checkpoint.pt whose tag exists. The best validation epoch's rows are saved under a tag
/// of their own, so that model selection (tasks/epoch_loop.hpp) can restore them with the
/// model. Every method is rank 0's unless it says it is collective.
template <class Embedding>
class EmbeddingCheckpoints {
 public:
  static constexpr const char* meta_key = "embedding_checkpoint";
  static constexpr const char* best_key = "embedding_best";
  static constexpr const char* best_ok_key = "embedding_best_kept";

  explicit EmbeddingCheckpoints(std::vector<Embedding> embeddings) : embs_(std::move(embeddings)) {
    std::random_device rd;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%08x%08x", rd(), rd());
    token_ = hex;
  }

  bool empty() const noexcept { return embs_.empty(); }

  /// Saves under a tag for `epochs_done`; returns the meta naming it and the best epoch's
  /// rows ({} without an embedding).
  nlohmann::json save(std::int64_t epochs_done) {
    if (empty()) return nlohmann::json::object();
    next_ = "run-" + token_ + "-epoch-" + std::to_string(epochs_done);
    save_tag(next_);
    nlohmann::json meta = {{meta_key, next_}, {best_ok_key, best_ok_}};
    if (!best_.empty()) meta[best_key] = best_;
    return meta;
  }
  /// checkpoint.pt now names the latest save: the one before it can go, and so can best
  /// rows it no longer names and an earlier run's that this one wrote over.
  void committed() {
    if (!prev_.empty() && prev_ != next_) remove_quietly(prev_);
    prev_ = next_;
    remove_retired();
  }
  /// A resumed run, collective: rank 0 loads what `meta` names (CheckpointError when it
  /// names nothing though this run learns embeddings) while the others wait.
  void restore(const nlohmann::json& meta, const std::string& path, std::int32_t rank) {
    if (empty()) return;
    if (rank == 0) {
      const std::string tag = meta.value(meta_key, std::string());
      if (tag.empty())
        throw CheckpointError(
            path, "names no saved embedding; this run learns '" + names().front() + "'");
      load_tag(tag);
      prev_ = tag;
      best_ = meta.value(best_key, std::string());
      best_ok_ = meta.value(best_ok_key, true);
    }
    barrier("distgraph:resume " + names().front());
  }
  /// A fresh run writing over an earlier run's checkpoint.pt: that run's saved rows are
  /// removed once this run's first checkpoint is in place (if they can be found).
  void adopt_stale(const std::filesystem::path& checkpoint) {
    if (empty() || !std::filesystem::exists(checkpoint)) return;
    try {
      const auto meta =
          CheckpointReader(read_checkpoint_file(checkpoint), checkpoint.string()).meta();
      prev_ = meta.value(meta_key, std::string());
      if (const auto best = meta.value(best_key, std::string()); !best.empty())
        retired_.push_back(best);
    } catch (const std::exception&) {
      // unreadable: nothing to clean up after
    }
  }

  /// Best epoch `epoch`: its rows under a tag of their own (the previous best's stay
  /// until checkpoint.pt no longer names them: a crash in between leaves the pair it names
  /// intact). False, with a warning the first time, where the servers cannot save (they
  /// have no checkpoint folder): the run then reports its last epoch (best_saved), and so
  /// does a resume of it (the checkpoint records it).
  /// Without a checkpoint (`named` false) nothing names the previous best's rows: they go
  /// at once.
  bool save_best(std::int64_t epoch, bool named) {
    if (empty()) return true;
    if (!best_ok_) return false;
    try {
      const std::string tag = "run-" + token_ + "-best-" + std::to_string(epoch);
      save_tag(tag);
      if (!best_.empty()) retired_.push_back(best_);
      best_ = tag;
      if (!named) remove_retired();
    } catch (const std::exception& e) {
      best_ok_ = false;
      if (!best_.empty()) retired_.push_back(std::exchange(best_, std::string()));
      std::fprintf(stderr,
                   "warning: the servers could not keep the best epoch's learned rows (%s); "
                   "the run reports its last epoch's model\n",
                   e.what());
    }
    return best_ok_;
  }
  /// Collective: whether rank 0 holds the best epoch's rows (true without embeddings); the
  /// other ranks know nothing of them and agree with rank 0.
  bool best_saved(CollectiveGroup* group, std::chrono::milliseconds timeout,
                  std::int32_t rank) const {
    if (empty()) return true;
    std::int64_t ok = rank != 0 || (best_ok_ && !best_.empty()) ? 1 : 0;
    if (group != nullptr) ok = all_reduce_min_max(*group, ok, timeout).first;
    return ok == 1;
  }
  /// Collective: rank 0 loads the best epoch's rows back while the others wait.
  void restore_best(std::int32_t rank) {
    if (empty()) return;
    if (rank == 0) load_tag(best_);
    barrier("distgraph:best rows " + names().front());
  }
  /// The run is over: retired best rows go, and this run's too unless `keep_best`
  /// (checkpoint.pt names them, for a resume).
  void finish(bool keep_best) {
    if (!keep_best && !best_.empty()) retired_.push_back(std::exchange(best_, std::string()));
    remove_retired();
  }

 private:
  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const auto& e : embs_) n.push_back(e.name());
    return n;
  }
  auto& client() const { return embs_.front().table().client(); }
  void save_tag(const std::string& tag) { client().save_tensors(tag, names(), true); }
  void load_tag(const std::string& tag) { client().load_tensors(tag, names(), true); }
  void barrier(const std::string& name) { client().barrier(name); }
  void remove_quietly(const std::string& tag) {
    try {
      client().remove_checkpoint(tag);
    } catch (const std::exception& e) {
      // Stale files cost disk, not correctness: training goes on.
      std::fprintf(stderr, "warning: could not remove embedding checkpoint '%s': %s\n", tag.c_str(),
                   e.what());
    }
  }

  void remove_retired() {
    for (const auto& tag : retired_)
      if (tag != best_) remove_quietly(tag);
    retired_.clear();
  }

  std::vector<Embedding> embs_;
  std::string token_, next_, prev_, best_;
  std::vector<std::string> retired_;  ///< best rows nothing will name once committed
  bool best_ok_ = true;
};

/// Rank 0 reads the checkpoint at `path`; its bytes reach every trainer of `group`; each
/// checks that it was written for `identity` (CheckpointError naming the first field that
/// differs). Collective.
inline CheckpointReader read_checkpoint_for(const std::filesystem::path& path,
                                            const nlohmann::json& identity, std::int32_t rank,
                                            CollectiveGroup* group,
                                            std::chrono::milliseconds timeout) {
  std::string bytes;
  if (rank == 0) bytes = read_checkpoint_file(path);
  if (group != nullptr) bytes = broadcast_bytes(*group, std::move(bytes), 0, timeout);
  CheckpointReader ckpt(bytes, path.string());
  const auto& meta = ckpt.meta();
  const auto check = [&](const std::string& key, const nlohmann::json& want) {
    const auto have =
        meta.contains("run") ? meta["run"].value(key, nlohmann::json()) : nlohmann::json();
    if (have != want)
      throw CheckpointError(path.string(), "written for " + key + " = " + have.dump() +
                                               "; this run has " + want.dump() +
                                               " (another model, dataset or recipe)");
  };
  // The task and the model first: another model's checkpoint differs in its sizes too,
  // and "model" is what the user should read.
  for (const char* key : {"task", "model"})
    if (identity.contains(key)) check(key, identity[key]);
  for (const auto& [key, want] : identity.items()) check(key, want);
  return ckpt;
}

/// The rows of `out`/metrics.csv before epoch `start` (a resumed run's history).
inline std::vector<EpochRow> logged_rows(const std::filesystem::path& out, std::int64_t start) {
  std::vector<EpochRow> rows;
  if (std::filesystem::exists(out / "metrics.csv")) rows = read_metrics_csv(out / "metrics.csv");
  std::erase_if(rows, [&](const EpochRow& r) { return r.epoch >= start; });
  return rows;
}

/// What a checkpoint of any task must agree on to be resumed: the task, the graph's size,
/// the input width and seed, and the task's `model` keys (the model's name and shape:
/// model, aggregator, num_layers, hidden, and whatever else the task records).
template <class Graph>
nlohmann::json run_identity(const char* task, const Graph& g, std::int64_t in_feats,
                            std::uint64_t seed, const nlohmann::json& model) {
  nlohmann::json id = {{"task", task},
                       {"in_feats", in_feats},
                       {"num_nodes", g.num_nodes()},
                       {"num_edges", g.num_edges()},
                       {"seed", seed}};
  id.update(model);
  return id;
}

/// Resumes `trainer` from out/checkpoint.pt (see read_checkpoint_for): loads the model
/// and optimizer state, sets res.resumed_from and, on rank 0, the logged rows before it.
/// Returns the reader for the task's extra tensors. Collective.
template <class TrainerT>
CheckpointReader resume_run(TrainerT& trainer, const nlohmann::json& identity,
                            const std::filesystem::path& out, std::int32_t rank, RunResult& res) {
  CheckpointReader ckpt = read_checkpoint_for(out / "checkpoint.pt", identity, rank,
                                              trainer.group(), trainer.collective_timeout());
  ckpt.load(*trainer.model(), trainer.optimizer());
  res.resumed_from = ckpt.meta().value("epochs_done", std::int64_t{0});
  if (rank == 0) res.rows = logged_rows(out, res.resumed_from);
  return ckpt;
}

/// Rank 0's bookkeeping after an epoch: the row joins the log; metrics.csv, curves.svg
/// and the checkpoint are published in `out` when it is set, the checkpoint's meta
/// extended by `extra_meta()` (state saved elsewhere first, e.g. by the servers); then
/// the callback hears of it.
template <class TrainerT, class ExtraMetaFn>
void publish_epoch(RunResult& res, const EpochRow& row, Metric metric,
                   const std::filesystem::path& out, TrainerT& trainer,
                   const nlohmann::json& identity, ExtraMetaFn&& extra_meta,
                   const EpochCallback& on_epoch) {
  res.rows.push_back(row);
  if (!out.empty()) {
    write_run_log(out, res.rows, to_string(metric));
    nlohmann::json meta = {{"run", identity}, {"epochs_done", row.epoch + 1}};
    meta.update(extra_meta());
    write_checkpoint_file(out / "checkpoint.pt",
                          checkpoint_bytes(*trainer.model(), trainer.optimizer(), meta));
  }
  if (on_epoch) on_epoch(row, metric);
}

/// Fills in the run-wide fields of `res` (epochs: `done` in all, of which this process
/// trained those from `start`; their mean epoch time; mode, partitions, trainers, seed);
/// rank 0 publishes result.json in o.out.
template <class Graph, class Options>
void finish_result(RunResult& res, const Graph& g, const Options& o, std::int64_t start,
                   std::int64_t done, double epoch_s_sum, std::int32_t rank, std::int32_t world) {
  res.epochs = done;
  const std::int64_t ran = std::max<std::int64_t>(done - start, 0);
  res.epoch_s_mean = ran > 0 ? epoch_s_sum / static_cast<double>(ran) : 0.0;
  res.mode = g.client().layout().machine_id < 0 ? "standalone" : "distributed";
  res.parts = g.book().num_partitions();
  res.trainers = world;
  res.seed = o.seed;
  if (rank == 0 && !o.out.empty()) write_result(o.out, result_json(res));
}

/// The seed of torch's generator for (seed, epoch, rank): reseeding at every epoch makes
/// an epoch's dropout masks depend on nothing before it, so a resumed run repeats them.
inline std::uint64_t epoch_torch_seed(std::uint64_t seed, std::int64_t epoch, std::int32_t rank) {
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ULL +
                    static_cast<std::uint64_t>(epoch) * 0xbf58476d1ce4e5b9ULL +
                    static_cast<std::uint64_t>(rank) * 0x94d049bb133111ebULL + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) >> 1;  // torch::manual_seed keeps it as a signed value
}

}  // namespace detail

}  // namespace distgraph

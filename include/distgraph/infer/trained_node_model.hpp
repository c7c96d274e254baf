// TrainedNodeModel: a node-classification run's model rebuilt from its checkpoint, for
// inference (`distgraph infer`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "distgraph/nn/node_model.hpp"
#include "distgraph/train/checkpoint.hpp"

namespace distgraph {

/// A trained model and the run that trained it.
struct TrainedNodeModel {
  NodeModel model{nullptr};
  /// The checkpoint's run identity: task, model, aggregator, num_layers, hidden, in_feats,
  /// num_classes, heads (GAT), embedding_dim, num_nodes, num_edges, seed.
  nlohmann::json run;
  std::filesystem::path path;  ///< the checkpoint file it was read from
  std::int64_t epochs_done = 0;
  std::int64_t best_epoch = -1;  ///< the selected epoch (best.pt), -1 when not recorded
};

/// The checkpoint that holds run folder `run_dir`'s model: best.pt (the epoch model
/// selection chose) when present, else checkpoint.pt (the last epoch). Throws
/// CheckpointError naming both when neither exists.
inline std::filesystem::path run_checkpoint(const std::filesystem::path& run_dir) {
  for (const char* name : {"best.pt", "checkpoint.pt"})
    if (std::filesystem::is_regular_file(run_dir / name)) return run_dir / name;
  throw CheckpointError((run_dir / "checkpoint.pt").string(),
                        "not found, nor best.pt beside it; expected the folder of a "
                        "`distgraph train` run");
}

/// The model of node-classification checkpoint `path`, rebuilt from its run identity
/// (model, layers, widths, aggregator, heads) with its parameters loaded; in eval mode,
/// on the CPU. Throws CheckpointError when the file is missing or unreadable, was written
/// by another task, names an unknown model, or its model learned its input as an embedding
/// (whose rows the servers kept, not the checkpoint).
inline TrainedNodeModel load_trained_node_model(const std::filesystem::path& path) {
  CheckpointReader ckpt(read_checkpoint_file(path), path.string());
  const auto& meta = ckpt.meta();
  if (!meta.contains("run") || !meta["run"].is_object())
    throw CheckpointError(path.string(), "no run identity; expected a node-classification run's");
  TrainedNodeModel t;
  t.run = meta["run"];
  t.path = path;
  t.epochs_done = meta.value("epochs_done", std::int64_t{0});
  t.best_epoch = meta.value("best_epoch", std::int64_t{-1});
  const auto field = [&](const char* key) -> std::int64_t {
    if (!t.run.contains(key) || !t.run[key].is_number_integer())
      throw CheckpointError(path.string(), std::string("run identity has no integer '") + key +
                                               "'; expected a node-classification run's");
    return t.run[key].get<std::int64_t>();
  };
  const std::string task = t.run.value("task", std::string());
  if (task != "node_classification")
    throw CheckpointError(path.string(), "written for task '" + task +
                                             "'; expected node_classification");
  if (t.run.value("embedding_dim", std::int64_t{0}) > 0)
    throw CheckpointError(path.string(),
                          "its model's input is a learned embedding kept by the servers; "
                          "inference needs a model trained on node features");
  NodeModelSpec spec;
  const std::string model = t.run.value("model", std::string());
  try {
    spec.model = model == "graphsage" ? ModelKind::sage : parse_model_kind(model);
    spec.aggregator = parse_aggregator(t.run.value("aggregator", std::string("mean")));
  } catch (const InvalidArgument& e) {
    throw CheckpointError(path.string(), std::string("run identity: ") + e.what());
  }
  spec.hidden = field("hidden");
  spec.num_layers = field("num_layers");
  if (spec.model == ModelKind::gat) spec.heads = field("heads");
  try {
    t.model = make_node_model(spec, field("in_feats"), field("num_classes"));
  } catch (const InvalidArgument& e) {
    throw CheckpointError(path.string(), std::string("run identity: ") + e.what());
  }
  ckpt.load_model(*t.model);
  t.model->eval();
  return t;
}

}  // namespace distgraph

// Writing layer-wise inference's outputs: every trainer's rows gathered by rank 0 through
// the servers into embeddings.npy / predictions.npy in the dataset's original node order,
// then infer.json. Shared by `distgraph infer` and `distgraph train --save-embeddings`.
#pragma once

#include <torch/types.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli.hpp"
#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/timer.hpp"
#include "distgraph/infer/layerwise_inference.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/io/npy_row_file.hpp"
#include "distgraph/nn/node_model.hpp"

namespace distgraph::cli {

/// Where the gathered rows wait for rank 0 (server-side node data, removed at the end).
inline constexpr const char* embeddings_tensor = "distgraph:infer/embeddings";
inline constexpr const char* predictions_tensor = "distgraph:infer/predictions";

/// Which files the run writes (--output).
struct Outputs {
  bool embeddings = true, predictions = true;
  std::string name = "both";
};

inline Outputs parse_outputs(const std::string& s) {
  if (s == "both") return {true, true, s};
  if (s == "embeddings") return {true, false, s};
  if (s == "logits") return {false, true, s};
  throw UsageError("infer: --output '" + s + "': expected embeddings, logits or both");
}

/// Every trainer's share of layer-wise inference, gathered by rank 0 through the servers
/// and written into `out` in original node order: embeddings.npy, predictions.npy (as
/// `want` says) and infer.json last. Collective. Returns infer.json's object (rank 0;
/// empty elsewhere).
template <class Graph>
nlohmann::json infer_on(Graph g, NodeModel& model, const Outputs& want,
                        const std::filesystem::path& out, std::int32_t rank,
                        std::int64_t batch_size, const nlohmann::json& about) {
  Stopwatch clock;
  const LayerwiseResult r = layerwise_inference(g, model,
                                                {.batch_size = batch_size,
                                                 .embeddings = want.embeddings,
                                                 .logits = want.predictions,
                                                 .rank = rank});
  const double infer_s = clock.seconds();
  using FloatTensor = typename Graph::template tensor_type<float>;
  using IdTensor = typename Graph::template tensor_type<std::int64_t>;
  std::optional<FloatTensor> emb;
  std::optional<IdTensor> pred;
  std::int64_t emb_cols = 0;
  if (want.embeddings) {
    emb_cols = r.embeddings.size(1);
    emb = g.template create_ndata<float>(embeddings_tensor, emb_cols);
    emb->push(r.nodes, std::span<const float>(r.embeddings.data_ptr<float>(),
                                              static_cast<std::size_t>(r.embeddings.numel())));
  }
  if (want.predictions) {
    const torch::Tensor classes = r.logits.argmax(1).contiguous();
    pred = g.template create_ndata<std::int64_t>(predictions_tensor, 1);
    pred->push(r.nodes, std::span<const std::int64_t>(classes.data_ptr<std::int64_t>(),
                                                      static_cast<std::size_t>(classes.numel())));
  }
  g.client().barrier("distgraph:infer/outputs");
  if (rank != 0) return {};

  Stopwatch write_clock;
  const std::int64_t n = g.num_nodes();
  std::optional<NpyRowFile> emb_file, pred_file;
  if (emb) emb_file.emplace(out / "embeddings.npy", DType::float32, n, emb_cols);
  if (pred) pred_file.emplace(out / "predictions.npy", DType::int64, n, 0);
  // Chunks of global IDs: rank 0 holds one chunk's rows at a time, never all N.
  constexpr std::int64_t chunk = 1 << 16;
  std::vector<std::int64_t> ids;
  for (std::int64_t lo = 0; lo < n; lo += chunk) {
    const std::int64_t hi = std::min(n, lo + chunk);
    ids.resize(static_cast<std::size_t>(hi - lo));
    for (std::int64_t v = lo; v < hi; ++v) ids[static_cast<std::size_t>(v - lo)] = v;
    const auto orig = g.orig_node_ids(ids);
    if (emb) {
      const auto rows = emb->pull(ids);
      for (std::size_t i = 0; i < ids.size(); ++i)
        emb_file->put_row(orig[i], rows.data() + i * static_cast<std::size_t>(emb_cols));
    }
    if (pred) {
      const auto classes = pred->pull(ids);
      for (std::size_t i = 0; i < ids.size(); ++i) pred_file->put_row(orig[i], &classes[i]);
    }
  }
  if (emb_file) emb_file->publish();
  if (pred_file) pred_file->publish();
  if (emb) g.client().remove(emb->name());
  if (pred) g.client().remove(pred->name());
  nlohmann::json j = about;
  j["nodes"] = n;
  j["output"] = want.name;
  if (emb) j["embedding_dim"] = emb_cols;
  j["infer_s"] = infer_s;
  j["write_s"] = write_clock.seconds();
  j["seconds"] = clock.seconds();
  j["layer_s"] = r.layer_s;
  const std::string text = j.dump(2) + "\n";
  distgraph::write_file_durably(out / "infer.json", {std::as_bytes(std::span(text))});
  return j;
}

/// Prints infer.json's object: as one JSON line with --json, else as a sentence.
inline void print_infer_result(const nlohmann::json& j, bool json) {
  if (json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::string layers;
    for (const auto& s : j["layer_s"]) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%.3f", layers.empty() ? "" : ", ", s.get<double>());
      layers += buf;
    }
    std::printf(
        "inferred %lld nodes (%s) in %.3f s: layers %s s, writing %.3f s; %s, %lld part(s), "
        "%lld trainer(s)\n",
        j["nodes"].get<long long>(), j["output"].get<std::string>().c_str(),
        j["seconds"].get<double>(), layers.c_str(), j["write_s"].get<double>(),
        j["mode"].get<std::string>().c_str(), j["parts"].get<long long>(),
        j["trainers"].get<long long>());
  }
  std::fflush(stdout);
}

}  // namespace distgraph::cli

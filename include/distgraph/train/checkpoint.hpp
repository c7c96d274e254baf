// Checkpoints: a model's parameters, its dense optimizer state and a JSON description of
// the run in one torch archive, written atomically, read back byte for byte on resume.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"

namespace distgraph {

/// A checkpoint that cannot be used for this run: unreadable, or written by another
/// model, dataset or recipe (the message names the field and both values).
class CheckpointError : public Error {
 public:
  CheckpointError(const std::string& path, const std::string& what)
      : Error("checkpoint " + path + ": " + what) {}
};

/// The checkpoint as bytes: the module's parameters and buffers, the optimizer's state,
/// `meta` (the run's description and progress) and named extra `tensors` (e.g. a
/// DistEmbedding's rows and its sparse optimizer state), each under its own key.
inline std::string checkpoint_bytes(
    const torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
    const nlohmann::json& meta,
    const std::vector<std::pair<std::string, torch::Tensor>>& tensors = {}) {
  torch::serialize::OutputArchive archive, model_ar, optim_ar;
  model.save(model_ar);
  optimizer.save(optim_ar);
  archive.write("model", model_ar);
  archive.write("optimizer", optim_ar);
  for (const auto& [name, t] : tensors) archive.write("tensors/" + name, t);
  archive.write("meta", c10::IValue(meta.dump()));
  std::ostringstream out;
  archive.save_to(out);
  return std::move(out).str();
}

/// Checkpoint bytes, parsed once: the run description, the model and optimizer state,
/// and the extra tensors. Every accessor throws CheckpointError naming `path`.
class CheckpointReader {
 public:
  CheckpointReader(const std::string& bytes, std::string path) : path_(std::move(path)) {
    guarded("unreadable", [&] {
      std::istringstream in(bytes);
      archive_.load_from(in);
      c10::IValue meta;
      if (!archive_.try_read("meta", meta) || !meta.isString())
        throw CheckpointError(path_, "no run description (not a distgraph checkpoint)");
      meta_ = nlohmann::json::parse(meta.toStringRef());
    });
  }

  const std::string& path() const noexcept { return path_; }
  /// The run description and progress written by checkpoint_bytes.
  const nlohmann::json& meta() const noexcept { return meta_; }

  /// Loads parameters and optimizer state into `model` and `optimizer`, which must have
  /// the shapes the checkpoint was written with (compare the meta first).
  void load(torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
    guarded("does not fit this model", [&] {
      torch::serialize::InputArchive model_ar, optim_ar;
      if (!archive_.try_read("model", model_ar) || !archive_.try_read("optimizer", optim_ar))
        throw CheckpointError(path_, "no model or optimizer state");
      model.load(model_ar);
      optimizer.load(optim_ar);
    });
  }

  /// Loads parameters and buffers alone into `model` (inference needs no optimizer); the
  /// shapes must be those the checkpoint was written with.
  void load_model(torch::nn::Module& model) {
    guarded("does not fit this model", [&] {
      torch::serialize::InputArchive model_ar;
      if (!archive_.try_read("model", model_ar)) throw CheckpointError(path_, "no model state");
      model.load(model_ar);
    });
  }

  /// Extra tensor `name` (see checkpoint_bytes).
  torch::Tensor tensor(const std::string& name) {
    torch::Tensor t;
    bool found = false;
    guarded("unreadable", [&] { found = archive_.try_read("tensors/" + name, t); });
    if (!found) throw CheckpointError(path_, "has no tensor '" + name + "'");
    return t;
  }

 private:
  /// Runs `f`, turning torch's exceptions into a one-line CheckpointError.
  template <class F>
  void guarded(const char* what, F&& f) {
    try {
      f();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string msg = e.what();
      if (const auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
      throw CheckpointError(path_, std::string(what) + ": " + msg);
    }
  }

  std::string path_;
  torch::serialize::InputArchive archive_;
  nlohmann::json meta_;
};

/// Writes `bytes` to `path` durably (core/durable_file.hpp), so a run killed mid-write, or
/// a machine that loses power, leaves the previous checkpoint or the new one, whole.
/// One writer per run folder (rank 0): the temporary files a killed run left beside it
/// (as large as the checkpoint) are removed first.
inline void write_checkpoint_file(const std::filesystem::path& path, const std::string& bytes) {
  const std::string leftover = path.filename().string() + ".tmp";
  std::vector<std::filesystem::path> stale;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(
           path.parent_path().empty() ? "." : path.parent_path(), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    if (it->path().filename().string().rfind(leftover, 0) == 0) stale.push_back(it->path());
  for (const auto& f : stale) std::filesystem::remove(f, ec);
  write_file_durably(path, bytes);
}

/// The bytes of the checkpoint file at `path`. Throws CheckpointError when it is missing.
inline std::string read_checkpoint_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(path.string(), "not found (nothing to resume from)");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace distgraph

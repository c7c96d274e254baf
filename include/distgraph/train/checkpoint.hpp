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

/// The `meta` of checkpoint bytes, without touching a model. Throws CheckpointError
/// naming `path` when the bytes are not a checkpoint.
inline nlohmann::json checkpoint_meta(const std::string& bytes, const std::string& path) {
  try {
    std::istringstream in(bytes);
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    c10::IValue meta;
    if (!archive.try_read("meta", meta) || !meta.isString())
      throw CheckpointError(path, "no run description (not a distgraph checkpoint)");
    return nlohmann::json::parse(meta.toStringRef());
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (const auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    throw CheckpointError(path, "unreadable: " + msg);
  }
}

/// Loads parameters and optimizer state from checkpoint bytes into `model` and
/// `optimizer`, which must have the shapes the checkpoint was written with (compare the
/// meta first). Throws CheckpointError naming `path`.
inline void load_checkpoint(const std::string& bytes, const std::string& path,
                            torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
  try {
    std::istringstream in(bytes);
    torch::serialize::InputArchive archive, model_ar, optim_ar;
    archive.load_from(in);
    if (!archive.try_read("model", model_ar) || !archive.try_read("optimizer", optim_ar))
      throw CheckpointError(path, "no model or optimizer state");
    model.load(model_ar);
    optimizer.load(optim_ar);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (const auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    throw CheckpointError(path, "does not fit this model: " + msg);
  }
}

/// Extra tensor `name` of checkpoint bytes (see checkpoint_bytes). Throws CheckpointError
/// naming `path` and the tensor when it is absent.
inline torch::Tensor checkpoint_tensor(const std::string& bytes, const std::string& path,
                                       const std::string& name) {
  std::istringstream in(bytes);
  torch::serialize::InputArchive archive;
  torch::Tensor t;
  try {
    archive.load_from(in);
    if (archive.try_read("tensors/" + name, t)) return t;
  } catch (const std::exception& e) {
    throw CheckpointError(path, std::string("unreadable: ") + e.what());
  }
  throw CheckpointError(path, "has no tensor '" + name + "'");
}

/// Writes `bytes` to `path` atomically (a temporary file renamed over it), so a run killed
/// mid-write leaves the previous checkpoint intact.
inline void write_checkpoint_file(const std::filesystem::path& path, const std::string& bytes) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw IoError(tmp, "cannot write");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) throw IoError(tmp, "write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw IoError(path.string(), "cannot publish: " + ec.message());
}

/// The bytes of the checkpoint file at `path`. Throws CheckpointError when it is missing.
inline std::string read_checkpoint_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(path.string(), "not found (nothing to resume from)");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace distgraph

// `distgraph infer` on a trained Cora run: its predictions score result.json's test
// accuracy, and its rows are in the dataset's original node order (checked against a
// forward pass over the unpartitioned graph).
#include <sys/wait.h>
#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "distgraph/infer/trained_node_model.hpp"
#include "distgraph/io/dataset.hpp"
#include "distgraph/io/npy.hpp"
#include "support/program_run.hpp"
#include "support/temp_dir.hpp"

namespace test_train_infer_command {

using namespace distgraph;
using namespace std::chrono_literals;
using distgraph::test::TempDir;
namespace fs = std::filesystem;

#ifdef DISTGRAPH_CLI

namespace {

/// Runs `distgraph ARGS` to the end; returns its exit status (-1: killed or too slow).
int run_cli(std::vector<std::string> args, std::string& output) {
  args.insert(args.begin(), DISTGRAPH_CLI);
  const auto r = distgraph::test::run_program(args, 300s);
  output = r.output;
  return r.exit_code;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("distgraph infer on a trained Cora run predicts result.json's test accuracy, rows in "
          "original node order",
          "[train][data][slow]") {
  DISTGRAPH_REQUIRE_DATASET(cora, "cora");
  TempDir tmp;
  const fs::path run = tmp / "run";
  std::string out;
  // Two METIS partitions: relabeled IDs differ from Cora's, so the order is really tested.
  int rc = run_cli(
      {"train", cora.string(), "--standalone", "--epochs", "20", "--out", run.string()}, out);
  INFO(out);
  REQUIRE(rc == 0);
  rc = run_cli({"infer", "--checkpoint", run.string(), "--standalone", "--json"}, out);
  INFO(out);
  REQUIRE(rc == 0);
  const auto info = read_json(run / "infer.json");
  CHECK(info["nodes"] == 2708);
  CHECK(info["layer_s"].size() == 2);
  CHECK(info["mode"] == "standalone");

  const Dataset data = load_dataset(cora);
  const auto pred = read_npy_int64(run / "predictions.npy");
  const auto emb = read_npy_float32(run / "embeddings.npy");
  REQUIRE(pred.size() == 2708);
  std::int64_t right = 0, tested = 0;
  for (std::size_t v = 0; v < pred.size(); ++v)
    if (data.test_mask[v]) {
      ++tested;
      right += pred[v] == data.label[v] ? 1 : 0;
    }
  const auto result = read_json(run / "result.json");
  CHECK(static_cast<double>(right) / static_cast<double>(tested) ==
        Approx(result["test"].get<double>()).margin(1e-12));

  // The forward pass of the same model over the whole unpartitioned graph, node v = row v:
  // one block with every node a destination serves both layers.
  TrainedNodeModel t = load_trained_node_model(run_checkpoint(run));
  Frontier f;
  f.src.assign(data.src.begin(), data.src.end());
  f.dst.assign(data.dst.begin(), data.dst.end());
  f.eid.resize(f.src.size());
  std::iota(f.eid.begin(), f.eid.end(), std::int64_t{0});
  std::vector<std::int64_t> all(2708);
  std::iota(all.begin(), all.end(), std::int64_t{0});
  const BlockTensors b = block_tensors(to_block(f, all));
  const auto x = torch::from_blob(const_cast<float*>(data.feat.data()),
                                  {data.num_nodes, data.feat_dim}, torch::kFloat);
  torch::NoGradGuard no_grad;
  const auto logits = t.model->forward({b, b}, x);
  const auto hidden = t.model->forward_layer(0, b, x);
  REQUIRE(emb.size() == static_cast<std::size_t>(hidden.numel()));
  const auto emb_t =
      torch::from_blob(const_cast<float*>(emb.data()), hidden.sizes(), torch::kFloat);
  CHECK((emb_t - hidden).abs().max().item<double>() < 1e-4);
  const auto want = logits.argmax(1);
  std::int64_t same = 0;
  for (std::int64_t v = 0; v < 2708; ++v) same += want[v].item<std::int64_t>() == pred[v] ? 1 : 0;
  CHECK(same == 2708);
}

TEST_CASE("distgraph train --save-embeddings writes the selected model's outputs into the run "
          "folder, and --eval-every leaves gaps in the validation column",
          "[train][data][slow]") {
  DISTGRAPH_REQUIRE_DATASET(cora, "cora");
  TempDir tmp;
  const fs::path run = tmp / "run";
  std::string out;
  const int rc = run_cli({"train", cora.string(), "--standalone", "--epochs", "9", "--eval-every",
                          "4", "--save-embeddings", "--out", run.string()},
                         out);
  INFO(out);
  REQUIRE(rc == 0);
  const auto result = read_json(run / "result.json");
  CHECK(result["eval"] == "full");
  CHECK(result["eval_every"] == 4);
  const auto best = result["best_epoch"].get<std::int64_t>();
  CHECK((best == 3 || best == 7 || best == 8));  // validated: after epochs 4, 8 and 9
  const auto info = read_json(run / "infer.json");
  CHECK(info["nodes"] == 2708);
  CHECK(info["best_epoch"] == best);
  CHECK(info["output"] == "both");

  const Dataset data = load_dataset(cora);
  const auto pred = read_npy_int64(run / "predictions.npy");
  const auto emb = read_npy_float32(run / "embeddings.npy");
  REQUIRE(pred.size() == 2708);
  CHECK(emb.size() == 2708u * 64u);
  std::int64_t right = 0, tested = 0;
  for (std::size_t v = 0; v < pred.size(); ++v)
    if (data.test_mask[v]) {
      ++tested;
      right += pred[v] == data.label[v] ? 1 : 0;
    }
  // The files come from the model result.json's test metric measured.
  CHECK(static_cast<double>(right) / static_cast<double>(tested) ==
        Approx(result["test"].get<double>()).margin(1e-12));
  // `distgraph infer` on the finished run (best.pt) writes the same predictions.
  const fs::path again = tmp / "again";
  REQUIRE(run_cli({"infer", "--checkpoint", run.string(), "--standalone", "--output", "logits",
                   "--out", again.string()},
                  out) == 0);
  const auto pred_again = read_npy_int64(again / "predictions.npy");
  REQUIRE(pred_again.size() == pred.size());
  CHECK(std::equal(pred.begin(), pred.end(), pred_again.begin()));
}

#endif

}  // namespace test_train_infer_command

// `distgraph infer` as users run it: on a 2-machine loopback cluster its files equal the
// standalone run's (which the train tests check against the forward pass) for GraphSAGE,
// GCN and GAT, and bad input is one line with nothing written.
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "distgraph/io/dataset.hpp"
#include "distgraph/io/npy.hpp"
#include "distgraph/io/synthetic.hpp"
#include "support/child_process.hpp"
#include "support/processes.hpp"
#include "support/program_run.hpp"
#include "support/temp_dir.hpp"

namespace test_integration_infer_cluster {

using namespace std::chrono_literals;
using distgraph::test::ChildProcess;
using distgraph::test::none_left;
using distgraph::test::TempDir;
namespace fs = std::filesystem;

#ifdef DISTGRAPH_CLI

namespace {

using Run = distgraph::test::ProgramRun;

Run cli(std::vector<std::string> args, std::chrono::milliseconds limit = 180s) {
  args.insert(args.begin(), DISTGRAPH_CLI);
  return distgraph::test::run_program(args, limit);
}

/// True when this build's distgraph has the infer subcommand (it needs libtorch).
bool infer_available() {
  static const bool ok = cli({"infer", "--help"}, 60s).exit_code == 0;
  return ok;
}

#define REQUIRE_INFER()                                                                \
  if (!infer_available()) {                                                            \
    WARN("SKIPPED: this distgraph was built without libtorch (no `distgraph infer`)"); \
    return;                                                                            \
  }

/// A small SBM dataset folder in `dir`.
fs::path small_dataset(const fs::path& dir, std::int64_t nodes, std::int64_t feat,
                       std::uint64_t seed) {
  distgraph::write_dataset(dir, distgraph::sbm_dataset({.num_nodes = nodes,
                                                        .num_classes = 4,
                                                        .avg_degree = 8,
                                                        .feat_dim = feat,
                                                        .seed = seed}));
  return dir;
}

/// A run of `model` trained standalone for 2 epochs on `data` (2 METIS partitions).
fs::path trained_run(const fs::path& data, const fs::path& run, const std::string& model) {
  std::vector<std::string> args{"train", data.string(), "--standalone", "--epochs", "2",
                                "--model", model,       "--hidden",     "16",  "--out",
                                run.string()};
  if (model == "gat") args.insert(args.end(), {"--heads", "4"});
  const Run r = cli(args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return run;
}

double max_abs_diff(const distgraph::Buffer<float>& a, const distgraph::Buffer<float>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - b[i]));
  return d;
}

}  // namespace

TEST_CASE("distgraph infer on 2 loopback machines writes what a standalone run writes, for "
          "sage, gcn and gat",
          "[integration][net][infer]") {
  REQUIRE_INFER();
  const std::string model = GENERATE("sage", "gcn", "gat");
  INFO("model " << model);
  TempDir tmp;
  const fs::path data = small_dataset(tmp / "data", 1500, 16, 5);
  const fs::path run = trained_run(data, tmp / "run", model);
  const Run alone = cli({"infer", "--checkpoint", run.string(), "--standalone", "--out",
                         (tmp / "alone").string()});
  INFO(alone.output);
  REQUIRE(alone.exit_code == 0);
  // Two trainers per machine for one model: each machine's nodes are split between them.
  const std::string trainers = model == "gcn" ? "2" : "1";
  const Run dist = cli({"infer", "--checkpoint", run.string(), "--trainers", trainers, "--out",
                        (tmp / "dist").string(), "--json"});
  INFO(dist.output);
  REQUIRE(dist.exit_code == 0);
  nlohmann::json info;  // the last line that is a JSON object: the result
  std::istringstream lines(dist.output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() == '{') info = nlohmann::json::parse(line);
  CHECK(info["mode"] == "distributed");
  CHECK(info["parts"] == 2);
  CHECK(info["trainers"] == (model == "gcn" ? 4 : 2));
  CHECK(info["nodes"] == 1500);
  CHECK(info["layer_s"].size() == 2);
  const auto a_emb = distgraph::read_npy_float32(tmp / "alone" / "embeddings.npy");
  const auto d_emb = distgraph::read_npy_float32(tmp / "dist" / "embeddings.npy");
  CHECK(max_abs_diff(a_emb, d_emb) <= 1e-5);
  const auto a_pred = distgraph::read_npy_int64(tmp / "alone" / "predictions.npy");
  const auto d_pred = distgraph::read_npy_int64(tmp / "dist" / "predictions.npy");
  REQUIRE(a_pred.size() == 1500);
  CHECK(std::equal(a_pred.begin(), a_pred.end(), d_pred.begin(), d_pred.end()));
  // Only the named files, no temporary one left.
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(tmp / "dist")) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  CHECK(files == std::vector<std::string>{"embeddings.npy", "infer.json", "predictions.npy",
                                          "processes.json"});
  // The launcher's report: both servers and every trainer ended well, each with its memory.
  std::ifstream report(tmp / "dist" / "processes.json");
  const auto procs = nlohmann::json::parse(report)["processes"];
  CHECK(procs.size() == 2 + info["trainers"].get<std::size_t>());
  for (const auto& p : procs) {
    CHECK(p["status"] == "exited with status 0");
    CHECK(p["peak_rss_bytes"].get<std::int64_t>() > 0);
  }
  CHECK(none_left(tmp.path().string(), 10s));
}

TEST_CASE("distgraph infer --output picks the files, and a dataset folder is partitioned afresh",
          "[integration][infer]") {
  REQUIRE_INFER();
  TempDir tmp;
  const fs::path data = small_dataset(tmp / "data", 600, 8, 2);
  const fs::path run = trained_run(data, tmp / "run", "sage");
  const Run logits = cli({"infer", "--checkpoint", run.string(), "--standalone", "--output",
                          "logits", "--out", (tmp / "logits").string()});
  INFO(logits.output);
  REQUIRE(logits.exit_code == 0);
  CHECK(fs::exists(tmp / "logits" / "predictions.npy"));
  CHECK(!fs::exists(tmp / "logits" / "embeddings.npy"));
  // The same rows whether the run's partition or the dataset itself is given.
  const Run own = cli({"infer", "--checkpoint", run.string(), "--standalone", "--output",
                       "embeddings", "--out", (tmp / "own").string()});
  const Run fresh = cli({"infer", "--checkpoint", run.string(), data.string(), "--standalone",
                         "--output", "embeddings", "--out", (tmp / "fresh").string()});
  INFO(own.output << fresh.output);
  REQUIRE(own.exit_code == 0);
  REQUIRE(fresh.exit_code == 0);
  CHECK(!fs::exists(tmp / "own" / "predictions.npy"));
  CHECK(max_abs_diff(distgraph::read_npy_float32(tmp / "own" / "embeddings.npy"),
                     distgraph::read_npy_float32(tmp / "fresh" / "embeddings.npy")) <= 1e-5);
}

TEST_CASE("distgraph infer refuses another dataset's graph and bad options with one line, "
          "writing nothing",
          "[integration][infer]") {
  REQUIRE_INFER();
  TempDir tmp;
  const fs::path data = small_dataset(tmp / "data", 600, 8, 2);
  const fs::path other = small_dataset(tmp / "other", 700, 8, 3);
  const fs::path run = trained_run(data, tmp / "run", "sage");
  const fs::path out = tmp / "out";
  const auto one_line = [&](const Run& r, int code, const std::string& needle) {
    INFO(r.output);
    CHECK(r.exit_code == code);
    CHECK(r.output.find('\n') == r.output.size() - 1);
    CHECK(r.output.find(needle) != std::string::npos);
    CHECK(!fs::exists(out));
  };
  one_line(cli({"infer", "--checkpoint", run.string(), other.string(), "--standalone", "--out",
                out.string()}),
           1, "trained on a graph of 600 nodes");
  // A partition of the other dataset: its node and edge counts differ.
  const Run part = cli({"partition", "--input", other.string(), "--name", "other", "--parts",
                        "1", "--out", (tmp / "other-part").string()});
  REQUIRE(part.exit_code == 0);
  one_line(cli({"infer", "--checkpoint", run.string(), "--part-config",
                (tmp / "other-part" / "other.json").string(), "--standalone", "--out",
                out.string()}),
           1, "(another dataset?)");
  one_line(cli({"infer", "--checkpoint", (tmp / "nowhere").string(), "--standalone", "--out",
                out.string()}),
           1, "checkpoint.pt: not found");
  one_line(cli({"infer", "--checkpoint", run.string(), "--output", "scores", "--out",
                out.string()}),
           2, "--output 'scores'");
  one_line(cli({"infer", "--out", out.string()}), 2, "--checkpoint RUN_DIR is required");
  // A run's files are never touched by a refused inference.
  CHECK(!fs::exists(run / "infer.json"));
  CHECK(!fs::exists(run / "predictions.npy"));
}

#endif

}  // namespace test_integration_infer_cluster

// `distgraph train` run as users run it: the main job on a real loopback cluster
// (launcher, servers, gloo trainers), standalone runs, checkpoint/resume equality, bad
// input and a trainer killed mid-epoch.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "distgraph/io/dataset.hpp"
#include "distgraph/io/synthetic.hpp"
#include "support/child_process.hpp"
#include "support/free_port.hpp"
#include "support/processes.hpp"
#include "support/program_run.hpp"
#include "support/temp_dir.hpp"

namespace test_integration_train_cluster {

using namespace std::chrono_literals;
using distgraph::test::ChildProcess;
using distgraph::test::none_left;
using distgraph::test::TempDir;
namespace fs = std::filesystem;

#ifdef DISTGRAPH_CLI

namespace {

using Run = distgraph::test::ProgramRun;

/// Runs `distgraph train ARGS` to the end (at most `limit`).
Run train(std::vector<std::string> args, std::chrono::milliseconds limit = 180s) {
  args.insert(args.begin(), {DISTGRAPH_CLI, "train"});
  return distgraph::test::run_program(args, limit);
}

/// True when this build's distgraph has the train subcommand (it needs libtorch).
bool train_available() {
  static const bool ok = train({"--help"}, 60s).exit_code == 0;
  return ok;
}

#define REQUIRE_TRAIN()                                                                \
  if (!train_available()) {                                                            \
    WARN("SKIPPED: this distgraph was built without libtorch (no `distgraph train`)"); \
    return;                                                                            \
  }

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The JSON objects among `output`'s lines (a launch also prints prefixed log lines).
std::vector<nlohmann::json> json_lines(const std::string& output) {
  std::vector<nlohmann::json> out;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line.front() == '{') out.push_back(nlohmann::json::parse(line));
  return out;
}

/// Relative path -> contents of every regular file under `dir`.
std::map<std::string, std::string> read_tree(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read_text(e.path());
  return files;
}

/// The output is one line (a clear error), naming `needle`.
void check_one_line_error(const Run& r, int code, const std::string& needle) {
  INFO(r.output);
  CHECK(r.exit_code == code);
  REQUIRE(!r.output.empty());
  CHECK(r.output.find('\n') == r.output.size() - 1);
  CHECK(r.output.find(needle) != std::string::npos);
}

/// Trains `args(out, epochs)` for 4 epochs in `tmp/whole`, and for 2 then resumed to 4 in
/// `tmp/split`; returns the JSON lines of the whole run and of the resumed one.
std::pair<std::vector<nlohmann::json>, std::vector<nlohmann::json>> whole_and_resumed(
    const std::function<std::vector<std::string>(const fs::path&, int)>& args,
    const fs::path& tmp) {
  const Run whole = train(args(tmp / "whole", 4));
  INFO(whole.output);
  REQUIRE(whole.exit_code == 0);
  const Run first = train(args(tmp / "split", 2));
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  auto resume = args(tmp / "split", 4);
  resume.push_back("--resume");
  const Run second = train(resume);
  INFO(second.output);
  REQUIRE(second.exit_code == 0);
  return {json_lines(whole.output), json_lines(second.output)};
}

}  // namespace

/// The trace at `path`, checked as a whole: every complete span of a thread nests in or
/// follows the ones before it, every async request has one begin and one end after it.
/// Returns, per process name, the names of its spans.
std::map<std::string, std::set<std::string>> checked_trace(const fs::path& path) {
  const auto j = read_json(path);
  REQUIRE(j["traceEvents"].is_array());
  std::map<std::int64_t, std::string> process;
  std::map<std::pair<std::int64_t, std::int64_t>,
           std::vector<std::pair<std::int64_t, std::int64_t>>>
      spans;  // (pid, tid) -> (start, end) in ns
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> async;  // (pid, id) -> phases
  std::map<std::int64_t, std::set<std::string>> names;
  const auto ns = [](const nlohmann::json& v) { return std::llround(v.get<double>() * 1000); };
  for (const auto& e : j["traceEvents"]) {
    const auto pid = e["pid"].get<std::int64_t>();
    const std::string ph = e["ph"];
    if (ph == "M") {
      if (e["name"] == "process_name") process[pid] = e["args"]["name"];
      continue;
    }
    names[pid].insert(e["name"].get<std::string>());
    if (ph == "X") {
      spans[{pid, e["tid"].get<std::int64_t>()}].emplace_back(ns(e["ts"]),
                                                              ns(e["ts"]) + ns(e["dur"]));
    } else {
      REQUIRE((ph == "b" || ph == "e"));
      async[{pid, e["id"].get<std::int64_t>()}] += ph;
    }
  }
  for (auto& [track, list] : spans) {
    // Sorted by start, longest first: each span must fit inside the open one it starts in.
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<std::int64_t> open_ends;
    for (const auto& [start, end] : list) {
      while (!open_ends.empty() && open_ends.back() <= start) open_ends.pop_back();
      INFO("pid " << track.first << " tid " << track.second << ": span [" << start << ", " << end
                  << ") overlaps an enclosing span's end");
      if (!open_ends.empty()) REQUIRE(end <= open_ends.back());
      open_ends.push_back(end);
    }
  }
  for (const auto& [key, phases] : async) CHECK(phases == "be");
  std::map<std::string, std::set<std::string>> out;
  for (const auto& [pid, n] : names) {
    REQUIRE(process.count(pid) == 1);
    out[process[pid]] = n;
  }
  return out;
}

TEST_CASE(
    "distgraph train --trace writes one timeline of every trainer and server, whose "
    "spans nest",
    "[train][integration][trace]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  const fs::path trace = tmp.path() / "trace.json";
  const Run r = train({"--parts", "2", "--epochs", "2", "--patience", "0", "--fanouts", "5,5",
                       "--trace", trace.string(), "--out", (tmp.path() / "run").string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto by_process = checked_trace(trace);
  CHECK_FALSE(fs::exists(tmp.path() / "trace.json.parts"));  // merged, then removed
  for (const std::string t : {"trainer 0.0", "trainer 1.0"}) {
    INFO(t);
    REQUIRE(by_process.count(t) == 1);
    const auto& n = by_process.at(t);
    for (const char* phase : {"epoch", "wait", "copy", "forward", "backward", "all-reduce",
                              "bucket", "optimizer", "metrics", "sample", "layer", "to_block",
                              "sample local", "fetch", "read local", "validate", "test"})
      CHECK(n.count(phase) == 1);
    // Requests to the other machine's server, in flight (partition 1 for trainer 0 and 0
    // for trainer 1).
    const std::string other = " -> partition " + std::string(t == "trainer 0.0" ? "1" : "0");
    // The recipe's loaders and its layer-wise evaluation ask for no edge IDs.
    CHECK(n.count("sample_sources" + other) == 1);
    CHECK(n.count("sample_neighbors" + other) == 0);
    CHECK(std::any_of(n.begin(), n.end(), [&](const std::string& x) {
      return x.rfind("pull '", 0) == 0 && x.find("feat'" + other) != std::string::npos;
    }));
  }
  for (const std::string s : {"server 0.0", "server 1.0"}) {
    INFO(s);
    REQUIRE(by_process.count(s) == 1);
    CHECK(by_process.at(s).count("sample_sources") == 1);
    CHECK(by_process.at(s).count("pull") == 1);
  }

  // Standalone: one process, the same phases but the remote ones.
  const fs::path one = tmp.path() / "standalone.json";
  const Run s = train({"--standalone", "--epochs", "1", "--patience", "0", "--fanouts", "5,5",
                       "--trace", one.string(), "--out", (tmp.path() / "run1").string()});
  INFO(s.output);
  REQUIRE(s.exit_code == 0);
  const auto alone = checked_trace(one);
  REQUIRE(alone.count("trainer 0 (standalone)") == 1);
  for (const char* phase :
       {"epoch", "wait", "copy", "forward", "backward", "optimizer", "sample", "layer", "fetch"})
    CHECK(alone.at("trainer 0 (standalone)").count(phase) == 1);
}

TEST_CASE("distgraph train runs the main job on a loopback cluster and learns the SBM graph",
          "[train][integration]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  const fs::path out = tmp.path() / "run";
  // The README's default: 2 partitions, 2 machines x (1 server + 1 trainer), SBM graph.
  const Run r = train({"--out", out.string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto result = read_json(out / "result.json");
  CHECK(result["mode"] == "distributed");
  CHECK(result["parts"] == 2);
  CHECK(result["trainers"] == 2);
  CHECK(result["metric"] == "accuracy");
  // At most 200 epochs; early stopping ends the run once the best validation epoch is
  // `patience` epochs old (one batch per trainer and epoch here: 100 epochs).
  const auto epochs = result["epochs"].get<std::int64_t>();
  const auto best = result["best_epoch"].get<std::int64_t>();
  CHECK(result["patience"] == 100);
  CHECK(epochs <= 200);
  CHECK(best < epochs);
  if (result["stopped_early"].get<bool>())
    CHECK(epochs - 1 - best == 100);
  else
    CHECK(epochs == 200);
  CHECK(result["seed"] == 0);
  // 8 classes (chance 0.125); 80% of a node's edges stay in its class and its features
  // are a noisy class centroid, so two mean-aggregating layers separate the classes.
  CHECK(result["test"].get<double>() > 0.9);
  CHECK(result["val"].get<double>() > 0.9);
  CHECK(result["epoch_s_mean"].get<double>() > 0);
  // The run log: the exact header, one row per epoch; the curves drawn.
  std::istringstream csv(read_text(out / "metrics.csv"));
  std::string line;
  std::getline(csv, line);
  CHECK(line ==
        "epoch,loss,train_metric,val_metric,epoch_s,sample_s,fetch_s,compute_s,allreduce_s,"
        "remote_rows,remote_bytes,cache_hit_rate,val_loss,copy_s,cpu_s");
  int rows = 0;
  while (std::getline(csv, line)) {
    if (line.empty()) continue;
    ++rows;
    std::vector<std::string> cells;
    std::istringstream cs(line);
    for (std::string c; std::getline(cs, c, ',');) cells.push_back(c);
    REQUIRE(cells.size() == 15);
    CHECK(std::stod(cells[14]) > 0);  // rank 0's process used some CPU in the epoch
    // Two machines: every epoch's batches need some rows of the other one (features of
    // at least 4 bytes each), unless the machine's cache holds them.
    const auto remote_rows = std::stoll(cells[9]);
    const auto remote_bytes = std::stoll(cells[10]);
    const auto hit_rate = std::stod(cells[11]);
    CHECK(hit_rate >= 0);
    CHECK(hit_rate <= 1);
    CHECK((remote_rows > 0 || hit_rate == 1));
    CHECK(remote_bytes >= 4 * remote_rows);
  }
  CHECK(rows == epochs);
  const auto svg = read_text(out / "curves.svg");
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("polyline") != std::string::npos);
  // Each trainer reported itself; the all-reduce ran (two trainers); nothing is left.
  CHECK(r.output.find("[trainer 1.0] trainer 1 of 2") != std::string::npos);
  CHECK(r.output.find("[trainer 0.0] epoch " + std::to_string(epochs) + "/200") !=
        std::string::npos);
  CHECK(none_left(out.string(), 10s));
}

TEST_CASE(
    "a partition made with --no-relabel trains distributed through distgraph train like "
    "a relabeled one",
    "[train][integration]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  const fs::path data = tmp.path() / "sbm";
  distgraph::write_dataset(data, distgraph::sbm_dataset({.num_nodes = 3000, .seed = 5}));
  std::map<std::string, double> test;
  for (const bool relabel : {true, false}) {
    const fs::path parts = tmp.path() / (relabel ? "relabeled" : "basic");
    std::vector<std::string> cmd{DISTGRAPH_CLI, "partition",   "--input", data.string(),
                                 "--name",      "sbm",         "--parts", "2",
                                 "--out",       parts.string()};
    if (!relabel) cmd.push_back("--no-relabel");
    ChildProcess part(cmd);
    REQUIRE(part.wait(120s) == std::optional<int>(0));
    const fs::path out = tmp.path() / ("run-" + parts.filename().string());
    const Run r = train(
        {data.string(), "--part-config", (parts / "sbm.json").string(), "--out", out.string()});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto result = read_json(out / "result.json");
    CHECK(result["mode"] == "distributed");
    CHECK(result["trainers"] == 2);
    test[relabel ? "relabeled" : "basic"] = result["test"].get<double>();
    CHECK(none_left(out.string(), 10s));
  }
  INFO("relabeled " << test["relabeled"] << ", basic " << test["basic"]);
  CHECK(test["basic"] > 0.8);  // 8 SBM classes: chance is 0.125
  CHECK(std::abs(test["basic"] - test["relabeled"]) < 0.05);
}

TEST_CASE("distgraph train --sampler labor reaches the launched trainers and learns the SBM graph",
          "[train][integration]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  const fs::path out = tmp.path() / "run";
  // Distributed: the trainers run the launching command line, --sampler included; rank 0
  // writes the sampler it trained with into result.json.
  const Run r = train({"--sampler", "labor", "--epochs", "20", "--out", out.string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto result = read_json(out / "result.json");
  CHECK(result["mode"] == "distributed");
  CHECK(result["trainers"] == 2);
  CHECK(result["sampler"] == "labor");
  // 8 classes (chance 0.125): LABOR's picks are as good a neighbourhood mean as uniform's.
  CHECK(result["test"].get<double>() > 0.9);
}

TEST_CASE("distgraph train --no-tls or DISTGRAPH_NO_TLS=1 puts the whole loopback job in clear",
          "[train][integration]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  // Every process must speak one mode: the launcher's own shutdown request once spoke TLS
  // to servers that had read DISTGRAPH_NO_TLS=1, failed, and left them to a late signal.
  const auto check_clean = [](const Run& r) {
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("shutdown request failed") == std::string::npos);
    CHECK(r.output.find("without TLS") == std::string::npos);  // no mode mismatch named
  };
  check_clean(train({"--no-tls", "--epochs", "2", "--out", (tmp.path() / "flag").string()}));
  ::setenv("DISTGRAPH_NO_TLS", "1", 1);
  const Run by_env = train({"--epochs", "2", "--out", (tmp.path() / "env").string()});
  ::unsetenv("DISTGRAPH_NO_TLS");
  check_clean(by_env);
}

TEST_CASE("distgraph train --standalone --json prints a line per epoch and the result",
          "[train][integration]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  const fs::path out = tmp.path() / "run";
  const Run r = train({"--standalone", "--epochs", "5", "--json", "--out", out.string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto lines = json_lines(r.output);
  REQUIRE(lines.size() == 6);
  for (int e = 0; e < 5; ++e) {
    CHECK(lines[static_cast<std::size_t>(e)]["epoch"] == e);
    CHECK(lines[static_cast<std::size_t>(e)]["loss"].get<double>() > 0);
    CHECK(lines[static_cast<std::size_t>(e)]["epoch_s"].get<double>() > 0);
    CHECK(lines[static_cast<std::size_t>(e)]["cpu_s"].get<double>() > 0);
    // Standalone: every partition's rows count (what a network would carry).
    CHECK(lines[static_cast<std::size_t>(e)]["remote_rows"].get<std::int64_t>() > 0);
  }
  CHECK(lines[5]["mode"] == "standalone");
  CHECK(lines[5]["trainers"] == 1);
  CHECK(lines[5]["sampler"] == "uniform");
  CHECK(lines[5] == read_json(out / "result.json"));
}

TEST_CASE("a run resumed from its checkpoint repeats the uninterrupted run's losses",
          "[train][integration]") {
  REQUIRE_TRAIN();
  const bool standalone = GENERATE(true, false);
  INFO((standalone ? "standalone" : "distributed (2 parts x 1 trainer)"));
  TempDir tmp;
  const auto args = [&](const fs::path& out, int epochs) {
    std::vector<std::string> a{
        "--epochs", std::to_string(epochs), "--seed", "7", "--json", "--out", out.string()};
    if (standalone) a.push_back("--standalone");
    return a;
  };
  const auto [a, b] = whole_and_resumed(args, tmp.path());
  REQUIRE(a.size() == 5);
  // Distributed runs print every epoch again at the end (from metrics.csv, which keeps
  // the resumed epochs); standalone ones print the epochs they ran.
  const std::size_t b_first = standalone ? 0 : 2;
  REQUIRE(b.size() == b_first + 3);
  for (std::size_t e = 2; e < 4; ++e) {
    const auto& x = a[e];
    const auto& y = b[b_first + e - 2];
    CHECK(y["epoch"] == x["epoch"]);
    // Exact in standalone runs (the JSON carries every bit); the distributed log is
    // re-read from metrics.csv's 6 decimals.
    if (standalone)
      CHECK(y["loss"].get<double>() == x["loss"].get<double>());
    else
      CHECK(y["loss"].get<double>() == Approx(x["loss"].get<double>()).margin(1e-6));
    CHECK(y["val_metric"].get<double>() == Approx(x["val_metric"].get<double>()).margin(1e-6));
  }
  CHECK(a.back()["test"].get<double>() == Approx(b.back()["test"].get<double>()).margin(1e-9));
  CHECK(read_json(tmp.path() / "split" / "result.json")["epochs"] == 4);
}

namespace {
/// The checkpoint tags the servers of run `out` keep (hidden staging folders aside): the
/// latest epoch's, and the best epoch's rows (model selection; a resume may need them).
/// Checks that there are no others and returns the latest epoch's.
fs::path saved_tags(const fs::path& out) {
  const auto result = read_json(out / "result.json");
  const auto best = result["best_epoch"].get<std::int64_t>();
  const auto last = result["epochs"].get<std::int64_t>() - 1;  // for the message
  std::vector<fs::path> epoch_tags, best_tags;
  for (const auto& e : fs::directory_iterator(out / "server-checkpoints")) {
    const std::string name = e.path().filename().string();
    if (name.front() == '.') continue;
    (name.find("-best-") != std::string::npos ? best_tags : epoch_tags).push_back(e.path());
  }
  INFO("best epoch " << best << " of " << last + 1);
  REQUIRE(epoch_tags.size() == 1);
  REQUIRE(best_tags.size() == 1);
  CHECK_THAT(best_tags[0].filename().string(), Catch::EndsWith("-best-" + std::to_string(best)));
  return epoch_tags[0];
}
}  // namespace

TEST_CASE("learned node embeddings replace features, on the servers, which save their rows",
          "[train][integration][embedding]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  // Distributed: two trainers' SparseAdam steps land on the servers' embedding rows.
  const fs::path dist = tmp.path() / "dist";
  const Run r = train({"--embedding-dim", "32", "--epochs", "50", "--out", dist.string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto result = read_json(dist / "result.json");
  CHECK(result["trainers"] == 2);
  // Inputs carry no class information at first (uniform random rows); what the model
  // learns comes through the graph, whose edges mostly stay inside a class.
  CHECK(result["test"].get<double>() > 0.8);
  // The epoch's remote traffic counts the other machine's embedding rows the trainers
  // pulled (32 floats each), not only the labels the loaders fetched (8 bytes each).
  std::ifstream csv(dist / "metrics.csv");
  std::string line;
  std::getline(csv, line);
  int epochs = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> cells;
    std::istringstream cs(line);
    for (std::string c; std::getline(cs, c, ',');) cells.push_back(c);
    REQUIRE(cells.size() == 15);
    CHECK(std::stod(cells[14]) > 0);  // rank 0's process used some CPU in the epoch
    const auto remote_rows = std::stoll(cells[9]), remote_bytes = std::stoll(cells[10]);
    INFO("epoch " << cells[0] << ": " << remote_rows << " rows, " << remote_bytes << " bytes");
    CHECK(remote_bytes > 8 * remote_rows);
    ++epochs;
  }
  CHECK(epochs == 50);
  // Each server saved its own rows: one tag (the latest epoch's), one folder per
  // partition, the rows and SparseAdam's state in it; older epochs' tags are gone.
  // The best epoch's rows are kept too, under a tag of their own.
  const fs::path tag = saved_tags(dist);
  CHECK_THAT(tag.filename().string(), Catch::EndsWith("-epoch-50"));
  for (const char* part : {"part-0", "part-1"})
    for (const char* file : {"meta.json", "node_emb.npy", "node_emb%2Eadam_m.npy",
                             "node_emb%2Eadam_v.npy", "node_emb%2Eadam_t.npy"})
      CHECK(fs::exists(tag / part / file));
}

TEST_CASE("a run with learned embeddings resumes exactly from the servers' saves",
          "[train][integration][embedding]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  const auto args = [&](const fs::path& out, int epochs, bool standalone) {
    std::vector<std::string> a{"--embedding-dim",      "16",     "--seed", "3",         "--epochs",
                               std::to_string(epochs), "--json", "--out",  out.string()};
    if (standalone) a.push_back("--standalone");
    return a;
  };
  SECTION("standalone: the resumed epochs repeat the uninterrupted run's") {
    // Embedding rows and SparseAdam state come back from the servers' saves.
    const auto [a, b] = whole_and_resumed(
        [&](const fs::path& out, int epochs) { return args(out, epochs, true); }, tmp.path());
    REQUIRE(a.size() == 5);
    REQUIRE(b.size() == 3);
    for (std::size_t e = 0; e < 2; ++e)
      CHECK(b[e]["loss"].get<double>() == a[e + 2]["loss"].get<double>());
    CHECK(b[2]["test"].get<double>() == a[4]["test"].get<double>());
    // Epoch 2's save went once epoch 4's was in place.
    CHECK_THAT(saved_tags(tmp.path() / "split").filename().string(), Catch::EndsWith("-epoch-4"));
    // A checkpoint without embeddings does not resume a run with them.
    check_one_line_error(train({"--standalone", "--epochs", "5", "--resume", "--out",
                                (tmp.path() / "whole").string()}),
                         1, "embedding_dim");
  }
  SECTION("distributed: the servers load back exactly what they saved") {
    // Two trainers' sparse steps reach shared rows in whichever order the network
    // delivers them (as in DGL), so distributed epochs are not bit-reproducible. The
    // model and rows a checkpoint holds are: evaluating a resumed run with nothing left
    // to train gives the finished run's test metric exactly. Learned inputs start as
    // random rows, so rows that were not loaded back could not give it.
    const fs::path out = tmp.path() / "dist";
    const Run first = train(args(out, 2, false));
    INFO(first.output);
    REQUIRE(first.exit_code == 0);
    const double test = read_json(out / "result.json")["test"].get<double>();
    auto again = args(out, 2, false);
    again.push_back("--resume");
    const Run reloaded = train(again);
    INFO(reloaded.output);
    REQUIRE(reloaded.exit_code == 0);
    CHECK(read_json(out / "result.json")["test"].get<double>() == test);
    auto more = args(out, 3, false);
    more.push_back("--resume");
    REQUIRE(train(more).exit_code == 0);
    CHECK(read_json(out / "result.json")["epochs"] == 3);
    CHECK_THAT(saved_tags(out).filename().string(), Catch::EndsWith("-epoch-3"));
  }
}

TEST_CASE("distgraph train --task link learns to score held-out edges (ROC-AUC)",
          "[train][integration][link]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  const fs::path data = tmp.path() / "sbm";
  distgraph::write_dataset(
      data,
      distgraph::sbm_dataset({.num_nodes = 1500, .num_classes = 4, .avg_degree = 8, .seed = 3}));
  const fs::path out = tmp.path() / "run";
  const Run r = train({data.string(), "--task", "link", "--epochs", "6", "--batch-size", "200",
                       "--json", "--out", out.string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto result = read_json(out / "result.json");
  CHECK(result["metric"] == "roc_auc");
  CHECK(result["mode"] == "distributed");
  CHECK(result["trainers"] == 2);
  CHECK(result["epochs"] == 6);
  // 80% of edges join nodes of one class (of 4), whose features share a centroid. Even a
  // scorer that knew every class would rank a positive above a negative only about
  // 0.5 + 0.5 * (0.8 - 0.25) = 0.78 of the time; chance is 0.5.
  CHECK(result["test"].get<double>() > 0.65);
  CHECK(result["val"].get<double>() > 0.65);
  const auto lines = json_lines(r.output);
  REQUIRE(lines.size() == 7);
  CHECK(lines[5]["loss"].get<double>() < lines[0]["loss"].get<double>());
  check_one_line_error(train({"--task", "edges", "--out", out.string()}), 2, "task 'edges'");
}

TEST_CASE("distgraph train rejects bad input with one line and leaves --out untouched",
          "[train][integration][bad_input]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  const fs::path out = tmp.path() / "run";
  const std::string o = out.string();
  check_one_line_error(train({"--parts", "0", "--out", o}), 2, "--parts");
  check_one_line_error(train({"--epochs", "0", "--out", o}), 2, "--epochs");
  check_one_line_error(train({"--metric", "f1", "--out", o}), 2, "metric 'f1'");
  check_one_line_error(train({"--fanouts", "10,0", "--out", o}), 2, "--fanouts");
  check_one_line_error(train({"--device", "tpu", "--out", o}), 2, "--device");
  check_one_line_error(train({"--sampler", "weighted", "--out", o}), 2, "--sampler 'weighted'");
  check_one_line_error(train({"--task", "link", "--sampler", "labor", "--out", o}), 2,
                       "--sampler labor");
  check_one_line_error(train({"--cache-mb", "-1", "--out", o}), 2, "--cache-mb");
  check_one_line_error(train({"--prefetch-nice", "20", "--out", o}), 2, "--prefetch-nice");
  check_one_line_error(train({"--prefetch-nice", "-5", "--out", o}), 2, "--prefetch-nice");
  check_one_line_error(train({"--prefetch-depth", "0", "--out", o}), 2, "--prefetch-depth");
  check_one_line_error(train({"--prefetch-depth", "2000", "--out", o}), 2, "--prefetch-depth");
  // More than the machine's memory cannot be a cache in its shared memory.
  check_one_line_error(train({"--cache-mb", "1000000000", "--out", o}), 2, "--cache-mb");
  check_one_line_error(train({"--cache-policy", "lru", "--out", o}), 2, "--cache-policy 'lru'");
  check_one_line_error(train({"--standalone", "--no-tls", "--out", o}), 2, "--standalone has none");
  check_one_line_error(train({"--no-tls", "--tls-cert", "c.pem", "--out", o}), 2,
                       "--no-tls with TLS certificates");
  ::setenv("DISTGRAPH_NO_TLS", "maybe", 1);
  const Run bad_env = train({"--out", o});
  ::unsetenv("DISTGRAPH_NO_TLS");
  check_one_line_error(bad_env, 2, "DISTGRAPH_NO_TLS='maybe'");
  check_one_line_error(train({"--model", "gin", "--out", o}), 2, "--model 'gin'");
  check_one_line_error(train({"--model", "gat", "--heads", "5", "--out", o}), 2,
                       "--heads 5 does not divide --hidden 64");
  check_one_line_error(train({"--heads", "4", "--out", o}), 2, "--heads");
  check_one_line_error(train({"--patience", "-2", "--out", o}), 2, "--patience -2 out of range");
  check_one_line_error(train({"--eval", "exact", "--out", o}), 2,
                       "train: --eval 'exact': expected full or sampled");
  check_one_line_error(train({"--eval-every", "0", "--out", o}), 2, "--eval-every 0 out of range");
  check_one_line_error(train({"--task", "link", "--eval", "sampled", "--out", o}), 2,
                       "train: --eval is for --task node");
  check_one_line_error(train({"--task", "link", "--save-embeddings", "--out", o}), 2,
                       "train: --save-embeddings is for --task node");
  check_one_line_error(train({"--embedding-dim", "8", "--save-embeddings", "--out", o}), 2,
                       "train: --save-embeddings needs a model of the node features");
  check_one_line_error(train({"hsbm", "--eval", "sampled", "--out", o}), 2,
                       "train: --eval is for homogeneous graphs");
  const auto missing = (tmp.path() / "no-such-dataset").string();
  check_one_line_error(train({missing, "--standalone", "--out", o}), 1, "no-such-dataset");
  CHECK_FALSE(fs::exists(out));  // nothing was written for any of these
  check_one_line_error(train({"--standalone", "--resume", "--out", o}), 1, "checkpoint");

  // A malformed dataset folder: a src.npy that is not a .npy file.
  const fs::path bad = tmp.path() / "bad";
  distgraph::write_dataset(bad, distgraph::sbm_dataset({.num_nodes = 300, .seed = 1}));
  std::ofstream(bad / "src.npy", std::ios::trunc) << "not numpy";
  check_one_line_error(train({bad.string(), "--standalone", "--out", o}), 1, "src.npy");

  // A finished run, then a resume with another model, a partition of another dataset:
  // clear errors, and the run folder is byte for byte what it was.
  REQUIRE(train({"--standalone", "--epochs", "2", "--out", o}).exit_code == 0);
  const auto before = read_tree(out);
  REQUIRE(before.count("checkpoint.pt") == 1);
  check_one_line_error(
      train({"--standalone", "--epochs", "3", "--hidden", "32", "--resume", "--out", o}), 1,
      "hidden");
  check_one_line_error(
      train({"--standalone", "--epochs", "3", "--model", "gcn", "--resume", "--out", o}), 1,
      "model");
  const fs::path other = tmp.path() / "other";
  distgraph::write_dataset(other, distgraph::sbm_dataset({.num_nodes = 500, .seed = 2}));
  const auto config = (out / "partition" / "sbm.json").string();
  check_one_line_error(train({other.string(), "--standalone", "--part-config", config, "--out", o}),
                       1, "does not match");
  CHECK(read_tree(out) == before);
}

TEST_CASE("a trainer killed mid-run stops the whole job, named, with no process left",
          "[train][integration][fault]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  const fs::path out = tmp.path() / "run";
  ChildProcess p({DISTGRAPH_CLI, "train", "--epochs", "100000", "--out", out.string()});
  // Find trainer 1's pid in its own report, then wait until training is under way.
  int victim = -1;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (victim < 0 && std::chrono::steady_clock::now() < deadline) {
    const auto line = p.read_line(5s);
    if (!line) continue;
    const auto at = line->find("[trainer 1.0] trainer 1 of 2 (pid ");
    if (at != std::string::npos) victim = std::atoi(line->c_str() + at + 34);
  }
  INFO(p.output());
  REQUIRE(victim > 0);
  REQUIRE(p.wait_for_line("epoch 3/", 120s));
  REQUIRE(::kill(victim, SIGKILL) == 0);
  const auto st = p.wait(60s);
  INFO(p.output());
  REQUIRE(st.has_value());
  CHECK(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) != 0);
  CHECK(p.output().find("trainer 1.0 (pid " + std::to_string(victim) +
                        ") was killed by signal 9") != std::string::npos);
  CHECK(none_left(out.string(), 15s));
  // Rank 0 checkpointed the epochs it finished (the file is renamed into place whole).
  CHECK(fs::exists(out / "checkpoint.pt"));
}

#endif

#if defined(DISTGRAPH_CLI) && defined(DISTGRAPH_EXAMPLE_TRAIN_SAGE)

TEST_CASE("the guide's trainer program trains standalone and under distgraph launch unchanged",
          "[train][integration][example]") {
  TempDir tmp;
  // The guide's workflow: partition, an ip_config of two loopback machines, launch.
  const fs::path data = tmp.path() / "sbm", parts = tmp.path() / "parts";
  distgraph::write_dataset(data, distgraph::sbm_dataset({.num_nodes = 3000, .seed = 5}));
  ChildProcess part({DISTGRAPH_CLI, "partition", "--input", data.string(), "--name", "sbm",
                     "--parts", "2", "--out", parts.string()});
  REQUIRE(part.wait(120s) == std::optional<int>(0));
  const auto config = (parts / "sbm.json").string();

  ChildProcess alone({DISTGRAPH_EXAMPLE_TRAIN_SAGE, config, (tmp.path() / "alone").string()});
  const auto st = alone.wait(180s);
  INFO(alone.output());
  REQUIRE(st == std::optional<int>(0));
  CHECK(alone.output().find("epoch 49 ") != std::string::npos);
  CHECK(alone.output().find("over 1 trainer(s)") != std::string::npos);

  const fs::path ip = tmp.path() / "ip_config.txt";
  distgraph::test::write_loopback_ip_config(ip, 2, 1).release();
  ChildProcess job({DISTGRAPH_CLI, "launch", "--ip-config", ip.string(), "--part-config", config,
                    "--", DISTGRAPH_EXAMPLE_TRAIN_SAGE, config, (tmp.path() / "dist").string()});
  const auto jst = job.wait(180s);
  INFO(job.output());
  REQUIRE(jst == std::optional<int>(0));
  CHECK(job.output().find("over 2 trainer(s)") != std::string::npos);
  const auto result = read_json(tmp.path() / "dist" / "result.json");
  CHECK(result["mode"] == "distributed");
  CHECK(result["trainers"] == 2);
  CHECK(result["test"].get<double>() > 0.8);  // 8 SBM classes: chance is 0.125
  CHECK(read_json(tmp.path() / "alone" / "result.json")["mode"] == "standalone");
}

TEST_CASE("standalone and distributed training agree epoch by epoch when sampling is the same",
          "[train][integration][quality]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  // Full neighbourhoods and no dropout: nothing random is left but the model's
  // initialisation (broadcast from rank 0) and the shuffle of the seeds into batches, and
  // one batch per trainer makes the shuffle irrelevant. Each epoch's loss is then a
  // function of the previous epoch's averaged gradients: equal losses over 3 epochs mean
  // equal weighting of the trainers' losses and gradients.
  const std::vector<std::string> recipe = {
      "--epochs",     "3",    "--fanouts", "-1,-1",      "--dropout", "0", "--input-dropout", "0",
      "--batch-size", "1000", "--json",    "--cache-mb", "0"};
  auto losses = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"--out", (tmp.path() / name).string()};
    args.insert(args.end(), recipe.begin(), recipe.end());
    args.insert(args.end(), extra.begin(), extra.end());
    const Run r = train(args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::vector<double> out;
    for (const auto& j : json_lines(r.output))
      if (j.contains("loss")) out.push_back(j["loss"].get<double>());
    REQUIRE(out.size() == 3);
    return out;
  };
  const auto alone = losses("alone", {"--standalone"});
  const auto two = losses("two", {});                     // 2 machines x 1 trainer
  const auto four = losses("four", {"--trainers", "2"});  // 2 machines x 2 trainers
  for (std::size_t e = 0; e < 3; ++e) {
    INFO("epoch " << e << ": standalone " << alone[e] << ", 2x1 " << two[e] << ", 2x2 " << four[e]);
    CHECK(std::abs(two[e] - alone[e]) <= 1e-5 * alone[e]);
    CHECK(std::abs(four[e] - alone[e]) <= 1e-5 * alone[e]);
  }
  CHECK(alone[2] < alone[0]);  // it trained
}

/// Mean test metric of `distgraph train DATASET --part-config CONFIG FLAGS --seed S` over
/// `seeds`, each on 2 loopback machines.
double mean_test(const fs::path& dataset, const fs::path& config,
                 const std::vector<std::string>& flags, const std::vector<int>& seeds,
                 const fs::path& out) {
  double sum = 0;
  for (const int s : seeds) {
    std::vector<std::string> args = {dataset.string(),
                                     "--part-config",
                                     config.string(),
                                     "--seed",
                                     std::to_string(s),
                                     "--out",
                                     (out / std::to_string(s)).string()};
    args.insert(args.end(), flags.begin(), flags.end());
    const Run r = train(args, 300s);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    sum += read_json(out / std::to_string(s) / "result.json")["test"].get<double>();
  }
  return sum / static_cast<double>(seeds.size());
}

TEST_CASE(
    "Cora with the row cache, LABOR and bfloat16 features together trains within a "
    "point of the plain run",
    "[train][integration][cache]") {
  REQUIRE_TRAIN();
  const fs::path cora = fs::path(DISTGRAPH_SHARED_DATA) / "cora";
  if (!fs::exists(cora / "meta.json")) {
    WARN("SKIPPED: " << cora.string() << " is absent");
    return;
  }
  TempDir tmp;
  // One METIS partition, written twice: float32 and bfloat16 features.
  for (const char* dtype : {"f32", "bf16"}) {
    ChildProcess p({DISTGRAPH_CLI, "partition", "--input", cora.string(), "--name", "cora",
                    "--parts", "2", "--feat-dtype", dtype, "--out", (tmp.path() / dtype).string()});
    const auto st = p.wait(120s);
    INFO(p.output());
    REQUIRE((st && WIFEXITED(*st) && WEXITSTATUS(*st) == 0));
  }
  const std::vector<int> seeds{0, 1, 2};
  const double plain = mean_test(cora, tmp.path() / "f32" / "cora.json", {"--cache-mb", "0"}, seeds,
                                 tmp.path() / "plain");
  const double all =
      mean_test(cora, tmp.path() / "bf16" / "cora.json", {"--cache-mb", "64", "--sampler", "labor"},
                seeds, tmp.path() / "all");
  INFO("plain " << plain << ", cache + labor + bf16 " << all);
  CHECK(plain > 0.75);
  CHECK(std::abs(all - plain) <= 0.01);
  // The cached run did use its cache.
  std::ifstream csv(tmp.path() / "all" / "0" / "metrics.csv");
  std::string line;
  std::getline(csv, line);
  REQUIRE(std::getline(csv, line));
  std::vector<std::string> cells;
  std::istringstream cs(line);
  for (std::string c; std::getline(cs, c, ',');) cells.push_back(c);
  REQUIRE(cells.size() == 15);
  CHECK(std::stod(cells[11]) > 0.5);  // cache_hit_rate
}

#endif

TEST_CASE(
    "distgraph train on the typed DBLP folder: 2 partitions, real servers, R-GCN above "
    "the target, macro-F1 reported",
    "[train][integration][hetero]") {
  REQUIRE_TRAIN();
  const fs::path dblp = fs::path(DISTGRAPH_SHARED_DATA) / "dblp";
  if (!fs::exists(dblp / "meta.json")) {
    WARN("SKIPPED: " << dblp.string() << " is absent");
    return;
  }
  TempDir tmp;
  const fs::path out = tmp.path() / "run";
  const Run r = train({dblp.string(), "--parts", "2", "--out", out.string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto result = read_json(out / "result.json");
  CHECK(result["mode"] == "distributed");
  CHECK(result["parts"] == 2);
  CHECK(result["model"] == "rgcn");
  CHECK(result["target_ntype"] == "author");
  // Features alone reach 75.8% and one hop 76.3% (REFERENCE.md); the venue, two hops
  // away, is what lifts a typed model past 90%.
  CHECK(result["test"].get<double>() > 0.9);
  CHECK(result["test_macro_f1"].get<double>() > 0.88);
  CHECK(fs::exists(out / "metrics.csv"));
  CHECK(fs::exists(out / "checkpoint.pt"));
  CHECK(none_left(out.string(), 10s));
}

TEST_CASE(
    "distgraph train --standalone on the built-in typed graph learns what its features "
    "cannot tell",
    "[train][integration][hetero]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  const fs::path out = tmp.path() / "run";
  const Run r = train({"hsbm", "--standalone", "--model", "hsage", "--epochs", "10", "--out",
                       out.string(), "--json"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto lines = json_lines(r.output);
  REQUIRE(lines.size() == 11);  // an epoch a line, then the result
  const auto& result = lines.back();
  CHECK(result["mode"] == "standalone");
  CHECK(result["target_ntype"] == "paper");
  // 4 classes; a class-mean classifier on paper features scores about 0.29.
  CHECK(result["test"].get<double>() > 0.7);
}

TEST_CASE(
    "distgraph train on a typed graph validates every --eval-every epochs, selects its "
    "best epoch and resumes",
    "[train][integration][hetero][selection]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  const fs::path out = tmp.path() / "run";
  const auto typed = [&](const char* epochs, std::vector<std::string> more) {
    std::vector<std::string> args{"hsbm",  "--standalone", "--model", "hsage",      "--epochs",
                                  epochs,  "--eval-every", "2",       "--patience", "0",
                                  "--out", out.string(),   "--json"};
    args.insert(args.end(), more.begin(), more.end());
    return train(args);
  };
  const Run first = typed("3", {});
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  const Run resumed = typed("6", {"--resume"});
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  const auto lines = json_lines(resumed.output);
  REQUIRE(lines.size() == 4);  // epochs 3, 4 and 5, then the result
  // Validated after every second epoch and the last: epoch 4 (counted from 0) has none.
  CHECK(lines[0]["epoch"] == 3);
  CHECK(lines[0]["val_metric"].is_number());
  CHECK(lines[1]["val_metric"].is_null());
  const auto& result = lines.back();
  CHECK(result["epochs"] == 6);
  CHECK(result["patience"] == 0);
  // The selected epoch is the validated one with the best metric, before the resume or after.
  auto epochs = json_lines(first.output);
  epochs.pop_back();  // the first run's result
  epochs.insert(epochs.end(), lines.begin(), lines.end() - 1);
  REQUIRE(epochs.size() == 6);
  std::int64_t best = -1;
  for (std::size_t e = 0; e < epochs.size(); ++e)
    if (epochs[e]["val_metric"].is_number() &&
        (best < 0 || epochs[e]["val_metric"].get<double>() >
                         epochs[static_cast<std::size_t>(best)]["val_metric"].get<double>()))
      best = static_cast<std::int64_t>(e);
  CHECK(result["best_epoch"].get<std::int64_t>() == best);
  CHECK(result["val"].get<double>() ==
        epochs[static_cast<std::size_t>(best)]["val_metric"].get<double>());
  CHECK(fs::exists(out / "best.pt"));
}

TEST_CASE("distgraph train refuses unknown typed names with one line naming them",
          "[train][integration][hetero]") {
  REQUIRE_TRAIN();
  TempDir tmp;
  const fs::path out = tmp.path() / "run";
  check_one_line_error(
      train({"hsbm", "--standalone", "--target-ntype", "nope", "--out", out.string()}), 1, "nope");
  CHECK_FALSE(fs::exists(out));  // checked before anything is partitioned
  check_one_line_error(train({"hsbm", "--standalone", "--relation-fanouts", "bogus=3", "--epochs",
                              "1", "--out", out.string()}),
                       1, "bogus");
  check_one_line_error(train({"hsbm", "--standalone", "--model", "gat", "--out", out.string()}), 2,
                       "gat");
  check_one_line_error(train({"hsbm", "--standalone", "--sampler", "labor", "--out", out.string()}),
                       2, "--sampler labor");
}

}  // namespace test_integration_train_cluster

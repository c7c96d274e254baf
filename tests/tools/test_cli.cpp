// The `distgraph` program run as users run it: info and partition, their JSON, exit codes,
// one-line errors and options from a --config file.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

extern char** environ;

namespace test_tools_cli {

namespace fs = std::filesystem;

namespace {

/// The program under test: the build's distgraph_cli target, wherever the build lives.
fs::path cli_path() {
#ifdef DISTGRAPH_CLI
  return DISTGRAPH_CLI;
#else
  return fs::path(DISTGRAPH_BINARY_DIR) / "tools" / "distgraph" / "distgraph";
#endif
}

struct RunResult {
  int exit_code = -1;  ///< -1: killed by a signal or by the deadline
  bool timed_out = false;
  std::string out, err;
};

/// Runs the CLI with `args`, collecting stdout and stderr separately; a run that outlives
/// `limit` is killed and reported as timed out.
RunResult run_cli(const std::vector<std::string>& args,
                  std::chrono::seconds limit = std::chrono::seconds(120)) {
  int out_pipe[2], err_pipe[2];
  REQUIRE(::pipe2(out_pipe, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(err_pipe, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  const std::string exe = cli_path().string();
  std::vector<char*> argv{const_cast<char*>(exe.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  RunResult r;
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    FAIL("cannot start " << exe << ": error " << rc);
  }
  // Read both pipes until they close (the program exited) or the deadline passes.
  const auto deadline = std::chrono::steady_clock::now() + limit;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char chunk[1 << 14];
      const ssize_t n = ::read(fds[i].fd, chunk, sizeof chunk);
      if (n > 0) {
        sinks[i]->append(chunk, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& p : fds)
    if (p.fd >= 0) ::close(p.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!r.timed_out && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

/// Skips (Catch2 v2 has no SKIP) unless the CLI was built.
#define REQUIRE_CLI()                                                                         \
  if (!fs::exists(cli_path())) {                                                              \
    WARN("SKIPPED: distgraph CLI not built at " << cli_path() << " (DISTGRAPH_BUILD_TOOLS)"); \
    return;                                                                                   \
  }

std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + (r.timed_out ? " (timed out)" : "") +
         "\n--- stdout ---\n" + r.out.substr(0, 4000) + "\n--- stderr ---\n" +
         r.err.substr(0, 4000);
}

/// Relative path -> contents of every regular file under `dir`.
std::map<std::string, std::string> read_tree(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    files[fs::relative(e.path(), dir).string()] =
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return files;
}

/// Stderr is exactly one line that names `flag`.
void check_one_line_error(const RunResult& r, const std::string& flag) {
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  REQUIRE(!r.err.empty());
  CHECK(r.err.back() == '\n');
  CHECK(r.err.find('\n') == r.err.size() - 1);
  CHECK(r.err.find(flag) != std::string::npos);
}

/// Writes `text` to `path` (an options file for --config).
fs::path write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE(
    "distgraph --version prints the version, the commit and the libraries it was built "
    "with",
    "[tools]") {
  REQUIRE_CLI();
  const RunResult r = run_cli({"--version"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.rfind("distgraph " DISTGRAPH_TEST_VERSION " (commit ", 0) == 0);
#ifdef DISTGRAPH_TEST_HAVE_GIT
  if (fs::exists(fs::path(DISTGRAPH_SOURCE_DIR) / ".git"))  // built from a checkout
    CHECK(r.out.find("(commit unknown") == std::string::npos);
#endif
  for (const char* lib : {"built with libtorch ", ", Boost 1.", ", METIS 5."})
    CHECK(r.out.find(lib) != std::string::npos);
  CHECK(r.err.empty());
}

TEST_CASE("distgraph serve with a machine number past the ip config names the machine id",
          "[tools]") {
  REQUIRE_CLI();
  distgraph::test::TempDir tmp;
  const auto ip = tmp.path() / "ip_config.txt";
  std::ofstream(ip) << "127.0.0.1 30050\n127.0.0.1 30060\n";
  const RunResult r = run_cli({"serve", "--ip-config", ip.string(), "--part-config",
                               (tmp.path() / "g.json").string(), "--machine", "5"});
  INFO(describe(r));
  CHECK(r.exit_code != 0);
  CHECK(!r.timed_out);
  CHECK(r.err.find("machine id") != std::string::npos);
  CHECK(r.err.find('5') != std::string::npos);
  CHECK(r.err.find("_M_range_check") == std::string::npos);  // not a library's own words
  CHECK(r.out.find("listening") == std::string::npos);
}

TEST_CASE("distgraph serve refuses TLS flags that contradict each other, naming them",
          "[tools][tls]") {
  REQUIRE_CLI();
  distgraph::test::TempDir tmp;
  const auto ip = tmp.path() / "ip_config.txt";
  std::ofstream(ip) << "127.0.0.1 30050\n";
  const std::vector<std::string> base = {"serve",
                                         "--ip-config",
                                         ip.string(),
                                         "--part-config",
                                         (tmp.path() / "g.json").string(),
                                         "--machine",
                                         "0"};
  auto with = [&](std::vector<std::string> extra) {
    auto argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_cli(argv);
  };
  const RunResult both = with({"--no-tls", "--tls-cert", "c.pem"});
  INFO(describe(both));
  CHECK(both.exit_code == 2);
  CHECK(both.err.find("--no-tls with TLS certificates") != std::string::npos);
  const RunResult alone = with({"--tls-cert", "c.pem"});
  INFO(describe(alone));
  CHECK(alone.exit_code == 2);
  CHECK(alone.err.find("needs all three") != std::string::npos);
  CHECK(alone.err.find("--tls-cert, --tls-key, --tls-ca") != std::string::npos);
  CHECK(alone.out.find("listening") == std::string::npos);
}

TEST_CASE("distgraph info describes the built-in SBM graph", "[tools]") {
  REQUIRE_CLI();
  const RunResult r = run_cli({"info", "--sbm-nodes", "2000"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("nodes        2000\n") != std::string::npos);
  CHECK(r.out.find("edges        ") != std::string::npos);
  CHECK(r.out.find("features") != std::string::npos);
}

TEST_CASE("distgraph info on the cora folder shows its 2708 nodes", "[tools][data]") {
  REQUIRE_CLI();
  DISTGRAPH_REQUIRE_DATASET(cora, "cora");
  const RunResult r = run_cli({"info", cora.string()});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("nodes        2708\n") != std::string::npos);
  CHECK(r.out.find("edges        10556") != std::string::npos);
}

TEST_CASE("distgraph info --json prints one JSON object with the statistics", "[tools]") {
  REQUIRE_CLI();
  const RunResult r = run_cli({"info", "--json", "--sbm-nodes", "1500", "--sbm-classes", "5"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  REQUIRE(j.is_object());
  for (const char* key : {"name", "num_nodes", "num_edges", "feat_shape", "num_classes",
                          "class_counts", "split", "in_degree", "load_s"})
    CHECK(j.contains(key));
  CHECK(j["num_nodes"] == 1500);
  CHECK(j["num_classes"] == 5);
  CHECK(j["num_edges"].get<std::int64_t>() > 0);
  CHECK(j["class_counts"].size() == 5);
  CHECK(j["in_degree"].contains("log2_histogram"));
}

TEST_CASE("distgraph partition splits cora and its JSON summary accounts for every node",
          "[tools][data]") {
  REQUIRE_CLI();
  DISTGRAPH_REQUIRE_DATASET(cora, "cora");
  distgraph::test::TempDir tmp;
  const RunResult r = run_cli({"partition", "--input", cora.string(), "--parts", "2", "--out",
                               tmp.path().string(), "--json"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(fs::is_regular_file(tmp / "cora.json"));
  CHECK(fs::is_directory(tmp / "part0"));
  CHECK(fs::is_directory(tmp / "part1"));
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  CHECK(j["num_parts"] == 2);
  CHECK(j["num_nodes"] == 2708);
  CHECK(j["method"] == "metis");
  REQUIRE(j["parts"].size() == 2);
  std::int64_t nodes = 0, edges = 0;
  for (const auto& p : j["parts"]) {
    nodes += p["nodes"].get<std::int64_t>();
    edges += p["edges"].get<std::int64_t>();
  }
  CHECK(nodes == 2708);
  CHECK(edges == j["num_edges"].get<std::int64_t>());
  // The config on disk agrees with the summary.
  std::ifstream in(tmp / "cora.json");
  const nlohmann::json config = nlohmann::json::parse(in);
  CHECK(config["num_nodes"] == 2708);
  CHECK(config["num_parts"] == 2);
}

TEST_CASE("distgraph partition --method random --seed 7 writes identical files twice", "[tools]") {
  REQUIRE_CLI();
  distgraph::test::TempDir a, b;
  for (const auto* dir : {&a, &b}) {
    const RunResult r = run_cli({"partition", "--input", "sbm", "--parts", "3", "--method",
                                 "random", "--seed", "7", "--out", dir->path().string()});
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
  }
  const auto fa = read_tree(a.path()), fb = read_tree(b.path());
  REQUIRE(fa.size() > 10);
  REQUIRE(fa.size() == fb.size());
  for (const auto& [name, bytes] : fa) {
    INFO(name);
    REQUIRE(fb.count(name) == 1);
    CHECK(fb.at(name) == bytes);
  }
}

TEST_CASE("distgraph partition --feat-dtype bf16 records bfloat16 features in the config",
          "[tools]") {
  REQUIRE_CLI();
  distgraph::test::TempDir tmp;
  const RunResult r = run_cli({"partition", "--input", "sbm", "--parts", "2", "--name", "g",
                               "--feat-dtype", "bf16", "--out", tmp.path().string()});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  nlohmann::json j;
  std::ifstream(tmp / "g.json") >> j;
  CHECK(j["distgraph"]["node_feats"]["feat"]["dtype"] == "bfloat16");
  CHECK(j["distgraph"]["node_feats"]["label"]["dtype"] == "int64");
}

TEST_CASE("distgraph partition works on a generated R-MAT graph", "[tools]") {
  REQUIRE_CLI();
  distgraph::test::TempDir tmp;
  const RunResult r = run_cli(
      {"partition", "--input", "rmat:12", "--parts", "4", "--out", tmp.path().string(), "--json"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["num_nodes"] == 4096);
  CHECK(j["num_parts"] == 4);
  std::int64_t nodes = 0;
  for (const auto& p : j["parts"]) nodes += p["nodes"].get<std::int64_t>();
  CHECK(nodes == 4096);
  CHECK(fs::is_regular_file(tmp / (j["graph_name"].get<std::string>() + ".json")));
}

TEST_CASE("distgraph partition rejects bad arguments with exit 2 and one line naming the flag",
          "[tools]") {
  REQUIRE_CLI();
  distgraph::test::TempDir tmp;
  const std::string out = tmp.path().string();
  SECTION("unknown flag") {
    check_one_line_error(run_cli({"partition", "--input", "sbm", "--bogus", "--out", out}),
                         "--bogus");
  }
  SECTION("--parts 0") {
    check_one_line_error(run_cli({"partition", "--input", "sbm", "--parts", "0", "--out", out}),
                         "--parts");
  }
  SECTION("missing --input") {
    check_one_line_error(run_cli({"partition", "--parts", "2", "--out", out}), "--input");
  }
  SECTION("--method foo") {
    check_one_line_error(run_cli({"partition", "--input", "sbm", "--method", "foo", "--out", out}),
                         "--method");
  }
  SECTION("--feat-dtype f8") {
    check_one_line_error(
        run_cli({"partition", "--input", "sbm", "--feat-dtype", "f8", "--out", out}),
        "--feat-dtype");
  }
  // Nothing was written for any of them.
  CHECK(fs::is_empty(tmp.path()));
}

TEST_CASE("distgraph info keeps its one-line usage errors, word for word", "[tools]") {
  REQUIRE_CLI();
  const auto error_of = [](const std::vector<std::string>& args) {
    const RunResult r = run_cli(args);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    return r.err;
  };
  CHECK(error_of({"info", "--sbm-nodes"}) ==
        "distgraph info: option '--sbm-nodes' needs a value\n");
  CHECK(error_of({"info", "--json=1"}) == "distgraph info: flag '--json' takes no value\n");
  CHECK(error_of({"info", "--json=true"}) == "distgraph info: flag '--json' takes no value\n");
  // Not the next argument taken for the value.
  CHECK(error_of({"info", "--sbm-nodes=", "--json"}) ==
        "distgraph info: option '--sbm-nodes' needs a value\n");
  CHECK(error_of({"info", "a", "b"}) == "distgraph info: unexpected argument 'b'\n");
  CHECK(error_of({"info", "--bogus=3"}) ==
        "distgraph info: unknown option '--bogus' (see --help)\n");
  CHECK(error_of({"info", "--sbm-nodes=many"}) ==
        "distgraph info: --sbm-nodes 'many' is not an integer\n");
  CHECK(error_of({"info", "--sbm-nodes", "1"}) ==
        "distgraph info: --sbm-nodes 1 out of range; expected [2, 4294967296]\n");
}

TEST_CASE("distgraph info takes --x=v, the last of a repeated option and lists --config",
          "[tools]") {
  REQUIRE_CLI();
  const RunResult r = run_cli({"info", "--json", "--sbm-nodes", "99", "--sbm-nodes=1500"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["num_nodes"] == 1500);
  const RunResult help = run_cli({"info", "--sbm-nodes", "7", "--help"});
  INFO(describe(help));
  CHECK(help.exit_code == 0);
  CHECK(help.out.rfind("usage: distgraph info", 0) == 0);
  CHECK(help.out.find("  --sbm-nodes VALUE") != std::string::npos);
  CHECK(help.out.find("  --json ") != std::string::npos);
  CHECK(help.out.find("  --config FILE") != std::string::npos);
}

TEST_CASE("distgraph info --config reads options from a TOML file, the command line wins",
          "[tools]") {
  REQUIRE_CLI();
  distgraph::test::TempDir tmp;
  const std::string file = write_file(tmp / "info.toml",
                                      "# the built-in graph, smaller\n"
                                      "json = true\n"
                                      "sbm-nodes = 1500\n"
                                      "sbm-classes = \"5\"  # quoted or not\n")
                               .string();
  const RunResult r = run_cli({"info", "--config", file});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  CHECK(j["num_nodes"] == 1500);
  CHECK(j["num_classes"] == 5);
  const RunResult over = run_cli({"info", "--sbm-nodes", "1200", "--config=" + file});
  INFO(describe(over));
  REQUIRE(over.exit_code == 0);
  CHECK(nlohmann::json::parse(over.out)["num_nodes"] == 1200);
  // A flag set to false is off: the table, not JSON.
  write_file(tmp / "table.toml", "json = false\nsbm-nodes = 2000\n");
  const RunResult table = run_cli({"info", "--config", (tmp / "table.toml").string()});
  INFO(describe(table));
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("nodes        2000\n") != std::string::npos);
}

TEST_CASE("distgraph partition --config writes the partitions the file asks for", "[tools]") {
  REQUIRE_CLI();
  distgraph::test::TempDir tmp;
  const fs::path out = tmp / "parts";
  const fs::path file = write_file(tmp / "run.toml",
                                   "input = \"sbm\"\n"
                                   "parts = 2\n"
                                   "method = \"random\"\n"
                                   "seed = 7\n"
                                   "json = true\n"
                                   "out = \"" +
                                       out.string() + "\"\n");
  const RunResult r = run_cli({"partition", "--config", file.string(), "--parts", "3"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  CHECK(j["num_parts"] == 3);
  CHECK(j["method"] == "random");
  CHECK(fs::is_directory(out / "part2"));
}

TEST_CASE("distgraph partition --config with a bad file is one line naming the file", "[tools]") {
  REQUIRE_CLI();
  distgraph::test::TempDir tmp;
  const std::string out = (tmp / "out").string();
  const auto check_file = [&](const std::string& name, const std::string& text,
                              const std::string& needle) {
    const fs::path file = tmp / name;
    if (!text.empty()) write_file(file, text);
    const RunResult r =
        run_cli({"partition", "--input", "sbm", "--config", file.string(), "--out", out});
    check_one_line_error(r, file.string());
    CHECK(r.err.find(needle) != std::string::npos);
  };
  SECTION("missing") { check_file("missing.toml", "", "cannot read the file"); }
  SECTION("malformed") {
    check_file("malformed.toml", "parts = 2\nthis is not toml\n", "'this is not toml'");
  }
  SECTION("unknown key") { check_file("unknown.toml", "bogus = 1\n", "unknown option 'bogus'"); }
  SECTION("a section") { check_file("section.toml", "[partition]\nparts = 2\n", "[partition]"); }
  SECTION("a quoted value cut at '#'") {
    check_file("hash.toml", "name = \"run#3\"\n", "quoted value cut short");
  }
  SECTION("a flag neither true nor false") {
    check_file("flag.toml", "json = maybe\n", "flag 'json' = 'maybe'");
  }
  SECTION("a bad value keeps the option's wording") {
    const fs::path file = write_file(tmp / "parts.toml", "parts = 0\n");
    check_one_line_error(
        run_cli({"partition", "--input", "sbm", "--config", file.string(), "--out", out}),
        "--parts 0 out of range");
  }
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("distgraph partition on a missing input folder exits 1 naming the path", "[tools]") {
  REQUIRE_CLI();
  distgraph::test::TempDir tmp;
  const fs::path missing = tmp / "no-such-dataset";
  const RunResult r =
      run_cli({"partition", "--input", missing.string(), "--out", (tmp / "out").string()});
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(missing.string()) != std::string::npos);
  CHECK(r.err.find('\n') == r.err.size() - 1);
  CHECK_FALSE(fs::exists(tmp / "out" / "no-such-dataset.json"));
}

}  // namespace test_tools_cli

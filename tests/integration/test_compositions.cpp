// Users' compositions in real jobs: the custom_sampler and custom_book examples as their
// own servers (distgraph launch --server-program) on a 2-machine loopback cluster, their
// results equal to the standalone run's, and the errors for servers of another composition
// or a server program that is missing or exits at once.
#include <catch2/catch.hpp>
#include <regex>
#include <string>

#include "distgraph/io/synthetic.hpp"
#include "distgraph/partition/partition_dataset.hpp"
#include "support/child_process.hpp"
#include "support/free_port.hpp"
#include "support/processes.hpp"
#include "support/temp_dir.hpp"

namespace test_integration_compositions {

using namespace distgraph;
using namespace std::chrono_literals;
using distgraph::test::ChildProcess;
using distgraph::test::none_left;
using distgraph::test::TempDir;

#if defined(DISTGRAPH_CLI) && defined(DISTGRAPH_EXAMPLE_CUSTOM_SAMPLER) && \
    defined(DISTGRAPH_EXAMPLE_CUSTOM_BOOK)

namespace {

struct Cluster {
  TempDir tmp;
  std::filesystem::path config, ip_path;
  explicit Cluster(bool relabel = true, const std::string& name = "comp") {
    SbmOptions o;
    o.num_nodes = 1200;
    o.num_classes = 3;
    o.avg_degree = 6;
    o.feat_dim = 8;
    o.seed = 11;
    partition_dataset(sbm_dataset(o), name, 2, tmp.path(),
                      {.method = PartMethod::metis, .relabel = relabel, .seed = 1});
    config = tmp / (name + ".json");
    ip_path = tmp / "ip_config.txt";
    distgraph::test::write_loopback_ip_config(ip_path, 2, 2).release();
  }
  std::vector<std::string> launch(const std::string& server_program, int trainers,
                                  std::vector<std::string> program) const {
    std::vector<std::string> a{
        DISTGRAPH_CLI,   "launch",        "--ip-config", ip_path.string(),
        "--part-config", config.string(), "--trainers",  std::to_string(trainers),
        "--grace-ms",    "2000"};
    if (!server_program.empty()) a.insert(a.end(), {"--server-program", server_program});
    a.push_back("--");
    a.insert(a.end(), program.begin(), program.end());
    return a;
  }
};

std::string find(const std::string& output, const std::string& pattern) {
  std::smatch m;
  const std::regex re(pattern);
  return std::regex_search(output, m, re) ? m[1].str() : "";
}

/// Runs `cmd` to the end (bounded), returning its output; fails the test on a non-zero exit.
std::string run_ok(const std::vector<std::string>& cmd, std::chrono::seconds limit = 120s) {
  ChildProcess p(cmd);
  const auto st = p.wait(limit);
  INFO(p.output());
  REQUIRE(st.has_value());
  REQUIRE(WIFEXITED(*st));
  REQUIRE(WEXITSTATUS(*st) == 0);
  return p.output();
}

}  // namespace

TEST_CASE(
    "custom_sampler: a user's sampler runs in its own servers under launch "
    "--server-program with the standalone run's picks",
    "[integration][net][launch][custom_sampler]") {
  Cluster c;
  const auto alone = run_ok({DISTGRAPH_EXAMPLE_CUSTOM_SAMPLER, c.config.string()});
  const auto expected = find(alone, "digest ([0-9]+), rule holds");
  REQUIRE(!expected.empty());
  const auto out = run_ok(c.launch(DISTGRAPH_EXAMPLE_CUSTOM_SAMPLER, 2,
                                   {DISTGRAPH_EXAMPLE_CUSTOM_SAMPLER, c.config.string()}));
  CHECK_THAT(out, Catch::Contains("[trainer 0.0] trainers 4"));
  CHECK(find(out, "digest ([0-9]+), rule holds") == expected);
  // The user's servers say where they listen, as `distgraph serve` does.
  for (const char* s : {"0.0", "1.0"})
    CHECK_THAT(out, Catch::Contains(std::string("server ") + s + " listening on 127.0.0.1 port"));
  CHECK(none_left(c.tmp.path().string(), 10s));
}

TEST_CASE(
    "custom_sampler: servers of the default composition refuse the trainer at start-up, "
    "naming the missing sampler",
    "[integration][net][launch][custom_sampler]") {
  Cluster c;
  ChildProcess p(c.launch("", 1, {DISTGRAPH_EXAMPLE_CUSTOM_SAMPLER, c.config.string()}));
  const auto st = p.wait(120s);
  INFO(p.output());
  REQUIRE(st.has_value());
  CHECK(WEXITSTATUS(*st) != 0);
  CHECK_THAT(p.output(), Catch::Contains("lacks 'top_weight'"));
  CHECK(none_left(c.tmp.path().string(), 10s));
}

TEST_CASE(
    "custom_book: a user's partition book routes a distributed run, relabeled or not, "
    "with the standalone checksum",
    "[integration][net][launch][custom_book]") {
  Cluster relabeled(true), basic(false);
  const auto alone = run_ok({DISTGRAPH_EXAMPLE_CUSTOM_BOOK, relabeled.config.string()});
  const auto expected = find(alone, "checksum (-?[0-9]+)");
  REQUIRE(!expected.empty());
  CHECK_THAT(alone, Catch::Contains("book counting"));
  for (const Cluster* c : {&relabeled, &basic}) {
    const auto out = run_ok(c->launch(DISTGRAPH_EXAMPLE_CUSTOM_BOOK, 2,
                                      {DISTGRAPH_EXAMPLE_CUSTOM_BOOK, c->config.string()}));
    CHECK_THAT(out, Catch::Contains("[trainer 0.0] trainers 4, book counting"));
    CHECK(find(out, "checksum (-?[0-9]+)") == expected);
    CHECK(none_left(c->tmp.path().string(), 10s));
  }
}

TEST_CASE("launch names a server program that does not exist or exits at once",
          "[integration][net][launch][custom_book]") {
  Cluster c;
  {
    ChildProcess p(c.launch((c.tmp / "no-such-program").string(), 1, {"/bin/true"}));
    const auto st = p.wait(30s);
    REQUIRE(st.has_value());
    CHECK(WEXITSTATUS(*st) != 0);
    CHECK_THAT(p.output(),
               Catch::Contains("no-such-program") && Catch::Contains("is not an executable file"));
  }
  {
    ChildProcess p(c.launch("/bin/false", 1, {"/bin/sleep", "60"}));
    const auto st = p.wait(60s);
    INFO(p.output());
    REQUIRE(st.has_value());
    CHECK(WEXITSTATUS(*st) != 0);
    // Every server runs /bin/false; whichever exit the launcher reaps first is the one it names.
    CHECK(find(p.output(), "server ([0-9]+)\\.0 \\(pid [0-9]+\\) exited with status 1") != "");
    CHECK(none_left(c.tmp.path().string(), 10s));
  }
}

#else
TEST_CASE("composition tests need the distgraph program and the examples", "[integration]") {
  WARN("SKIPPED: built without the distgraph program or the custom examples");
}
#endif

}  // namespace test_integration_compositions

// The trace timeline: spans and async spans from several threads written as trace-event
// JSON that parses, nests, and merges; nothing recorded while tracing is off.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "distgraph/core/trace.hpp"
#include "support/temp_dir.hpp"

namespace test_core_trace {

using namespace distgraph;
namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

/// The events of `trace` named `name`.
std::vector<nlohmann::json> named(const nlohmann::json& trace, const std::string& name) {
  std::vector<nlohmann::json> out;
  for (const auto& e : trace["traceEvents"])
    if (e["name"] == name) out.push_back(e);
  return out;
}

}  // namespace

// One test case records, writes and checks: tracing is per process, and each Catch test
// case runs in a process of its own under ctest.
TEST_CASE(
    "a trace records nested spans and requests in flight from every thread, as "
    "trace-event JSON that parses and merges",
    "[core][trace]") {
  const test::TempDir tmp;
  {
    trace::Span before("before");  // tracing is off: nothing is recorded
  }
  CHECK_FALSE(trace::enabled());
  start_trace({.file = tmp / "one.json", .process_name = "trainer 0"});
  REQUIRE(trace::enabled());
  auto work = [](int k) {
    trace::name_thread(k == 0 ? "main" : "worker");
    trace::Span outer("batch");
    outer.arg("index", k).arg("rows", 10 * k);
    {
      trace::Span inner("sample", "loader");
      const auto t0 = trace::now_ns();
      trace::async_span("pull → partition 1", "rpc", t0, {{"rows", 5}});
    }
    trace::Span("fetch", "loader");  // a temporary: an empty span
  };
  std::thread t(work, 1);
  work(0);
  t.join();
  write_trace();
  write_trace();  // once only: the second call does nothing

  const nlohmann::json j = read_json(tmp / "one.json");
  CHECK(named(j, "before").empty());
  const auto batches = named(j, "batch");
  REQUIRE(batches.size() == 2);
  CHECK(batches[0]["tid"] != batches[1]["tid"]);  // each thread its own track
  for (const auto& b : batches) {
    CHECK(b["ph"] == "X");
    CHECK(b["args"]["rows"] == 10 * b["args"]["index"].get<int>());
  }
  // Every sample span lies inside its thread's batch span.
  for (const auto& s : named(j, "sample")) {
    const auto& b = batches[0]["tid"] == s["tid"] ? batches[0] : batches[1];
    CHECK(s["cat"] == "loader");
    CHECK(s["ts"].get<double>() >= b["ts"].get<double>());
    CHECK(s["ts"].get<double>() + s["dur"].get<double>() <=
          b["ts"].get<double>() + b["dur"].get<double>() + 1e-3);
  }
  // Requests in flight: a begin and an end with one id each.
  const auto rpc = named(j, "pull → partition 1");
  REQUIRE(rpc.size() == 4);
  std::map<std::int64_t, std::string> phases;
  for (const auto& e : rpc) phases[e["id"].get<std::int64_t>()] += e["ph"].get<std::string>();
  CHECK(phases.size() == 2);
  for (const auto& [id, ph] : phases) CHECK(ph == "be");
  // Process and thread names.
  const auto process = named(j, "process_name");
  REQUIRE(process.size() == 1);
  CHECK(process[0]["args"]["name"] == "trainer 0");
  CHECK(named(j, "thread_name").size() == 2);

  // Two processes' files merge into one timeline; anything else is refused.
  fs::copy_file(tmp / "one.json", tmp / "two.json");
  trace::merge_traces({tmp / "one.json", tmp / "two.json"}, tmp / "all.json");
  const nlohmann::json all = read_json(tmp / "all.json");
  CHECK(all["traceEvents"].size() == 2 * j["traceEvents"].size());
  std::ofstream(tmp / "bad.json") << "{\"traceEvents\":[\n{\"ph\":\"X\"}\n";
  CHECK_THROWS_AS(trace::merge_traces({tmp / "bad.json"}, tmp / "x.json"), FormatError);
  std::ofstream(tmp / "other.json") << "[]\n";
  CHECK_THROWS_AS(trace::merge_traces({tmp / "other.json"}, tmp / "x.json"), FormatError);
}

}  // namespace test_core_trace
